#include "storage/query_semantics.h"

#include "storage/json_order.h"
#include "storage/key_format.h"

namespace feedd {

bool MatchesFilter(const boost::json::value* value, const FieldFilter& filter) {
  return value != nullptr && JsonEquals(*value, filter.value);
}

bool MatchesFilters(const boost::json::object& item, const std::vector<FieldFilter>& filters) {
  for (const FieldFilter& f : filters) {
    if (!MatchesFilter(f.path.Find(item), f)) return false;
  }
  return true;
}

std::string QueryRowKey(std::string_view partition_key, std::string_view id) {
  return key_format::ItemKey(partition_key, id);
}

int CompareQueryRows(const boost::json::value* a_sort, std::string_view a_row_key,
                     const boost::json::value* b_sort, std::string_view b_row_key,
                     bool descending) {
  int c = CompareJson(a_sort, b_sort);
  if (c == 0) c = a_row_key.compare(b_row_key) < 0 ? -1 : (a_row_key == b_row_key ? 0 : 1);
  return descending ? -c : c;
}

}  // namespace feedd
