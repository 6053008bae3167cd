#include "storage/query.h"

#include <boost/json.hpp>

namespace feedd {
namespace {

Status QueryError(const std::string& what) { return Status(ErrorCode::kInvalidQuery, what); }

// "name" is the top-level field `name`; "/a/b" is a JSON Pointer.
Result<JsonPointer> FieldPath(std::string_view field) {
  if (field.empty()) return QueryError("a field name must not be empty");
  if (field[0] == '/') {
    auto p = JsonPointer::Parse(field);
    if (!p.ok()) return QueryError(p.status().message());
    return p;
  }
  std::string escaped = "/";
  for (char c : field) {
    if (c == '~')
      escaped += "~0";
    else if (c == '/')
      escaped += "~1";
    else
      escaped += c;
  }
  return JsonPointer::Parse(escaped);
}

}  // namespace

Result<QuerySpec> ParseQuerySpec(const boost::json::value& body) {
  const auto* obj = body.if_object();
  if (obj == nullptr) return QueryError("the query must be a JSON object");
  QuerySpec spec;
  for (const auto& member : *obj) {
    std::string_view key = member.key();
    const auto& v = member.value();
    if (key == "partitionKey") {
      if (v.is_null()) continue;
      if (!v.is_string()) return QueryError("'partitionKey' must be a string");
      spec.partition_key = std::string(v.get_string());
    } else if (key == "filter") {
      if (v.is_null()) continue;
      if (!v.is_object()) return QueryError("'filter' must be an object");
      for (const auto& f : v.get_object()) {
        if (f.value().is_structured()) {
          return QueryError("filter '" + std::string(f.key()) + "' must be a scalar");
        }
        auto path = FieldPath(f.key());
        if (!path.ok()) return path.status();
        spec.filters.push_back({std::move(*path), f.value()});
      }
    } else if (key == "orderBy") {
      if (v.is_null()) continue;
      if (!v.is_string()) return QueryError("'orderBy' must be a string");
      auto path = FieldPath(v.get_string());
      if (!path.ok()) return path.status();
      spec.order_by = std::move(*path);
    } else if (key == "descending") {
      if (!v.is_bool()) return QueryError("'descending' must be a boolean");
      spec.descending = v.get_bool();
    } else if (key == "limit") {
      if (v.is_null()) continue;
      if (!v.is_int64() || v.get_int64() < 1 ||
          v.get_int64() > static_cast<int64_t>(kMaxQueryLimit)) {
        return QueryError("'limit' must be an integer from 1 to 1000");
      }
      spec.limit = static_cast<size_t>(v.get_int64());
    } else if (key == "continuation") {
      if (v.is_null()) continue;
      if (!v.is_string()) return QueryError("'continuation' must be a string or null");
      spec.continuation = std::string(v.get_string());
    } else {
      return QueryError("unknown query field '" + std::string(key) + "'");
    }
  }
  return spec;
}

std::string CanonicalQueryText(const QuerySpec& spec) {
  boost::json::object key{{"pk", spec.partition_key ? boost::json::value(*spec.partition_key)
                                                    : boost::json::value(nullptr)},
                          {"desc", spec.descending},
                          {"limit", spec.limit},
                          {"cont", spec.continuation},
                          {"pageBytes", spec.limits.max_page_bytes}};
  if (spec.order_by) key["order"] = spec.order_by->text();
  boost::json::array filters;
  for (const auto& f : spec.filters) filters.push_back({f.path.text(), f.value});
  key["filters"] = std::move(filters);
  return boost::json::serialize(key);
}

}  // namespace feedd
