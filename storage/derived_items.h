// Derived items: who may write the items that processors derive
// (docs/api.md, "Derived items"; docs/processors.md).
//
// A derived item carries `_source` = {"container","partitionKey","id"}, the
// source item it was derived from (besides `_sourceLsn`, the source version).
// Client bodies cannot set it: their '_' properties are dropped. A container
// may also be declared as filled by processors only
// (ContainerSpec::writers). The rule, in MayWrite():
//   - an explicit override may write anything;
//   - a client may not write into a processors-only container at all
//     (derived_container), nor write or delete an item that carries
//     `_source` (derived_item);
//   - a processor (the daemon's own instances, or a batch op with
//     "sourceLsn" as `feedd worker` sends) never overwrites an item with a
//     derived version of another source: a new version with `_source` may
//     replace only an item with the same `_source` (or a copy written before
//     `_source` existed: `_sourceLsn` without `_source`); otherwise
//     derived_item, a collision the processor parks.
//
// Thread-safety: free functions and constants.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "storage/container_spec.h"
#include "util/status.h"

namespace feedd {

// The system property that records a derived item's source.
inline constexpr const char* kSourceField = "_source";

// Who a write operation comes from.
enum class WriteOrigin {
  kClient,     // an API client
  kProcessor,  // a processor (in the daemon, or `feedd worker`)
  kOverride,   // a client that asked to override the rule (X-Feedd-Override: derived)
};

// OK when a mutation by `origin` of item `id` of partition `partition_key`
// of `container` is allowed; otherwise derived_container or derived_item
// (403). `new_json` is the new version's body (nullopt for a delete or a
// patch), `stored_json` the stored version (nullopt: absent). The one place
// that decides it: roles, when they come, gate WriteOrigin::kOverride where
// it is granted. A processor's refused copy is a Collision().
Status MayWrite(WriteOrigin origin, const ContainerSpec& container, std::string_view partition_key,
                std::string_view id, std::optional<std::string_view> new_json,
                std::optional<std::string_view> stored_json);

// The _sourceLsn of a stored item, read from its text without parsing it:
// 0 when it has none, or one that is not a non-negative integer.
uint64_t SourceLsnOf(std::string_view item_json);

// How a collision names an item: container/partitionKey/id.
std::string ItemName(std::string_view container, std::string_view partition_key,
                     std::string_view id);

// The derived_item error of a copy refused because its target is taken:
// "collision: the copy of <copy_of> would overwrite <target>, which is
// <taken_by>; refused", where items are named container/partitionKey/id.
Status Collision(std::string_view copy_of, std::string_view target, std::string_view taken_by);

}  // namespace feedd
