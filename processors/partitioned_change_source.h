// PartitionedChangeSource: where `feedd worker` takes the change feed from -
// the partitions of the source topics, shared by a consumer group (Kafka's
// shape; the in-daemon ChangeSource is one LSN-ordered feed instead).
//
// Contract
//   Subscribe() joins the group for `topics`; the group then assigns and
//   revokes partitions, which the source reports to its PartitionListener
//   from inside Poll(), on the polling thread:
//   - OnAssigned() before any message of the partitions, with the position
//     the group committed for each (the next offset to consume and the
//     metadata committed with it); the source then delivers each
//     partition's messages in offset order from there (or, when the broker
//     no longer holds that offset, from the earliest it holds: a gap the
//     listener sees in the offsets);
//   - OnRevoked() before the partitions are handed over: the listener
//     finishes their in-flight work and Commit()s it before returning (a
//     Commit() from inside the listener is allowed);
//   - OnAssignRefused() when the consumer could not take partitions (no
//     message of them comes until the next rebalance; OnAssigned() is not
//     called for them), OnRevokeRefused() when it could not give them back
//     (after OnRevoked()).
//   Commit() records, per partition, the next offset to consume and its
//   metadata as the group's position. Close() leaves the group; nothing may
//   be called after it.
//
// Thread-safety
//   Subscribe(), Poll() and Close() from one thread (the polling thread);
//   Commit() and PartitionCount() from that thread or a listener callback.
#pragma once

#include <chrono>
#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "storage/change_record.h"
#include "util/status.h"

namespace feedd {

struct TopicPartition {
  std::string topic;
  int32_t partition = 0;
  // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy 14 flags the 0 of a defaulted <=>.
  auto operator<=>(const TopicPartition&) const = default;
};

// A consumed message, with feedd's headers (docs/kafka.md) read out.
struct ConsumedMessage {
  TopicPartition at;
  int64_t offset = 0;
  std::optional<std::string> payload;  // none: a tombstone
  Lsn lsn = 0;                         // feedd-lsn; 0 when absent (not a change)
  Lsn resolved = 0;                    // feedd-resolved; 0 unless a resolved marker
  std::string container, id, op;       // feedd-container, feedd-id, feedd-op ("" when absent)
  std::string partition_key;           // feedd-partition-key, else the message key
};

// Where the group stands on a partition.
struct CommittedPosition {
  TopicPartition partition;
  int64_t offset = -1;   // the next offset to consume; -1: nothing committed
  std::string metadata;  // committed with it
};

class PartitionListener {
 public:
  virtual ~PartitionListener() = default;
  // `read` is not OK when the committed positions could not be read: each
  // partition then comes with offset -1.
  virtual void OnAssigned(const std::vector<CommittedPosition>& positions, const Status& read) = 0;
  virtual void OnRevoked(const std::vector<TopicPartition>& partitions) = 0;
  virtual void OnAssignRefused(const std::vector<TopicPartition>& partitions,
                               const Status& why) = 0;
  virtual void OnRevokeRefused(const std::vector<TopicPartition>& partitions,
                               const Status& why) = 0;
};

class PartitionedChangeSource {
 public:
  virtual ~PartitionedChangeSource() = default;

  // `listener` must outlive the source's last Poll().
  virtual Status Subscribe(const std::vector<std::string>& topics, PartitionListener* listener) = 0;
  // Replaces *out with the next message, waiting up to `wait` (nullopt
  // when none came). Not OK when the consumer reports an error (the end of
  // a partition is none); *out is then nullopt and polling may go on.
  virtual Status Poll(std::chrono::milliseconds wait, std::optional<ConsumedMessage>* out) = 0;
  // `sync`: returns when the group has recorded them; otherwise at once,
  // and a failure is returned by a later Poll().
  virtual Status Commit(const std::vector<CommittedPosition>& positions, bool sync) = 0;
  // The number of partitions of `topic`.
  virtual Result<int32_t> PartitionCount(const std::string& topic) = 0;
  // Not OK when the consumer reports an error while leaving.
  virtual Status Close() = 0;
};

}  // namespace feedd
