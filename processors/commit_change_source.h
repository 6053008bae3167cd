// CommitChangeSource: the in-daemon processors' ChangeSource. Changes come
// in-process from the commit path, and from the durable feed for whatever
// the commit path did not hand over.
//
// Operation
//   A commit listener (DocumentStore::AddCommitListener) queues the records
//   of each committed group - already in memory, nothing decoded - and calls
//   the ready callback. NextBatch() serves the position from that queue. Where the
//   queue does not hold the position - at start-up and after a rebuild (the
//   position is behind the commit path), or after the queue overflowed its
//   bound because the instance fell behind (the newest groups are then not
//   queued) - it reads the durable feed by LSN until it meets the queue
//   again. So no change is ever skipped, memory stays bounded, and the
//   records an instance is handed never depend on timing.
//
//   Acknowledge()d positions are recorded as the consumer's applied
//   watermark (a ViewWrite with no requests, which also holds retention) at
//   most every 100 ms, and on Sync().
//
// Thread-safety: as ChangeSource; the listener, and so the ready callback,
// run on the commit thread.
// Ownership: borrows the store, which must outlive the source.
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <mutex>
#include <string>

#include "processors/change_source.h"
#include "storage/document_store.h"

namespace feedd {

class CommitChangeSource final : public ChangeSource {
 public:
  struct Options {
    std::string consumer;  // whose watermark Acknowledge() records
    // Records queued from the commit path at most; beyond it they are read
    // back from the durable feed.
    size_t max_queued_bytes = 64u * 1024 * 1024;
  };

  CommitChangeSource(DocumentStore* store, Options options);
  ~CommitChangeSource() override;

  void SetReadyCallback(std::function<void()> ready) override;
  void Seek(Lsn from) override;
  Status NextBatch(size_t max, std::vector<SharedChangeRecord>* out) override;
  Status Acknowledge(Lsn through) override;
  Status Sync() override;
  ChangeSourceCounts counts() const override {
    return ChangeSourceCounts{from_commits_.load(), from_feed_.load()};
  }

  // Groups not queued because the queue was full.
  uint64_t groups_overflowed() const { return overflowed_.load(); }

 private:
  void OnCommitted(const CommittedChanges& records);
  // Appends what the queue holds from the position on, up to `max` records
  // in *out or a gap. Under mutex_.
  void TakeQueued(size_t max, std::vector<SharedChangeRecord>* out);
  Status Record(Lsn through);

  DocumentStore* const store_;
  const Options options_;
  uint64_t listener_ = 0;

  std::mutex mutex_;
  std::function<void()> ready_;  // GUARDED_BY(mutex_)
  // A group as queued, with the bytes it counts for (computed once).
  struct QueuedGroup {
    CommittedChanges records;
    size_t bytes = 0;
  };
  void PopFront();  // under mutex_

  std::deque<QueuedGroup> queue_;  // GUARDED_BY(mutex_)
  size_t queued_bytes_ = 0;        // GUARDED_BY(mutex_)
  Lsn next_ = 1;                   // GUARDED_BY(mutex_)

  // The reader's thread only.
  Lsn acknowledged_ = 0;
  Lsn recorded_ = 0;
  std::chrono::steady_clock::time_point last_record_;

  std::atomic<uint64_t> from_commits_{0}, from_feed_{0}, overflowed_{0};
};

}  // namespace feedd
