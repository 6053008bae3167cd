// CommitTailBudget: the memory that the CommitTails of one store spend,
// together, on committed records queued for their readers
// (storage/commit_tail.h; StoreOptions::commit_tail_bytes).
//
// Operation
//   Every committed group is handed to every tail, and the tails that queue
//   it share its records: a group counts once, from the first tail that
//   queues it until the last one drops it (a Charge each holds). Admit()
//   lets a tail queue a group
//     - when the tail's own queue is empty, so a reader that keeps up is
//       always served in memory (the budget may then be passed by one group
//       per tail);
//     - at no cost when another tail holds it already, unless the budget is
//       passed (a group admitted past it would cost on while a tail behind
//       holds it);
//     - when the budget has room for it;
//     - when the tails whose readers are further behind than the asking
//       one's (the smaller the LSN a reader takes next, the further
//       behind) give up their queues, the furthest first, until there is
//       room. Their readers read the durable feed instead, as after an
//       overflow, and the memory goes to the readers that keep up: a reader
//       stuck far behind (a publisher while Kafka is down, a stopped
//       processor) does not send everyone else to the disk. A group larger
//       than the whole budget makes nobody give up anything.
//   Otherwise the group is refused (the tail's reader finds the gap and
//   reads it from the feed). Queues given up to make room may not free it
//   all (their groups may be shared with the asking tail); the group is
//   then refused too.
//
// Thread-safety: thread-safe. Admit() runs on the commit thread (in the
//   tails' commit listeners), and calls GiveUpQueue() of other tails there,
//   under the budget's lock, which Unregister() also takes: a tail that
//   unregisters before it is destroyed is never called afterwards.
//   REQUIRES: the tails of one budget listen to one store, so that one
//   thread at a time calls Admit() (two commit threads could each hold a
//   tail's lock and wait for the other's). Charges may be released on any
//   thread.
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
  // What a tail shows the budget. Both are read without the tail's lock:
  // a moment's value is enough to pick whom to ask.
  class Holder {
   public:
    virtual ~Holder() = default;
    // The LSN its reader takes next.
    virtual Lsn ReaderPosition() const = 0;
    // Whether its queue holds a group.
    virtual bool HasQueue() const = 0;
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
  // may not (see above). `holder_position` and `holder_has_queue` are the
  // holder's as they are under its lock. A group counts for its records as
  // they sit in memory: each ChangeRecord and the strings it owns.
  Charge Admit(const Holder* holder, Lsn holder_position, bool holder_has_queue,
               const CommittedChanges& records);

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
  std::weak_ptr<const std::vector<ChangeRecord>> last_group_;  // GUARDED_BY(mutex_)
  std::weak_ptr<const void> last_charge_;                      // GUARDED_BY(mutex_)
};

}  // namespace feedd
