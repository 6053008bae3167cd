#include "storage/derived_items.h"

#include <boost/json.hpp>
#include <charconv>
#include <string>
#include <vector>

#include "storage/json_scan.h"
#include "util/json_parse.h"

namespace feedd {
namespace {

// The text of a top-level property of a stored or prepared item, if present.
std::optional<std::string_view> Property(std::string_view item_json, const char* name) {
  const std::vector<std::string> path = {name};
  std::string_view value;
  if (FindJsonValue(item_json, path, &value) != JsonScan::kFound) return std::nullopt;
  return value;
}

bool SameJson(std::string_view a, std::string_view b) {
  if (a == b) return true;
  Result<boost::json::value> va = ParseJson(a);
  Result<boost::json::value> vb = ParseJson(b);
  return va.ok() && vb.ok() && *va == *vb;
}

// The item a `_source` value names, as container/partitionKey/id; the
// value's JSON text when it is not such an object.
std::string SourceName(std::string_view source_json) {
  Result<boost::json::value> source = ParseJson(source_json);
  const boost::json::object* o = source.ok() ? source->if_object() : nullptr;
  std::string_view parts[3];
  const char* members[3] = {"container", "partitionKey", "id"};
  for (int i = 0; i < 3; ++i) {
    const boost::json::value* v = o != nullptr ? o->if_contains(members[i]) : nullptr;
    if (v == nullptr || !v->is_string()) return std::string(source_json);
    parts[i] = v->get_string();
  }
  return ItemName(parts[0], parts[1], parts[2]);
}

}  // namespace

std::string ItemName(std::string_view container, std::string_view partition_key,
                     std::string_view id) {
  std::string name(container);
  name += '/';
  name += partition_key;
  name += '/';
  name += id;
  return name;
}

uint64_t SourceLsnOf(std::string_view item_json) {
  std::optional<std::string_view> text = Property(item_json, "_sourceLsn");
  if (!text) return 0;
  uint64_t lsn = 0;
  const char* end = text->data() + text->size();
  auto [stop, error] = std::from_chars(text->data(), end, lsn);
  return error == std::errc() && stop == end ? lsn : 0;
}

Status Collision(std::string_view copy_of, std::string_view target, std::string_view taken_by) {
  return Status(ErrorCode::kDerivedItem, "collision: the copy of " + std::string(copy_of) +
                                             " would overwrite " + std::string(target) +
                                             ", which is " + std::string(taken_by) + "; refused");
}

Status MayWrite(WriteOrigin origin, const ContainerSpec& container, std::string_view partition_key,
                std::string_view id, std::optional<std::string_view> new_json,
                std::optional<std::string_view> stored_json) {
  auto where = [&] { return "item '" + std::string(id) + "' of '" + container.name + "'"; };
  switch (origin) {
    case WriteOrigin::kOverride:
      return Status::Ok();
    case WriteOrigin::kClient: {
      if (container.writers == ContainerWriters::kProcessors) {
        return Status(ErrorCode::kDerivedContainer,
                      "container '" + container.name +
                          "' is filled by processors only; clients cannot write into it");
      }
      if (!stored_json) return Status::Ok();
      if (auto source = Property(*stored_json, kSourceField)) {
        return Status(ErrorCode::kDerivedItem, where() + " is derived by a processor from " +
                                                   std::string(*source) +
                                                   "; clients cannot write or delete it");
      }
      return Status::Ok();
    }
    case WriteOrigin::kProcessor: {
      if (!stored_json || !new_json) return Status::Ok();
      auto source = Property(*new_json, kSourceField);
      if (!source) return Status::Ok();
      auto stored_source = Property(*stored_json, kSourceField);
      if (stored_source ? SameJson(*source, *stored_source)
                        : Property(*stored_json, "_sourceLsn").has_value()) {
        return Status::Ok();
      }
      return Collision(SourceName(*source), ItemName(container.name, partition_key, id),
                       stored_source ? "a copy of " + SourceName(*stored_source)
                                     : std::string("an item a client wrote"));
    }
  }
  return Status::Ok();
}

}  // namespace feedd
