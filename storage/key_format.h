// The on-disk key and value layout of feedd's RocksDB database.
// Specification: docs/storage-format.md. Change both together.
//
// Thread-safety: free functions, no shared state.
#pragma once

#include <boost/json/value.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "storage/change_record.h"

namespace feedd::key_format {

// 2: a replace's before-image may be stored as its difference from the
// after-image. A build refuses a database of a higher version.
// Stored as decimal text.
inline constexpr uint64_t kFormatVersion = 2;
inline constexpr std::string_view kFeedColumnFamily = "feed";
std::string ItemsColumnFamily(std::string_view container);
std::string IndexColumnFamily(std::string_view container, std::string_view path);

// Metadata keys (default column family).
inline constexpr std::string_view kMetaFormatVersion = "format_version";
inline constexpr std::string_view kMetaHeadLsn = "head_lsn";
inline constexpr std::string_view kMetaFeedTruncatedBefore = "feed_truncated_before";
std::string MetaContainerKey(std::string_view container);
std::string MetaIndexBuiltKey(std::string_view container, std::string_view path);
inline constexpr std::string_view kMetaConsumerPrefix = "consumer/";
// parked/ + lp(consumer) + u64be(lsn): a change a processor parked.
std::string MetaParkedPrefix(std::string_view consumer);
std::string MetaParkedKey(std::string_view consumer, uint64_t lsn);

// ---- primitives ----
void PutVarint(std::string* out, uint64_t n);
// Reads a varint from the front of *in and advances it. False when malformed.
bool GetVarint(std::string_view* in, uint64_t* n);
void PutLengthPrefixed(std::string* out, std::string_view s);
// Reads lp(s) from the front of *in and advances it. False when malformed.
bool GetLengthPrefixed(std::string_view* in, std::string_view* s);
void PutU64(std::string* out, uint64_t v);
bool GetU64(std::string_view* in, uint64_t* v);
std::string EncodeU64(uint64_t v);

// ---- items ----
std::string ItemPartitionPrefix(std::string_view partition_key);
std::string ItemKey(std::string_view partition_key, std::string_view id);
bool DecodeItemKey(std::string_view key, std::string_view* partition_key, std::string_view* id);
std::string ItemValue(uint64_t lsn, std::string_view item_json);
// Splits a stored item value. False when malformed.
bool DecodeItemValue(std::string_view value, uint64_t* lsn, std::string_view* item_json);

// ---- secondary indexes ----
// The encoding of a scalar for index keys; nullopt for arrays and objects.
std::optional<std::string> EncodeIndexValue(const boost::json::value& v);
std::string IndexValuePrefix(std::string_view encoded_value);
std::string IndexKey(std::string_view encoded_value, std::string_view partition_key,
                     std::string_view id);
bool DecodeIndexKey(std::string_view key, std::string_view* encoded_value,
                    std::string_view* partition_key, std::string_view* id);

// ---- change feed ----
std::string FeedKey(uint64_t lsn);
bool DecodeFeedKey(std::string_view key, uint64_t* lsn);
// Where an image sits in an envelope: envelope.substr(offset, size).
struct ImageSpan {
  size_t offset = 0;
  size_t size = 0;
};
// `before`: where a replace's before-image is in envelope_json (directly
// followed by `,"after":` and the after-image, the envelope's last member).
// When it shares enough of its bytes with the after-image, it is stored as
// its difference from it ("Before-images as differences" in the spec).
std::string FeedValue(uint64_t ts_ms, ChangeOp op, std::string_view container,
                      std::string_view partition_key, std::string_view id,
                      std::string_view envelope_json,
                      std::optional<ImageSpan> before = std::nullopt);
// Fills every field of *record but lsn; the envelope as it was written,
// byte for byte. False when malformed.
bool DecodeFeedValue(std::string_view value, ChangeRecord* record);

// ---- parked changes (metadata) ----
// lp(error) + the change's FeedValue().
std::string ParkedValue(std::string_view error, const ChangeRecord& record);
// Decodes a parked record: the LSN from its key, the rest from its value.
bool DecodeParked(std::string_view key, std::string_view value, std::string* error,
                  ChangeRecord* record);
// The container of a feed value without decoding the rest.
bool PeekFeedContainer(std::string_view value, std::string_view* container);

}  // namespace feedd::key_format
