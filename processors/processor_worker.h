// ProcessorWorker: one processor instance run outside the storage daemon by
// `feedd worker` (docs/processors.md, "Scale-out with feedd worker").
//
// Operation
//   The worker joins the instance's Kafka consumer group
//   (feedd-processor-<name>, the group the in-daemon instance would use), so
//   the partitions of the source topics are shared among all the workers of
//   the instance and move to the survivors when one leaves or dies. It
//   reaches the group through a PartitionedChangeSource (the Kafka consumer,
//   kafka_partitioned_change_source.h; tests give it a fake). Changes
//   are applied by a KeyedApplier through HttpViewContexts: reads and writes
//   go to the daemon's HTTP API, copies carry their source's LSN
//   ("sourceLsn"), so a late write of an older version never wins.
//
//   Offsets follow applied order: per partition, the committed offset is the
//   first change not yet applied or parked (AppliedOffsets; its metadata
//   holds the LSN of the last applied one). A worker that dies hands over its partitions from
//   there, and the new owner applies again what was in flight - harmless, because kinds are
//   level-triggered and copies are conditioned on their source LSN. A change that keeps failing is
//   parked (with the later changes of its key) and counts as applied for the offsets, so its
//   partition's offset moves on; the worker keeps it in memory only (logged, counted in
//   GetStatus().parked): a restart forgets it (Stop() logs what it forgets).
//
//   Behind retention: offsets are contiguous, so when the next message of a
//   partition is not the expected one (the committed offset, then the one
//   after the last message), the broker dropped what lies between. The
//   worker then reads the daemon's durable feed (GET /v1/changefeed) after
//   the partition's last LSN (kept in the committed offset's metadata) up to
//   the head, applies that partition's changes, and passes over the Kafka
//   messages they cover. A new group starts at offset 0 and LSN 0.
//
//   Only kinds that may run in several processes at once
//   (ProcessorKind::Distributable) are accepted.
//
// Concurrency
//   Start() and Stop() are called by one thread; GetStatus() from any.
//
// Ownership
//   Owns the kind, the change source (the Kafka consumer) and its HTTP
//   clients.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "processors/kafka_partitioned_change_source.h"
#include "processors/partitioned_change_source.h"
#include "processors/processor_instance.h"
#include "util/http_client.h"

namespace feedd {

struct WorkerOptions {
  std::string api;                  // HOST:PORT of the daemon's HTTP API
  HttpClientSecurity api_security;  // its token and TLS (docs/security.md)
  KafkaConsumerConfig kafka;
  std::chrono::milliseconds http_timeout{10000};
  // How long a revoked partition may take to finish its in-flight changes
  // before it is handed over anyway (they are then applied twice).
  std::chrono::milliseconds revoke_wait{10000};
};

struct WorkerStatus {
  std::string name, kind;
  // starting, running, catching_up, degraded (parked), stopped
  ProcessorState state = ProcessorState::kStarting;
  size_t assigned_partitions = 0;
  uint64_t applied = 0;             // changes applied
  uint64_t view_writes = 0;         // derived items written
  uint64_t errors = 0;              // failed attempts
  uint64_t parked = 0;              // parked now
  uint64_t in_flight = 0;           // received, not yet applied
  uint64_t catch_ups = 0;           // partitions read from the durable feed (behind retention)
  uint64_t rebalances = 0;          // partition assignments received
  uint64_t assignment_errors = 0;   // assignment changes librdkafka refused
  uint64_t unrecoverable_gaps = 0;  // catch-ups the durable feed no longer covered
  uint64_t collisions = 0;  // copies refused: their target is not derived from the same source
  // From resolved markers (docs/kafka.md): every change up to this LSN of the
  // assigned partitions is applied or parked; 0 until each passed a marker.
  Lsn resolved_lsn = 0;
  std::string last_error;
};

class ProcessorWorker {
 public:
  // Fails (invalid_request) for a kind that is not Distributable. The
  // worker consumes Kafka (options.kafka).
  static Result<std::unique_ptr<ProcessorWorker>> Create(ProcessorConfig config,
                                                         std::unique_ptr<ProcessorKind> kind,
                                                         std::vector<ContainerSpec> containers,
                                                         WorkerOptions options);
  // The same, taking its changes from `source` (options.kafka.topic_prefix
  // still names the topics).
  static Result<std::unique_ptr<ProcessorWorker>> Create(
      ProcessorConfig config, std::unique_ptr<ProcessorKind> kind,
      std::vector<ContainerSpec> containers, WorkerOptions options,
      std::unique_ptr<PartitionedChangeSource> source);
  ~ProcessorWorker();

  Status Start();
  // Finishes the changes being applied, commits their offsets, leaves the group.
  void Stop();

  const std::string& name() const;
  WorkerStatus GetStatus() const;
  // Recomputes the view from the sources (through the API) and lists every
  // difference. Meaningful once the views are quiescent; needs no Start().
  Result<std::vector<std::string>> Verify();

 private:
  class Impl;
  explicit ProcessorWorker(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace feedd
