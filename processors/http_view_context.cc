#include "processors/http_view_context.h"

#include <boost/json.hpp>

#include "processors/kinds/view_helpers.h"
#include "storage/write_request.h"
#include "util/json_parse.h"

namespace feedd {
namespace {

std::string ItemPath(const std::string& container, const std::string& pk, const std::string& id) {
  return "/v1/containers/" + PercentEncodeSegment(container) + "/items/" +
         PercentEncodeSegment(pk) + "/" + PercentEncodeSegment(id);
}

Result<boost::json::value> ParseBody(const HttpReply& reply, const std::string& what) {
  Result<boost::json::value> body = ParseJson(reply.body);
  if (!body.ok()) {
    return Status(ErrorCode::kInternal,
                  what + ": the daemon answered invalid JSON: " + body.status().message());
  }
  return body;
}

boost::json::object QueryJson(const QuerySpec& spec) {
  boost::json::object query;
  if (spec.partition_key) query["partitionKey"] = *spec.partition_key;
  if (!spec.filters.empty()) {
    boost::json::object filter;
    for (const auto& f : spec.filters) filter[f.path.text()] = f.value;
    query["filter"] = std::move(filter);
  }
  if (spec.order_by) query["orderBy"] = spec.order_by->text();
  query["descending"] = spec.descending;
  query["limit"] = spec.limit;
  if (!spec.continuation.empty()) query["continuation"] = spec.continuation;
  return query;
}

}  // namespace

const ContainerSpec* HttpViewContext::Container(const std::string& name) const {
  for (const auto& spec : *containers_) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

Result<std::optional<boost::json::object>> HttpViewContext::Read(const std::string& container,
                                                                 const std::string& partition_key,
                                                                 const std::string& id) {
  auto reply = client_->Send("GET", ItemPath(container, partition_key, id));
  if (!reply.ok()) return reply.status();
  if (reply->status == 404) {
    Status s = StatusOfReply(*reply);
    if (s.code() == ErrorCode::kNotFound) return std::optional<boost::json::object>();
    return s;  // container_not_found and the like are errors
  }
  if (Status s = StatusOfReply(*reply); !s.ok()) return s;
  auto body = ParseBody(*reply, "GET " + container + "/" + id);
  if (!body.ok()) return body.status();
  if (!body->is_object()) return Status(ErrorCode::kInternal, "an item that is not an object");
  return std::optional<boost::json::object>(std::move(body->as_object()));
}

Result<ViewQueryPage> HttpViewContext::Query(const std::string& container, const QuerySpec& spec) {
  auto reply = client_->Send("POST", "/v1/containers/" + PercentEncodeSegment(container) + "/query",
                             boost::json::serialize(QueryJson(spec)));
  if (!reply.ok()) return reply.status();
  if (Status s = StatusOfReply(*reply); !s.ok()) return s;
  auto body = ParseBody(*reply, "query of " + container);
  if (!body.ok()) return body.status();
  const boost::json::object* page = body->if_object();
  const boost::json::value* items = page ? page->if_contains("items") : nullptr;
  if (items == nullptr || !items->is_array()) {
    return Status(ErrorCode::kInternal, "a query answer without \"items\"");
  }
  ViewQueryPage out;
  for (auto& item : items->as_array()) {
    if (item.is_object()) out.items.push_back(item.as_object());
  }
  const boost::json::value* continuation = page->if_contains("continuation");
  if (continuation != nullptr && continuation->is_string()) {
    out.continuation = std::string(continuation->as_string());
  }
  return out;
}

Status HttpViewContext::Upsert(const std::string& container, boost::json::object item) {
  const ContainerSpec* spec = Container(container);
  if (spec == nullptr) return Status(ErrorCode::kContainerNotFound, "no container " + container);
  auto pointer = JsonPointer::Parse(spec->partition_key_path);
  if (!pointer.ok()) return pointer.status();
  const boost::json::value* pk = pointer->Find(item);
  if (pk == nullptr || !pk->is_string()) {
    return Status(ErrorCode::kInvalidPartitionKey,
                  "a derived item of " + container + " without a string partition key");
  }
  const std::string partition_key(pk->as_string());
  boost::json::object op{{"op", "upsert"}};
  if (std::optional<uint64_t> source_lsn = views::SourceLsnCondition(item)) {
    op["sourceLsn"] = *source_lsn;
  }
  for (const char* store_property : {"_etag", "_lsn", "_ts"}) item.erase(store_property);
  op["body"] = std::move(item);
  return Stage(container, partition_key, std::move(op));
}

Status HttpViewContext::UpsertIfNewerSource(const std::string& container,
                                            boost::json::object item) {
  if (Result<uint64_t> source_lsn = views::RequiredSourceLsn(container, item); !source_lsn.ok()) {
    return source_lsn.status();
  }
  return Upsert(container, std::move(item));
}

Status HttpViewContext::SetField(const std::string& container, const std::string& partition_key,
                                 const std::string& id, const JsonPointer& field,
                                 boost::json::value value) {
  boost::json::array patch{
      boost::json::object{{"op", "set"}, {"path", field.text()}, {"value", std::move(value)}}};
  return Stage(container, partition_key,
               {{"op", "patch"},
                {"id", id},
                {"ifExists", true},
                {"sourceLsn", change_lsn_},
                {"operations", std::move(patch)}});
}

Status HttpViewContext::Delete(const std::string& container, const std::string& partition_key,
                               const std::string& id) {
  return Stage(container, partition_key,
               {{"op", "delete"}, {"id", id}, {"ifExists", true}, {"sourceLsn", change_lsn_}});
}

Status HttpViewContext::Stage(const std::string& container, const std::string& pk,
                              boost::json::object op) {
  staged_[{container, pk}].push_back(std::move(op));
  return Status::Ok();
}

Status HttpViewContext::Commit() {
  auto staged = std::move(staged_);
  staged_.clear();
  for (auto& [where, ops] : staged) {
    const auto& [container, pk] = where;
    const std::string path = "/v1/containers/" + PercentEncodeSegment(container) + "/partitions/" +
                             PercentEncodeSegment(pk) + "/batch";
    for (size_t first = 0; first < ops.size(); first += kMaxBatchOperations) {
      boost::json::array chunk;
      for (size_t i = first; i < ops.size() && i < first + kMaxBatchOperations; ++i) {
        chunk.push_back(ops[i]);
      }
      auto reply = client_->Send(
          "POST", path, boost::json::serialize(boost::json::object{{"operations", chunk}}));
      if (!reply.ok()) return reply.status();
      if (Status s = StatusOfReply(*reply); !s.ok()) {
        return Status(s.code(), "batch on " + container + "/" + pk + ": " + s.message());
      }
      auto body = ParseBody(*reply, "batch on " + container);
      if (!body.ok()) return body.status();
      const boost::json::value* results =
          body->is_object() ? body->as_object().if_contains("results") : nullptr;
      if (results == nullptr || !results->is_array()) {
        return Status(ErrorCode::kInternal, "a batch answer without \"results\"");
      }
      for (const auto& r : results->as_array()) {
        const boost::json::value* status =
            r.is_object() ? r.as_object().if_contains("status") : nullptr;
        if (status != nullptr && status->is_int64() && status->as_int64() < 300)
          ++writes_committed_;
      }
    }
  }
  return Status::Ok();
}

Result<std::vector<ContainerSpec>> FetchContainers(HttpClient& client) {
  auto reply = client.Send("GET", "/v1/containers");
  if (!reply.ok()) return reply.status();
  if (Status s = StatusOfReply(*reply); !s.ok()) return s;
  auto body = ParseBody(*reply, "GET /v1/containers");
  if (!body.ok()) return body.status();
  std::vector<ContainerSpec> out;
  const boost::json::value* list =
      body->is_object() ? body->as_object().if_contains("containers") : nullptr;
  if (list == nullptr || !list->is_array()) {
    return Status(ErrorCode::kInternal, "GET /v1/containers: no \"containers\" list");
  }
  for (const auto& c : list->as_array()) {
    const auto* o = c.if_object();
    if (o == nullptr || !o->contains("name") || !o->contains("partitionKey")) continue;
    ContainerSpec spec;
    spec.name = std::string(o->at("name").as_string());
    spec.partition_key_path = std::string(o->at("partitionKey").as_string());
    if (const auto* indexes = o->if_contains("indexes"); indexes && indexes->is_array()) {
      for (const auto& path : indexes->as_array()) {
        if (path.is_string()) spec.index_paths.emplace_back(path.as_string());
      }
    }
    out.push_back(std::move(spec));
  }
  return out;
}

}  // namespace feedd
