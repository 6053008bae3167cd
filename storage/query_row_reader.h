// QueryRowReader: what one stored item is to a query - whether it passes the
// query's filters, and its sort value - read from the item's text. The
// top-level members the query names are found in one pass over the item
// (FindJsonMembers) and only their values are parsed, into an arena reused
// item after item. The query engine reads every item it visits through one;
// the query cache reads an item's new version through one to keep a kept
// answer current (storage/query_cache.h), so the two agree.
//
// Thread-safety: not thread-safe (the arena): one per thread of use.
// Ownership: borrows the QuerySpec, which must outlive it.
#pragma once

#include <boost/json/monotonic_resource.hpp>
#include <boost/json/value.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "storage/json_scan.h"
#include "storage/query.h"

namespace feedd {

// A row with the item's stored JSON: what an answer holds of each item.
struct QueryRowItem {
  QueryRow row;
  std::string json;
};

class QueryRowReader {
 public:
  // REQUIRES: `spec` outlives the reader.
  explicit QueryRowReader(const QuerySpec& spec);
  QueryRowReader(const QueryRowReader&) = delete;
  QueryRowReader& operator=(const QueryRowReader&) = delete;

  enum class Outcome { kMatches, kFilteredOut, kMalformed };

  // Reads the item `json`. On kMatches, *sort_value is its value at the
  // query's orderBy: nullptr when it has none or the query is unordered,
  // else valid until the next Read(). kMalformed: the text the scan visited
  // is not JSON.
  Outcome Read(std::string_view json, const boost::json::value** sort_value);

 private:
  // Where a path's value is read from: a top-level member of members_ and
  // the tokens below it, or (member < 0, the root) the whole item.
  struct MemberPath {
    int member = -1;
    std::vector<std::string> rest;
  };

  MemberPath PathOf(const JsonPointer& pointer);
  // The value at `pointer` in the item `json`, after FindJsonMembers().
  JsonScan Find(std::string_view json, const MemberPath& path, const JsonPointer& pointer,
                std::string_view* raw) const;
  // `raw` (one value's text) parsed into the arena; nullptr if not JSON.
  const boost::json::value* ParseScratch(std::string_view raw);
  // MatchesFilter() on a value's text: a plain string (no escapes) compares
  // as text, the rest after parsing.
  bool RawMatches(std::string_view raw, const FieldFilter& filter);

  const QuerySpec& spec_;
  std::vector<std::string> members_;      // top-level members the query reads
  std::vector<MemberPath> filter_paths_;  // one per filter
  MemberPath order_path_;
  std::vector<std::optional<std::string_view>> member_values_;  // of the current item
  // Filter and sort values parse without touching the heap; release() keeps it.
  unsigned char parse_buffer_[4096];
  boost::json::monotonic_resource parse_arena_{parse_buffer_, sizeof(parse_buffer_)};
  boost::json::value scratch_;  // the last ParseScratch() result, in parse_arena_
};

}  // namespace feedd
