// Patch operations (add, set, replace, remove, incr) on JSON Pointer paths,
// as used by PATCH and by the `patch` op of a batch (docs/api.md, "Patch").
//
// Thread-safety: free functions, no shared state.
#pragma once

#include <boost/json/value.hpp>
#include <vector>

#include "storage/container_spec.h"
#include "storage/json_pointer.h"
#include "util/status.h"

namespace feedd {

enum class PatchOpKind { kAdd, kSet, kReplace, kRemove, kIncr };

struct PatchOp {
  PatchOpKind kind;
  JsonPointer path;
  boost::json::value value;  // unused by kRemove; a number for kIncr
};

// Parses a JSON array of {"op","path","value"} objects. Rejects (invalid_patch)
// an empty list, more than 100 ops, unknown ops, paths touching `id`, the
// partition key of `spec` or a system property ('_' prefix), and non-numeric
// `incr` values.
Result<std::vector<PatchOp>> ParsePatchOperations(const ContainerSpec& spec,
                                                  const boost::json::value& operations);

// Applies `ops` in order to `item` (a JSON object). On error `item` may be
// partly modified; callers apply patches to a copy.
//   add:     set an object member, or insert into an array at an index or "-".
//   set:     set an object member or replace an array element (created if missing).
//   replace: like set, but the target must exist.
//   remove:  the target must exist.
//   incr:    add a number to a numeric target; creates it when missing.
//            Integers stay exact; a sum outside int64/uint64, or a
//            non-finite double, is invalid_number.
// A missing parent is an error for every op. A result nesting deeper than
// kMaxItemDepth (util/json_parse.h) is invalid_json.
Status ApplyPatch(const std::vector<PatchOp>& ops, boost::json::value& item);

}  // namespace feedd
