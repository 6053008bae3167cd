#include "storage/commit_tail_budget.h"

#include <algorithm>
#include <utility>

namespace feedd {
namespace {

// What a queued group counts for: its records as they sit in memory.
size_t BytesOf(const std::vector<ChangeRecord>& records) {
  size_t bytes = 0;
  for (const ChangeRecord& r : records) {
    bytes += sizeof(ChangeRecord) + r.envelope_json.size() + r.container.size() +
             r.partition_key.size() + r.id.size();
  }
  return bytes;
}

// Gives its bytes back when the last tail drops the group.
struct GroupCharge {
  GroupCharge(std::shared_ptr<std::atomic<size_t>> used_bytes, size_t group_bytes)
      : used(std::move(used_bytes)), bytes(group_bytes) {
    used->fetch_add(bytes);
  }
  ~GroupCharge() { used->fetch_sub(bytes); }
  GroupCharge(const GroupCharge&) = delete;
  GroupCharge& operator=(const GroupCharge&) = delete;

  const std::shared_ptr<std::atomic<size_t>> used;
  const size_t bytes;
};

}  // namespace

CommitTailBudget::CommitTailBudget(size_t max_bytes)
    : max_bytes_(max_bytes), used_(std::make_shared<std::atomic<size_t>>(0)) {}

void CommitTailBudget::Register(Holder* holder) {
  std::lock_guard<std::mutex> lock(mutex_);
  holders_.push_back(holder);
}

void CommitTailBudget::Unregister(Holder* holder) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::erase(holders_, holder);
}

CommitTailBudget::Charge CommitTailBudget::Admit(const Holder* holder, Lsn holder_position,
                                                 bool holder_has_queue,
                                                 const CommittedChanges& records) {
  std::lock_guard<std::mutex> lock(mutex_);
  Charge shared;
  if (last_group_.lock() == records) shared = last_charge_.lock();
  const size_t cost = shared ? 0 : BytesOf(*records);
  if (holder_has_queue) {
    if (cost > max_bytes_) return nullptr;  // never fits: nobody gives up for it
    const auto fits = [&] { return used_->load() + cost <= max_bytes_; };
    if (!fits()) {
      std::vector<std::pair<Lsn, Holder*>> behind;
      for (Holder* other : holders_) {
        if (other == holder || !other->HasQueue()) continue;
        const Lsn position = other->ReaderPosition();
        if (position < holder_position) behind.emplace_back(position, other);
      }
      std::sort(behind.begin(), behind.end());
      for (const auto& [position, other] : behind) {
        if (fits()) break;
        other->GiveUpQueue();
        ++given_up_;
      }
      if (!fits()) return nullptr;
    }
  }
  if (shared) return shared;
  Charge charge = std::make_shared<const GroupCharge>(used_, cost);
  last_group_ = records;
  last_charge_ = charge;
  return charge;
}

}  // namespace feedd
