// The total order of JSON values used by query `orderBy`, and the equality
// used by query filters (docs/api.md, "Query").
//
// Order: missing < null < false < true < numbers (by value) < strings
// (bytewise) < arrays and objects (by serialized text).
//
// Thread-safety: free functions, no shared state.
#pragma once

#include <boost/json/value.hpp>

namespace feedd {

// <0, 0, >0 like strcmp. nullptr stands for "missing".
int CompareJson(const boost::json::value* a, const boost::json::value* b);

// Filter equality: numbers by value (1 == 1.0), strings/bools/null exactly,
// arrays and objects structurally.
bool JsonEquals(const boost::json::value& a, const boost::json::value& b);

}  // namespace feedd
