// Publisher: ships the durable change feed to Kafka, one topic per
// container, keyed by partition key, in LSN order (docs/kafka.md).
//
// Operation
//   One thread tails DocumentStore::ReadFeed() from its checkpoint and
//   produces every change with an idempotent librdkafka producer
//   (acks=all, no message timeout: while the broker is away, messages wait
//   and the feed buffers durably in RocksDB). The checkpoint is the highest
//   LSN L such that every change <= L has a successful delivery report; it
//   is persisted as the publisher's retention low-watermark, so retention
//   never drops an unpublished change. On start it reads the last message of
//   every topic partition (its feedd-lsn header) and skips changes already
//   there, so a crash between delivery and checkpoint republishes nothing
//   that the broker still holds. A failed delivery rewinds production to the
//   checkpoint, skipping what was delivered since. Every
//   KafkaOptions::resolved_interval_ms, when the persisted checkpoint moved,
//   it sends a resolved marker with that checkpoint to every partition of
//   every topic (docs/kafka.md, "Resolved markers"); every
//   KafkaOptions::heartbeat_interval_ms, a heartbeat ("Heartbeats").
//
// Concurrency
//   GetStatus() is thread-safe. Start()/Stop() from one owner thread.
//
// Ownership
//   Borrows the DocumentStore, which must outlive the publisher.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "feed/kafka_options.h"
#include "storage/document_store.h"

namespace feedd {

struct PublisherStatus {
  std::string state;       // connecting, running, broker_down, error, stopped
  std::string bootstrap;   // bootstrap servers
  bool connected = false;  // a broker answered recently
  Lsn published_lsn = 0;   // every change <= this is in Kafka
  Lsn head_lsn = 0;        // the store's head when sampled
  uint64_t lag_changes = 0;
  double lag_seconds = 0;  // age of the oldest unpublished change, on the store's clock
  std::string last_error;
  uint64_t produced = 0;               // messages handed to librdkafka
  uint64_t delivered = 0;              // messages acknowledged by the broker
  uint64_t delivery_errors = 0;        // failed delivery reports
  uint64_t fatal_errors = 0;           // fatal producer errors (the producer is recreated)
  uint64_t duplicates_skipped = 0;     // changes found already in Kafka on recovery
  uint64_t envelopes_shrunk = 0;       // large items sent without images
  uint64_t envelopes_undecodable = 0;  // stored envelopes that did not parse: sent reference-only
  uint64_t inflight_messages = 0;
  uint64_t inflight_bytes = 0;
  Lsn resolved_lsn = 0;           // the last marker round every partition acknowledged
  uint64_t resolved_markers = 0;  // resolved markers acknowledged by the broker
  uint64_t heartbeats = 0;        // heartbeats acknowledged by the broker
};

// The librdkafka properties of the publisher's producer for `options` and
// `bootstrap`: the publisher's defaults, with every kafka.<property> of
// `options.properties` over them (docs/kafka.md).
std::map<std::string, std::string> PublisherProducerProperties(const KafkaOptions& options,
                                                               const std::string& bootstrap);

// How long the publisher's thread waits for delivery reports, while
// messages are in flight, before it takes the changes committed meanwhile:
// a quarter of the producer's `linger.ms` (of `producer_properties`, as
// PublisherProducerProperties() makes them), within [1, 25] ms; 1 ms when
// it does not read as a number. A change waits for the linger in
// librdkafka's batch anyway, so it reaches Kafka at most a quarter of the
// linger later, and the thread wakes a few hundred times a second under
// load instead of on every commit.
std::chrono::milliseconds PublisherPollInterval(
    const std::map<std::string, std::string>& producer_properties);

class Publisher {
 public:
  // The name under which the publisher registers its retention watermark.
  static constexpr const char* kConsumerName = "kafka-publisher";

  // Starts publishing to `bootstrap`. Never blocks on the broker: topic
  // creation and recovery happen on the publisher thread, with retries.
  static Result<std::unique_ptr<Publisher>> Start(DocumentStore* store, KafkaOptions options,
                                                  std::string bootstrap, bool embedded);
  ~Publisher();

  // Delivers what is in flight (waiting at most `flush_timeout`), records
  // the checkpoint and stops. Idempotent.
  void Stop(std::chrono::milliseconds flush_timeout = std::chrono::seconds(5));

  PublisherStatus GetStatus() const;
  // container -> topic
  std::map<std::string, std::string> Topics() const;

 private:
  class Impl;
  explicit Publisher(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace feedd
