// CommitTail: the change feed from a position on, taken in-process. The
// records of each committed group - already in memory, nothing decoded -
// are queued by a commit listener (DocumentStore::AddCommitListener), and
// Next() serves the position from that queue. Where the queue does not
// hold the position - at the start, after a Seek() back, or after the
// queue overflowed its bound because the reader fell behind (the newest
// groups are then not queued) - Next() reads the durable feed by LSN
// until it meets the queue again. So no record is skipped, memory stays
// bounded, and what a reader is handed never depends on timing. Used by
// the in-daemon processors (processors/commit_change_source.h) and the
// Kafka publisher.
//
// Thread-safety: the listener, and so the ready callback, run on the
// commit thread; the other methods from one thread at a time.
// Ownership: borrows the store, which must outlive the tail.
#pragma once

#include <atomic>
#include <deque>
#include <functional>
#include <mutex>
#include <vector>

#include "storage/change_record.h"
#include "storage/document_store.h"

namespace feedd {

class CommitTail {
 public:
  // Records queued at most; beyond it they are read back from the feed.
  static constexpr size_t kDefaultMaxQueuedBytes = 64u * 1024 * 1024;

  explicit CommitTail(DocumentStore* store, size_t max_queued_bytes = kDefaultMaxQueuedBytes);
  ~CommitTail();

  CommitTail(const CommitTail&) = delete;
  CommitTail& operator=(const CommitTail&) = delete;

  // Called (short, on the commit thread) whenever a group committed that a
  // Next() that came back short may now find.
  void SetReadyCallback(std::function<void()> ready);
  // The next Next() starts at `from`.
  void Seek(Lsn from);
  // Replaces *out with the records after the position that are committed
  // now: `max` of them, or fewer only when that is all there is. They are
  // shared with their committed group or feed page, not copied. Not OK
  // when the feed no longer holds the position (lsn_not_retained).
  Status Next(size_t max, std::vector<SharedChangeRecord>* out);

  // Records handed out from the queue / read from the feed.
  uint64_t from_commits() const { return from_commits_.load(); }
  uint64_t from_feed() const { return from_feed_.load(); }
  // Groups not queued because the queue was full.
  uint64_t groups_overflowed() const { return overflowed_.load(); }

 private:
  // A group as queued, with the bytes it counts for (computed once).
  struct QueuedGroup {
    CommittedChanges records;
    size_t bytes = 0;
  };

  void OnCommitted(const CommittedChanges& records);
  // Appends what the queue holds from the position on, up to `max` records
  // in *out or a gap. Under mutex_.
  void TakeQueued(size_t max, std::vector<SharedChangeRecord>* out);
  void PopFront();  // under mutex_

  DocumentStore* const store_;
  const size_t max_queued_bytes_;
  uint64_t listener_ = 0;

  std::mutex mutex_;
  std::function<void()> ready_;    // GUARDED_BY(mutex_)
  std::deque<QueuedGroup> queue_;  // GUARDED_BY(mutex_)
  size_t queued_bytes_ = 0;        // GUARDED_BY(mutex_)
  Lsn next_ = 1;                   // GUARDED_BY(mutex_)

  std::atomic<uint64_t> from_commits_{0}, from_feed_{0}, overflowed_{0};
};

}  // namespace feedd
