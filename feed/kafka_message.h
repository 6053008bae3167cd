// KafkaMessage: the Kafka record for one change record, in the native or the
// Debezium envelope, with its key (kafka.message_key), the size policy for
// large items, and the Kafka partition every change of a partition key goes
// to (docs/kafka.md).
//
// Thread-safety: free functions, no shared state.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "feed/kafka_options.h"
#include "storage/change_record.h"

namespace feedd {

enum class EnvelopeSize {
  kFull,           // as stored
  kBeforeOmitted,  // before-image dropped, "beforeOmitted": true
  kReferenceOnly,  // before and after dropped, "beforeOmitted"/"afterOmitted": true
};

struct KafkaMessage {
  std::string topic;
  std::string key;                   // per options.message_key
  std::optional<std::string> value;  // nullopt: a tombstone
  EnvelopeSize size_class = EnvelopeSize::kFull;
  // Set when the stored envelope could not be parsed for re-encoding; the
  // message is then the reference-only envelope built from the record's key
  // fields (docs/kafka.md, "Undecodable envelopes").
  std::optional<std::string> decode_error;
};

std::string TopicFor(const KafkaOptions& options, const std::string& container);

// The message key of an item: its partition key, or ["<pk>","<id>"] as
// compact JSON for MessageKey::kItem.
std::string MessageKeyFor(const KafkaOptions& options, const ChangeRecord& record);

// The Kafka partition of every change of `partition_key`, whatever the message
// key: the Java client's murmur2 of the partition key's bytes,
// (murmur2(partition_key) & 0x7fffffff) % partition_count.
// REQUIRES: partition_count > 0.
int32_t KafkaPartitionOf(std::string_view partition_key, int32_t partition_count);

// The value message for `record`, shrunk to fit options.max_envelope_bytes.
// Never throws: an envelope that does not parse is sent reference-only.
KafkaMessage EncodeChange(const KafkaOptions& options, const ChangeRecord& record);

// The tombstone that follows a delete when options.tombstones is set.
KafkaMessage EncodeTombstone(const KafkaOptions& options, const ChangeRecord& record);

// A heartbeat (docs/kafka.md, "Heartbeats"), as Debezium's: to
// HeartbeatTopic() (<topic_prefix>__heartbeat; no container topic starts with
// '_'), partition 0, key {"serverName":<instance_name>}, value
// {"ts_ms":<now>,"publishedLsn":N} with N as in a resolved marker.
std::string HeartbeatTopic(const KafkaOptions& options);
KafkaMessage EncodeHeartbeat(const KafkaOptions& options, uint64_t now_ms, Lsn published);

// A resolved marker (docs/kafka.md, "Resolved markers"): "every change up to
// LSN N of this topic's container is in Kafka". Its key is kResolvedKey (an
// item key is a JSON array, so it never is one), its value
// {"resolved":N} in both envelopes, its headers kResolvedHeader = N and
// feedd-container; it has no feedd-lsn header, so readers of changes skip it.
inline constexpr std::string_view kResolvedKey = "feedd-resolved";
inline constexpr const char* kResolvedHeader = "feedd-resolved";
KafkaMessage EncodeResolvedMarker(const KafkaOptions& options, const std::string& container,
                                  Lsn resolved);

}  // namespace feedd
