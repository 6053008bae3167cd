// Queries: equality filters, optional order, limit and continuation, within a
// logical partition or across partitions (through a secondary index when one
// fits, else a full scan). Every query reports what it cost.
//
// Thread-safety: plain values.
#pragma once

#include <boost/json/value.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "storage/json_pointer.h"
#include "util/status.h"

namespace feedd {

inline constexpr size_t kDefaultQueryLimit = 100;
inline constexpr size_t kMaxQueryLimit = 1000;

struct FieldFilter {
  JsonPointer path;
  boost::json::value value;  // a scalar: string, number, bool or null
};

// What one query may cost (docs/api.md, "Query limits"); 0 means unbounded.
// The HTTP API sets them from the query.* options; queries of in-process
// callers (processors) are unbounded.
struct QueryLimits {
  size_t max_filters = 0;       // more filters: query_too_expensive, nothing read
  uint64_t max_items_read = 0;  // items plus index entries visited; past it, query_too_expensive
  uint64_t max_bytes_read = 0;  // bytes of items and index entries read; past it, the same
  uint64_t max_page_bytes = 0;  // a page ends before its items exceed this (at least one item)
};

struct QuerySpec {
  std::optional<std::string> partition_key;  // absent: cross-partition
  std::vector<FieldFilter> filters;          // all must match
  std::optional<JsonPointer> order_by;       // absent: (partition key, id) order
  bool descending = false;
  size_t limit = kDefaultQueryLimit;  // 1..kMaxQueryLimit
  std::string continuation;           // from a previous page, or ""
  QueryLimits limits;                 // not part of the body: set by the caller
};

// An item of a query's answer as the query orders it (storage/query_semantics.h).
struct QueryRow {
  std::string row_key;                           // QueryRowKey(): the item's storage key
  std::optional<boost::json::value> sort_value;  // nullopt: missing, or the query is unordered

  // The sort value as CompareQueryRows() takes it: nullptr when missing.
  const boost::json::value* sort() const { return sort_value ? &*sort_value : nullptr; }
};

// Our equivalent of Cosmos DB request units.
struct QueryCost {
  uint64_t items_read = 0;          // items fetched from storage
  uint64_t index_entries_read = 0;  // secondary-index entries visited
  uint64_t bytes_read = 0;          // bytes of items and index entries read
  uint64_t partitions_scanned = 0;  // distinct logical partitions read from
};

struct QueryResult {
  std::vector<std::string> items;           // stored item JSON, in order
  std::optional<std::string> continuation;  // set when more may follow
  QueryCost cost;                           // of computing this page
  bool cached = false;                      // served by the query cache, without reading storage
  bool cut_by_bytes = false;                // the page ended at limits.max_page_bytes
};

// A text that is equal for two specs exactly when they ask the same
// (partition, filters, order, limit, continuation, page bytes): a key for
// caches. The work budget is not part of it: it does not change an answer.
std::string CanonicalQueryText(const QuerySpec& spec);

// Parses the JSON body of POST /v1/containers/{c}/query (docs/api.md).
// Filter names without a leading '/' are top-level fields.
Result<QuerySpec> ParseQuerySpec(const boost::json::value& body);

}  // namespace feedd
