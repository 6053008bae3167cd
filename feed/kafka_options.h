// KafkaOptions: whether and how the publisher reaches Kafka (the embedded
// broker, none, or a cluster) and what it produces.
// The daemon fills it from the `kafka.*` configuration section
// (daemon/options.cc); every key it does not know is passed to librdkafka.
// ValidateKafkaOptions holds the rules that span fields; the daemon applies
// it when it loads its configuration (so --check-config catches them) and
// the publisher again when it starts.
//
// Thread-safety: a plain value; ValidateKafkaOptions has no shared state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "util/status.h"

namespace feedd {

enum class EnvelopeFormat { kNative, kDebezium };

// Where the change feed is published (kafka.brokers).
enum class KafkaBrokers {
  kEmbedded,  // "embedded": the in-process mock cluster, for development and tests
  kNone,      // "none": nowhere, the publisher is off
  kCluster,   // HOST:PORT,...: a real cluster, KafkaOptions::bootstrap
};

// What a message's key is (docs/kafka.md, "Topics, keys, values"). The Kafka
// partition is chosen from the partition key in both cases.
enum class MessageKey {
  kPartitionKey,  // the partition key value (UTF-8): the contract's default
  kItem,          // ["<partitionKey>","<id>"] as compact JSON: one item per key
};

struct KafkaOptions {
  KafkaBrokers brokers = KafkaBrokers::kEmbedded;
  std::string bootstrap;  // the cluster's HOST:PORT,... when brokers is kCluster
  std::string topic_prefix = "feedd.";
  EnvelopeFormat envelope = EnvelopeFormat::kNative;
  MessageKey message_key = MessageKey::kPartitionKey;
  // Follow each delete with a null-value message of the same key. Requires
  // MessageKey::kItem: a tombstone keyed by partition key would let a
  // compacted topic drop every other item of that partition.
  bool tombstones = false;
  // Create missing topics with this many partitions / replicas.
  bool create_topics = true;
  int partitions = 3;
  int replication_factor = 1;
  // An envelope bigger than this (uncompressed) first loses its before-image,
  // then becomes reference-only (docs/kafka.md, "Large items").
  size_t max_envelope_bytes = 900 * 1024;
  // Back-pressure: at most this many messages / bytes awaiting delivery.
  size_t max_inflight_messages = 20000;
  size_t max_inflight_bytes = 64u * 1024 * 1024;
  // Resolved markers (docs/kafka.md, "Resolved markers"): every this many
  // milliseconds, when something was published since the last round, every
  // partition of every topic gets a marker "every change up to LSN N is in
  // Kafka". 0 (the default): no markers, since a consumer written for the
  // change envelope alone would take a marker for a change.
  uint32_t resolved_interval_ms = 0;
  // Heartbeats (docs/kafka.md, "Heartbeats"), Debezium's model: every this
  // many milliseconds, written or not, one message to HeartbeatTopic(). 0: none.
  uint32_t heartbeat_interval_ms = 0;
  // The embedded broker's bootstrap port; 0: a free port chosen at start.
  uint16_t embedded_port = 0;
  // Name in the Debezium `source.name` field.
  std::string instance_name = "feedd";
  // librdkafka properties (linger.ms, security.protocol, sasl.*, ...).
  std::map<std::string, std::string> properties;
};

// OK, or kInvalidRequest naming the offending `kafka.` option: tombstones
// without item keys, or a property librdkafka does not accept (checked on a
// throwaway librdkafka configuration).
Status ValidateKafkaOptions(const KafkaOptions& options);

}  // namespace feedd
