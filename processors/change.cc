#include "processors/change.h"

#include <boost/json.hpp>

#include "util/json_parse.h"

namespace feedd {

Result<Change> ParseChange(std::string_view envelope_json) {
  Result<boost::json::value> v = ParseJson(envelope_json);
  boost::json::object* o = v.ok() ? v->if_object() : nullptr;
  auto bad = [](const char* what) {
    return Status(ErrorCode::kInvalidRequest, std::string("bad change envelope: ") + what);
  };
  if (!v.ok()) return bad(v.status().message().c_str());
  if (o == nullptr) return bad("not a JSON object");
  Change c;
  const auto* lsn = o->if_contains("lsn");
  const auto* op = o->if_contains("op");
  const auto* container = o->if_contains("container");
  const auto* pk = o->if_contains("partitionKey");
  const auto* id = o->if_contains("id");
  if (lsn == nullptr || !lsn->is_number()) return bad("lsn");
  if (op == nullptr || !op->is_string()) return bad("op");
  if (container == nullptr || !container->is_string()) return bad("container");
  if (pk == nullptr || !pk->is_string() || id == nullptr || !id->is_string()) return bad("key");
  c.lsn = lsn->to_number<uint64_t>();
  std::string_view op_name = op->get_string();
  if (op_name == "create")
    c.op = ChangeOp::kCreate;
  else if (op_name == "replace")
    c.op = ChangeOp::kReplace;
  else if (op_name == "delete")
    c.op = ChangeOp::kDelete;
  else
    return bad("op");
  c.container = std::string(container->get_string());
  c.partition_key = std::string(pk->get_string());
  c.id = std::string(id->get_string());
  if (const auto* ts = o->if_contains("ts"); ts && ts->is_number())
    c.ts_ms = ts->to_number<uint64_t>();
  // The images are moved out of the parsed envelope (same memory resource),
  // not copied: a processor parses every change of its sources.
  if (auto* b = o->if_contains("before"); b && b->is_object()) {
    c.before = std::make_shared<const boost::json::object>(std::move(b->get_object()));
  }
  if (auto* a = o->if_contains("after"); a && a->is_object()) {
    c.after = std::make_shared<const boost::json::object>(std::move(a->get_object()));
  }
  return c;
}

ChangeRecord ToChangeRecord(const Change& change) {
  auto image = [](const std::shared_ptr<const boost::json::object>& o) {
    return o ? boost::json::value(*o) : boost::json::value(nullptr);
  };
  ChangeRecord record;
  record.lsn = change.lsn;
  record.ts_ms = change.ts_ms;
  record.op = change.op;
  record.container = change.container;
  record.partition_key = change.partition_key;
  record.id = change.id;
  record.envelope_json = boost::json::serialize(boost::json::object{
      {"lsn", change.lsn},
      {"op", ChangeOpName(change.op)},
      {"container", change.container},
      {"partitionKey", change.partition_key},
      {"id", change.id},
      {"ts", change.ts_ms},
      {"before", image(change.before)},
      {"after", image(change.after)},
  });
  return record;
}

}  // namespace feedd
