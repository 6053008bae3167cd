// KafkaOptions: how the publisher reaches Kafka and what it produces.
// The daemon fills it from the `kafka.*` configuration section
// (daemon/options.cc); every key it does not know is passed to librdkafka.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

namespace feedd {

enum class EnvelopeFormat { kNative, kDebezium };

struct KafkaOptions {
  // "embedded" starts the in-process mock cluster; anything else is a real
  // cluster's bootstrap list.
  std::string brokers = "embedded";
  std::string topic_prefix = "feedd.";
  EnvelopeFormat envelope = EnvelopeFormat::kNative;
  // Follow each delete with a null-value message of the same key.
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
  // Name in the Debezium `source.name` field.
  std::string instance_name = "feedd";
  // librdkafka properties (linger.ms, security.protocol, sasl.*, ...).
  std::map<std::string, std::string> properties;
};

}  // namespace feedd
