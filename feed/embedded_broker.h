// EmbeddedBroker: librdkafka's in-process Kafka-protocol mock cluster
// (rdkafka_mock.h), listening on loopback. For development and tests only:
// it keeps everything in memory (about the newest 5 MiB per partition), has
// no replication, and answers an empty fetch only after the consumer's full
// fetch.wait.max.ms. See docs/kafka.md, "The embedded broker".
//
// Thread-safety: bootstrap() is immutable; cluster() is for fault injection
// in tests (rd_kafka_mock_* functions are thread-safe).
// Ownership: owns the cluster and the handle that hosts it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "feed/bootstrap_relay.h"
#include "util/status.h"

typedef struct rd_kafka_s rd_kafka_t;
typedef struct rd_kafka_mock_cluster_s rd_kafka_mock_cluster_t;

namespace feedd {

class EmbeddedBroker {
 public:
  // The mock cluster keeps the newest 5 MiB of record batches per partition;
  // what a publisher republishes into a fresh one is kept below that, to
  // leave room for what comes next.
  static constexpr uint64_t kRepublishBytesPerPartition = 4 * 1024 * 1024;

  // With `port` != 0 the bootstrap address is 127.0.0.1:`port`, a relay to
  // the first broker (feed/bootstrap_relay.h); otherwise the brokers' own
  // addresses, on ports the kernel chooses.
  static Result<std::unique_ptr<EmbeddedBroker>> Start(int brokers = 1, uint16_t port = 0);
  ~EmbeddedBroker();

  // "127.0.0.1:PORT[,...]".
  const std::string& bootstrap() const { return bootstrap_; }
  // Creates `topic` (the mock cluster does not serve the CreateTopics admin
  // request). An existing topic is left as it is.
  Status CreateTopic(const std::string& topic, int partitions);
  rd_kafka_mock_cluster_t* cluster() const { return cluster_; }

 private:
  EmbeddedBroker() = default;
  rd_kafka_t* host_ = nullptr;
  rd_kafka_mock_cluster_t* cluster_ = nullptr;
  std::unique_ptr<BootstrapRelay> relay_;  // with a fixed port
  std::string bootstrap_;
};

}  // namespace feedd
