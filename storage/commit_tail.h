// CommitTail: the change feed from a position on, taken in-process. The
// records of each committed group - already in memory, nothing decoded -
// are queued by a commit listener (DocumentStore::AddCommitListener), and
// Next() serves the position from that queue. Where the queue does not
// hold the position - at the start, after a Seek() back, or where a group
// was not queued because the memory for queued records was spent (the
// CommitTailBudget that the store's tails share, or the one it was given),
// or the tail gave up its queue to tails further ahead - Next() reads the
// durable feed by LSN until it meets the queue again. So no record is
// skipped, memory stays bounded, and what a reader is handed never depends
// on timing. Used by the in-daemon processors
// (processors/commit_change_source.h) and the Kafka publisher.
//
// Thread-safety: the listener, and so the ready callback, run on the
// commit thread, as do the budget's calls (GiveUpQueue); the other methods
// from one thread at a time.
// Ownership: borrows the store, which must outlive the tail; shares the
// budget.
#pragma once

#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "storage/change_record.h"
#include "storage/commit_tail_budget.h"
#include "storage/document_store.h"

namespace feedd {

class CommitTail final : private CommitTailBudget::Holder {
 public:
  // `budget` null: the store's, shared by its tails
  // (DocumentStore::commit_tail_budget()).
  explicit CommitTail(DocumentStore* store, std::shared_ptr<CommitTailBudget> budget = nullptr);
  ~CommitTail() override;

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
  // Groups not queued because the budget had no room for them.
  uint64_t groups_overflowed() const { return overflowed_.load(); }

 private:
  // A group as queued, with its share of the budget.
  struct QueuedGroup {
    CommittedChanges records;
    CommitTailBudget::Charge charge;
  };

  Lsn ReaderPosition() const override { return next_.load(); }
  bool HasQueue() const override { return has_queue_.load(); }
  void GiveUpQueue() override;

  void OnCommitted(const CommittedChanges& records);
  // Appends what the queue holds from the position on, up to `max` records
  // in *out or a gap. Under mutex_.
  void TakeQueued(size_t max, std::vector<SharedChangeRecord>* out);
  void PopFront();  // under mutex_

  DocumentStore* const store_;
  const std::shared_ptr<CommitTailBudget> budget_;
  uint64_t listener_ = 0;

  std::mutex mutex_;
  std::function<void()> ready_;    // GUARDED_BY(mutex_)
  std::deque<QueuedGroup> queue_;  // GUARDED_BY(mutex_)
  // Written under mutex_; read without it by the budget too.
  std::atomic<Lsn> next_{1};
  std::atomic<bool> has_queue_{false};  // !queue_.empty()

  std::atomic<uint64_t> from_commits_{0}, from_feed_{0}, overflowed_{0};
};

}  // namespace feedd
