// Validation of items written by clients, and their preparation for the
// commit pipeline (docs/api.md, "Validation").
//
// PrepareItem() runs on the caller's thread, so the expensive part of a write
// (checking and serializing the JSON) is spread over the HTTP threads and the
// single commit thread only adds the system properties.
//
// Thread-safety: free functions, no shared state.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "storage/container_spec.h"
#include "util/status.h"

namespace feedd {

// An item body that passed validation.
struct PreparedItem {
  std::string id;
  std::string partition_key;
  // The body without properties starting with '_', serialized as a JSON
  // object. The commit pipeline appends _etag, _lsn and _ts to it.
  std::string body_json;
  // The encoded value (key_format::EncodeIndexValue) at each of the
  // container's index paths, in spec order; nullopt when absent or not a
  // scalar (the item then has no entry in that index).
  std::vector<std::optional<std::string>> index_values;
};

// Validates `body` as an item of `spec`: a JSON object with a valid `id` and a
// string partition key. `expected_pk` / `expected_id`, when set, must equal the
// values in the body (a path parameter, or the partition of a batch).
// Properties whose name starts with '_' are dropped; with `source_lsn` (a
// processor's write, docs/api.md "Batch") the item then gets _sourceLsn set
// to it and keeps its _source (storage/derived_items.h), which must be
// well-formed. `max_item_bytes` bounds the serialized body.
Result<PreparedItem> PrepareItem(const ContainerSpec& spec, boost::json::object body,
                                 std::optional<std::string_view> expected_pk,
                                 std::optional<std::string_view> expected_id, size_t max_item_bytes,
                                 std::optional<uint64_t> source_lsn = std::nullopt);

// OK when `id` is 1-255 bytes of valid UTF-8 with no '/', '\\', '?', '#' or
// control character.
Status ValidateId(std::string_view id);
// OK when a partition key value is usable (1-2048 bytes of valid UTF-8,
// valid as a path segment).
Status ValidatePartitionKeyValue(std::string_view pk);

// OK when `item`, `serialized_bytes` long, is at most `max_item_bytes` without
// its '_' properties (a derived item's _source and _sourceLsn are system
// properties, so the copy of an item that fits fits too); else
// payload_too_large naming `what` ("the item", "the patched item").
Status CheckItemSize(const boost::json::object& item, size_t serialized_bytes,
                     size_t max_item_bytes, std::string_view what);

// Removes every top-level property whose name starts with '_'.
void StripSystemProperties(boost::json::object& body);
// Removes the properties the store maintains: _etag, _lsn and _ts.
void StripStoreProperties(boost::json::object& body);

// Like PrepareItem() for items that processors derive: only _etag, _lsn and
// _ts are dropped, so '_' properties of derived items (_sourceLsn, _source)
// stay.
Result<PreparedItem> PrepareDerivedItem(const ContainerSpec& spec, boost::json::object body,
                                        size_t max_item_bytes);

// The index values of `item` for each of `spec.index_paths` (see PreparedItem).
std::vector<std::optional<std::string>> ExtractIndexValues(const ContainerSpec& spec,
                                                           const boost::json::value& item);

}  // namespace feedd
