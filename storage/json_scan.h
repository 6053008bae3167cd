// FindJsonValue: the text of one value inside JSON text, found without
// building a DOM. The query engine tests filters and reads sort values of
// stored items this way: an item is scanned once, up to the fields the query
// names, instead of being parsed whole (docs/architecture.md, "Queries").
//
// Thread-safety: a free function, no shared state.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace feedd {

enum class JsonScan {
  kFound,      // *value is set
  kMissing,    // a member or index on the path is absent, or a token meets a scalar
  kMalformed,  // the text the scan visited is not JSON
};

// Follows `tokens` (a JsonPointer's, see storage/json_pointer.h) from the root
// value of `json`. On kFound, *value is the exact text of the value, e.g.
// "\"comment\"", "12" or "{\"a\":1}", without surrounding whitespace. Member
// names are compared after unescaping; the first member of a name wins (items
// feedd stores have unique names). Array tokens must be canonical decimal
// indexes, as for JsonPointer::Find. Reads nothing outside `json`; text the
// scan skips is checked only as far as needed to find where it ends.
JsonScan FindJsonValue(std::string_view json, const std::vector<std::string>& tokens,
                       std::string_view* value);

// One pass over the members of the top-level object of `json`: for every
// member whose name is names[i] (the first member of a name wins),
// (*values)[i] is set to its value's text as FindJsonValue would give it;
// names not found leave their entry unset. The scan stops once every name is
// found, so a query with many filters reads an item once instead of once per
// filter. kFound when `json` is an object (whatever was found), kMissing when
// it is another value, kMalformed when the text the scan visited is not JSON.
// REQUIRES: values != nullptr; names has no duplicates.
JsonScan FindJsonMembers(std::string_view json, const std::vector<std::string>& names,
                         std::vector<std::optional<std::string_view>>* values);
// The same for the object at `path` (a JsonPointer's tokens) inside `json`,
// e.g. the after-image of a change envelope: the scan goes straight to it
// and stops once every name is found. kMissing when nothing is at `path`
// or it is not an object.
JsonScan FindJsonMembers(std::string_view json, const std::vector<std::string>& path,
                         const std::vector<std::string>& names,
                         std::vector<std::optional<std::string_view>>* values);

}  // namespace feedd
