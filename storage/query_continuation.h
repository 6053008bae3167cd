// QueryContinuation: where a page of a query stopped, as the opaque
// `continuation` token of docs/api.md carries it - the row key of the
// page's last item and, for an ordered query, that item's sort value. The
// query engine writes and resumes from it; the query cache writes the
// token of an answer it keeps current with the same function, so that a
// kept answer and a computed one agree byte for byte.
//
// Thread-safety: a plain value and free functions.
#pragma once

#include <boost/json/value.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "storage/query.h"
#include "util/status.h"

namespace feedd {

// The row of the previous page's last item (its sort value nullopt when
// missing or the query is unordered).
struct QueryContinuation : QueryRow {
  bool present = false;  // false: the query starts at its first item
};

// "" decodes to a continuation that is not present; anything but a token
// EncodeQueryContinuation() wrote is invalid_query.
Result<QueryContinuation> DecodeQueryContinuation(const std::string& token);

// The token of a page whose last item has `row_key` and (ordered queries
// only; nullptr when missing) `sort_value`.
std::string EncodeQueryContinuation(std::string_view row_key, const boost::json::value* sort_value,
                                    bool ordered);

}  // namespace feedd
