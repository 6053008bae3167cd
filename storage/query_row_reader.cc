#include "storage/query_row_reader.h"

#include <algorithm>

#include "storage/query_semantics.h"
#include "util/json_parse.h"

namespace feedd {

QueryRowReader::QueryRowReader(const QuerySpec& spec) : spec_(spec) {
  for (const FieldFilter& f : spec_.filters) filter_paths_.push_back(PathOf(f.path));
  if (spec_.order_by) order_path_ = PathOf(*spec_.order_by);
}

QueryRowReader::Outcome QueryRowReader::Read(std::string_view json,
                                             const boost::json::value** sort_value) {
  *sort_value = nullptr;
  scratch_ = nullptr;
  parse_arena_.release();
  if (!members_.empty() &&
      FindJsonMembers(json, members_, &member_values_) == JsonScan::kMalformed) {
    return Outcome::kMalformed;
  }
  for (size_t i = 0; i < spec_.filters.size(); ++i) {
    const FieldFilter& filter = spec_.filters[i];
    std::string_view raw;
    JsonScan found = Find(json, filter_paths_[i], filter.path, &raw);
    if (found == JsonScan::kMalformed) return Outcome::kMalformed;
    if (found == JsonScan::kMissing || !RawMatches(raw, filter)) return Outcome::kFilteredOut;
  }
  if (!spec_.order_by) return Outcome::kMatches;
  std::string_view raw;
  JsonScan found = Find(json, order_path_, *spec_.order_by, &raw);
  if (found == JsonScan::kMalformed) return Outcome::kMalformed;
  if (found == JsonScan::kFound) {
    *sort_value = ParseScratch(raw);
    if (*sort_value == nullptr) return Outcome::kMalformed;
  }
  return Outcome::kMatches;
}

QueryRowReader::MemberPath QueryRowReader::PathOf(const JsonPointer& pointer) {
  MemberPath path;
  const std::vector<std::string>& tokens = pointer.tokens();
  if (tokens.empty()) return path;
  auto it = std::find(members_.begin(), members_.end(), tokens[0]);
  path.member = static_cast<int>(it - members_.begin());
  if (it == members_.end()) members_.push_back(tokens[0]);
  path.rest.assign(tokens.begin() + 1, tokens.end());
  return path;
}

JsonScan QueryRowReader::Find(std::string_view json, const MemberPath& path,
                              const JsonPointer& pointer, std::string_view* raw) const {
  if (path.member < 0) return FindJsonValue(json, pointer.tokens(), raw);
  const std::optional<std::string_view>& value = member_values_[path.member];
  if (!value) return JsonScan::kMissing;
  if (path.rest.empty()) {
    *raw = *value;
    return JsonScan::kFound;
  }
  return FindJsonValue(*value, path.rest, raw);
}

const boost::json::value* QueryRowReader::ParseScratch(std::string_view raw) {
  Result<boost::json::value> v = ParseJson(raw, &parse_arena_);
  if (!v.ok()) return nullptr;
  scratch_ = std::move(*v);
  return &scratch_;
}

bool QueryRowReader::RawMatches(std::string_view raw, const FieldFilter& filter) {
  if (const auto* s = filter.value.if_string(); s != nullptr && raw.size() >= 2 &&
                                                raw.front() == '"' &&
                                                raw.find('\\') == std::string_view::npos) {
    return raw.substr(1, raw.size() - 2) == std::string_view(*s);
  }
  return MatchesFilter(ParseScratch(raw), filter);
}

}  // namespace feedd
