// What a query means, in one place: which items its filters select and the
// order of its results (docs/api.md, "Query"). The query engine uses it on
// stored items; view contexts that answer queries themselves (a processor's
// staged writes, test fakes) use it so that they agree with the engine.
//
// - A filter holds when the item has a value at its path that equals the
//   filter's value as JsonEquals has it (numbers by value: 1 == 1.0).
// - Rows are ordered by their orderBy value (CompareJson; a missing value
//   first), ties by their row key (the item's storage key: partition keys
//   shorter first, then bytewise, then the id), everything reversed when
//   descending.
//
// Thread-safety: free functions, no shared state.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "storage/query.h"

namespace feedd {

// `value` is the item's value at filter.path, nullptr when it has none.
bool MatchesFilter(const boost::json::value* value, const FieldFilter& filter);
// True when `item` satisfies every filter.
bool MatchesFilters(const boost::json::object& item, const std::vector<FieldFilter>& filters);

// The key that orders rows of equal sort value.
std::string QueryRowKey(std::string_view partition_key, std::string_view id);

// <0 when row a comes before row b in the query's order, 0 when they are
// the same row, >0 after. Sort values are nullptr when missing.
int CompareQueryRows(const boost::json::value* a_sort, std::string_view a_row_key,
                     const boost::json::value* b_sort, std::string_view b_row_key, bool descending);

}  // namespace feedd
