// CommitTailBudget: the memory that the CommitTails of one store spend,
// together, on committed records queued for their readers
// (storage/commit_tail.h; StoreOptions::commit_tail_bytes).
//
// Operation
//   Every committed group is handed to every tail, and the tails that queue
//   it share its records: a group counts once, from the first tail that
//   queues it until the last one drops it (a Charge each holds). Admit()
//   lets a tail queue a group
//     - at no cost when another tail holds it already, unless the budget
//       is passed (see the next case: a group admitted past the budget
//       would cost on while a tail behind holds it);
//     - when the budget has room for it;
//     - when the tail's own queue is empty, so a reader that keeps up is
//       always served in memory (the budget may then be passed by one group
//       per tail);
//     - when the tails further behind than the asking one (the smaller the
//       LSN at a queue's front, the further behind) give up their queues,
//       oldest first, until there is room. Their readers read the durable
//       feed instead, as after an overflow, and the memory goes to the
//       readers that keep up: a reader stuck far behind (a publisher while
//       Kafka is down, a stopped processor) does not send everyone else to
//       the disk.
//   Otherwise the group is refused (the tail's reader finds the gap and
//   reads it from the feed).
//
// Thread-safety: thread-safe. Admit() runs on the commit thread (in the
//   tails' commit listeners), and calls GiveUpQueue() of other tails there,
//   under the budget's lock, which Unregister() also takes: a tail that
//   unregisters before it is destroyed is never called afterwards. Charges
//   may be released on any thread.
// Ownership: shared (std::shared_ptr) by the store and its tails; Charges
//   keep what they release alive.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "storage/change_record.h"

namespace feedd {

class CommitTailBudget {
 public:
  // What a tail shows the budget.
  class Holder {
   public:
    virtual ~Holder() = default;
    // The LSN of the first record queued, 0 when the queue is empty. Read
    // without the holder's lock: a moment's value is enough to pick whom
    // to ask.
    virtual Lsn QueueFront() const = 0;
    // Drops every queued group; the reader reads them from the feed.
    virtual void GiveUpQueue() = 0;
  };

  // Held with a queued group; the group counts until the last is released.
  using Charge = std::shared_ptr<const void>;

  explicit CommitTailBudget(size_t max_bytes);

  CommitTailBudget(const CommitTailBudget&) = delete;
  CommitTailBudget& operator=(const CommitTailBudget&) = delete;

  void Register(Holder* holder);
  void Unregister(Holder* holder);

  // The charge under which `holder` may queue `records`, or null when it
  // may not (see above). `holder_front` is the holder's QueueFront() as it
  // is under its lock. A group counts for its records as they sit in
  // memory: each ChangeRecord and the strings it owns.
  Charge Admit(const Holder* holder, Lsn holder_front, const CommittedChanges& records);

  size_t max_bytes() const { return max_bytes_; }
  // Bytes of the groups queued now, each counted once.
  size_t used_bytes() const { return used_->load(); }
  // Queues given up so that a tail further ahead could queue a group.
  uint64_t queues_given_up() const { return given_up_.load(); }

 private:
  const size_t max_bytes_;
  // Shared with the charges, which may outlive the budget.
  const std::shared_ptr<std::atomic<size_t>> used_;
  std::atomic<uint64_t> given_up_{0};

  std::mutex mutex_;
  std::vector<Holder*> holders_;  // GUARDED_BY(mutex_)
  // The group admitted last and its charge: the listeners of one group run
  // one after the other, so the next tail to ask for it finds it here.
  const std::vector<ChangeRecord>* last_group_ = nullptr;  // GUARDED_BY(mutex_)
  std::weak_ptr<const void> last_charge_;                  // GUARDED_BY(mutex_)
};

}  // namespace feedd
