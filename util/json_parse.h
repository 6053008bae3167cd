// The one JSON parser for text from outside (request bodies, HTTP replies)
// and from storage (items, change envelopes), and the JSON limits it
// enforces. Every parse in feedd goes through ParseJson(), so anything the
// API accepted and stored can be read back by every reader: the commit
// pipeline, the publisher, the processors, feedctl and workers.
//
// Limits (docs/api.md "Validation", docs/storage-format.md):
//  - Depth: an item nests at most kMaxItemDepth arrays/objects (the item
//    object itself is level 1). Text that feedd wraps around items (a change
//    envelope, a changefeed page, a batch request) adds at most
//    kMaxWrapperDepth levels, so ParseJson() accepts kMaxParseDepth levels.
//  - Numbers: every number is finite; 1e309 is invalid_number rather than
//    a double Infinity that no JSON reader accepts back. Integers that fit
//    int64 or uint64 stay exact; other numbers are doubles (docs/api.md,
//    "Numbers").
// The limits are part of the storage format, not configuration: lowering
// them would make stored items unreadable.
//
// Thread-safety: free functions, no shared state. Never throws.
#pragma once

#include <boost/json/storage_ptr.hpp>
#include <boost/json/value.hpp>
#include <cstddef>
#include <string_view>

#include "util/status.h"

namespace feedd {

// The deepest nesting of an item (and of any client JSON around it).
inline constexpr size_t kMaxItemDepth = 64;
// Levels feedd adds around an item: {"changes":[{"after":item}]} in a
// changefeed page, {"operations":[{"body":item}]} in a batch request.
inline constexpr size_t kMaxWrapperDepth = 4;
// What ParseJson() accepts.
inline constexpr size_t kMaxParseDepth = kMaxItemDepth + kMaxWrapperDepth;

// Parses `text` as one JSON value of valid UTF-8 that nests at most
// kMaxParseDepth levels. A number that is not a finite double is
// invalid_number (the message names the literal); any other failure is
// invalid_json with the parser's reason. The value's memory comes
// from `sp` (the default resource when null).
Result<boost::json::value> ParseJson(std::string_view text, boost::json::storage_ptr sp = {});

// For stored text that ParseJson() refused: reads the bare tokens Infinity
// and NaN (outside strings), which versions before the invalid_number check
// stored for 1e309 and the like, as the double infinity and null. The
// result must not be stored again; it serves to find what such an item
// indexed, so that the item can be replaced or deleted.
Result<boost::json::value> ParseLegacyJson(std::string_view text);

// The nesting depth of `v`: 0 for a scalar, 1 for {} or [], ...
// Stops counting at `limit` + 1, so its cost is bounded by `limit`.
size_t JsonDepth(const boost::json::value& v, size_t limit = kMaxItemDepth);

// OK when `v` nests at most kMaxItemDepth levels; else invalid_json naming
// `what` ("the item", "the patched item").
Status CheckItemDepth(const boost::json::value& v, std::string_view what);

}  // namespace feedd
