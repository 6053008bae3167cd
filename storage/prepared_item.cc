#include "storage/prepared_item.h"

#include <boost/json.hpp>

#include "storage/derived_items.h"
#include "storage/json_pointer.h"
#include "storage/key_format.h"
#include "util/json_parse.h"
#include "util/utf8.h"

namespace feedd {

inline constexpr size_t kMaxIdBytes = 255;
inline constexpr size_t kMaxPartitionKeyBytes = 2048;

Status ValidateId(std::string_view id) {
  if (id.empty() || id.size() > kMaxIdBytes) {
    return Status(ErrorCode::kInvalidId, "id must be 1-255 bytes long");
  }
  for (unsigned char c : id) {
    if (c < 0x20 || c == 0x7f) {
      return Status(ErrorCode::kInvalidId, "id must not contain control characters");
    }
    if (c == '/' || c == '\\' || c == '?' || c == '#') {
      return Status(ErrorCode::kInvalidId, "id must not contain '/', '\\', '?' or '#'");
    }
  }
  if (!IsValidUtf8(id)) return Status(ErrorCode::kInvalidId, "id must be valid UTF-8");
  return Status::Ok();
}

Status ValidatePartitionKeyValue(std::string_view pk) {
  if (pk.empty() || pk.size() > kMaxPartitionKeyBytes) {
    return Status(ErrorCode::kInvalidPartitionKey, "partition key must be 1-2048 bytes long");
  }
  if (!IsValidUtf8(pk)) {
    return Status(ErrorCode::kInvalidPartitionKey, "partition key must be valid UTF-8");
  }
  return Status::Ok();
}

void StripSystemProperties(boost::json::object& body) {
  for (auto it = body.begin(); it != body.end();) {
    if (!it->key().empty() && it->key()[0] == '_') {
      it = body.erase(it);
    } else {
      ++it;
    }
  }
}

std::vector<std::optional<std::string>> ExtractIndexValues(const ContainerSpec& spec,
                                                           const boost::json::value& item) {
  std::vector<std::optional<std::string>> values;
  values.reserve(spec.index_paths.size());
  for (const auto& path : spec.index_paths) {
    const boost::json::value* v = JsonPointer::Find(path, item);
    values.push_back(v ? key_format::EncodeIndexValue(*v) : std::nullopt);
  }
  return values;
}

namespace {

// The serialized bytes of `item`'s '_' properties (a derived item's _source
// and _sourceLsn), which max_item_bytes does not count: a copy of an item
// that fits must fit too, or one large post would park a whole view.
size_t SystemPropertyBytes(const boost::json::object& item) {
  size_t bytes = 0;
  for (const auto& member : item) {
    if (member.key().empty() || member.key()[0] != '_') continue;
    // "key":value plus its comma
    bytes += boost::json::serialize(member.key()).size() + 2 +
             boost::json::serialize(member.value()).size();
  }
  return bytes;
}

}  // namespace

Status CheckItemSize(const boost::json::object& item, size_t serialized_bytes,
                     size_t max_item_bytes, std::string_view what) {
  const size_t counted = serialized_bytes - SystemPropertyBytes(item);
  if (counted <= max_item_bytes) return Status::Ok();
  return Status(ErrorCode::kPayloadTooLarge,
                std::string(what) + " is " + std::to_string(counted) +
                    " bytes without its system properties; the limit is " +
                    std::to_string(max_item_bytes));
}

void StripStoreProperties(boost::json::object& body) {
  body.erase("_etag");
  body.erase("_lsn");
  body.erase("_ts");
}

namespace {

// A derived item's _source: {"container","partitionKey","id"}, all strings.
Status ValidateSourceRef(const boost::json::value& source) {
  const boost::json::object* o = source.if_object();
  bool ok = o != nullptr && o->size() == 3;
  for (const char* field : {"container", "partitionKey", "id"}) {
    const boost::json::value* v = ok ? o->if_contains(field) : nullptr;
    ok = v != nullptr && v->is_string();
  }
  if (ok) return Status::Ok();
  return Status(ErrorCode::kInvalidItem, std::string(kSourceField) +
                                             " must be an object of three strings: container, "
                                             "partitionKey and id");
}

Result<PreparedItem> Prepare(const ContainerSpec& spec, boost::json::object body,
                             std::optional<std::string_view> expected_pk,
                             std::optional<std::string_view> expected_id, size_t max_item_bytes,
                             bool derived, std::optional<uint64_t> source_lsn) {
  PreparedItem item;
  const boost::json::value* id = body.if_contains("id");
  if (id == nullptr) return Status(ErrorCode::kInvalidId, "the item has no 'id'");
  if (!id->is_string()) return Status(ErrorCode::kInvalidId, "'id' must be a string");
  item.id.assign(id->get_string().data(), id->get_string().size());
  if (Status s = ValidateId(item.id); !s.ok()) return s;
  if (expected_id && *expected_id != item.id) {
    return Status(ErrorCode::kInvalidId,
                  "the body's id '" + item.id + "' differs from the id in the path");
  }

  if (derived) {
    StripStoreProperties(body);
  } else {
    // A processor's write (source_lsn) keeps the _source it derived from.
    std::optional<boost::json::value> source;
    if (const boost::json::value* v = body.if_contains(kSourceField); v != nullptr && source_lsn) {
      if (Status s = ValidateSourceRef(*v); !s.ok()) return s;
      source = *v;
    }
    StripSystemProperties(body);
    if (source_lsn) body["_sourceLsn"] = *source_lsn;
    if (source) body[kSourceField] = std::move(*source);
  }
  boost::json::value root(std::move(body));
  if (Status s = CheckItemDepth(root, "the item"); !s.ok()) return s;
  // The spec's paths are valid JSON Pointers (ValidateContainerSpec).
  const boost::json::value* pk = JsonPointer::Find(spec.partition_key_path, root);
  if (pk == nullptr) {
    return Status(ErrorCode::kInvalidPartitionKey,
                  "the item has no partition key at " + spec.partition_key_path);
  }
  if (!pk->is_string()) {
    return Status(ErrorCode::kInvalidPartitionKey,
                  "the partition key at " + spec.partition_key_path + " must be a string");
  }
  item.partition_key.assign(pk->get_string().data(), pk->get_string().size());
  if (Status s = ValidatePartitionKeyValue(item.partition_key); !s.ok()) return s;
  if (expected_pk && *expected_pk != item.partition_key) {
    return Status(ErrorCode::kPartitionKeyMismatch,
                  "the partition key in the body ('" + item.partition_key +
                      "') differs from the one in the path ('" + std::string(*expected_pk) + "')");
  }

  item.index_values = ExtractIndexValues(spec, root);
  item.body_json = boost::json::serialize(root);
  if (Status s =
          CheckItemSize(root.get_object(), item.body_json.size(), max_item_bytes, "the item");
      !s.ok()) {
    return s;
  }
  return item;
}

}  // namespace

Result<PreparedItem> PrepareItem(const ContainerSpec& spec, boost::json::object body,
                                 std::optional<std::string_view> expected_pk,
                                 std::optional<std::string_view> expected_id, size_t max_item_bytes,
                                 std::optional<uint64_t> source_lsn) {
  return Prepare(spec, std::move(body), expected_pk, expected_id, max_item_bytes, false,
                 source_lsn);
}

Result<PreparedItem> PrepareDerivedItem(const ContainerSpec& spec, boost::json::object body,
                                        size_t max_item_bytes) {
  return Prepare(spec, std::move(body), std::nullopt, std::nullopt, max_item_bytes, true,
                 std::nullopt);
}

}  // namespace feedd
