#include "storage/commit_tail.h"

#include <algorithm>

namespace feedd {

CommitTail::CommitTail(DocumentStore* store, std::shared_ptr<CommitTailBudget> budget)
    : store_(store), budget_(budget ? std::move(budget) : store->commit_tail_budget()) {
  budget_->Register(this);
  listener_ = store_->AddCommitListener([this](const CommittedChanges& r) { OnCommitted(r); });
}

CommitTail::~CommitTail() {
  // First out of the budget: other tails' listeners may ask this one to
  // give up its queue until then.
  budget_->Unregister(this);
  store_->RemoveCommitListener(listener_);
}

void CommitTail::OnCommitted(const CommittedChanges& records) {
  std::function<void()> ready;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (records->back().lsn < next_) return;  // already read from the feed
    CommitTailBudget::Charge charge = budget_->Admit(this, next_, !queue_.empty(), records);
    if (!charge) {
      ++overflowed_;  // the reader finds the gap and reads it from the feed
    } else {
      queue_.push_back(QueuedGroup{records, std::move(charge)});
      has_queue_ = true;
    }
    ready = ready_;
  }
  if (ready) ready();
}

void CommitTail::GiveUpQueue() {
  std::lock_guard<std::mutex> lock(mutex_);
  queue_.clear();
  has_queue_ = false;
}

void CommitTail::SetReadyCallback(std::function<void()> ready) {
  std::lock_guard<std::mutex> lock(mutex_);
  ready_ = std::move(ready);
}

void CommitTail::Seek(Lsn from) {
  std::lock_guard<std::mutex> lock(mutex_);
  next_ = from;
}

void CommitTail::PopFront() {
  queue_.pop_front();
  has_queue_ = !queue_.empty();
}

void CommitTail::TakeQueued(size_t max, std::vector<SharedChangeRecord>* out) {
  const size_t before = out->size();
  while (!queue_.empty() && queue_.front().records->back().lsn < next_) PopFront();
  while (!queue_.empty() && out->size() < max) {
    const CommittedChanges& records = queue_.front().records;
    const std::vector<ChangeRecord>& group = *records;
    if (group.front().lsn > next_) break;  // a gap: read from the feed
    for (size_t i = next_ - group.front().lsn; i < group.size() && out->size() < max; ++i) {
      out->emplace_back(records, &group[i]);  // shares the group
    }
    next_ = out->back()->lsn + 1;
    if (group.back().lsn < next_) PopFront();
  }
  from_commits_ += out->size() - before;
}

Status CommitTail::Next(size_t max, std::vector<SharedChangeRecord>* out) {
  out->clear();
  while (out->size() < max) {
    Lsn from = 0, before = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      TakeQueued(max, out);
      // Not queued: behind the commit path, or a gap the queue skipped. The
      // listener runs before the head moves, so a head at the position
      // means the record is only in the feed; below it, everything
      // committed is handed out.
      if (out->size() == max || (queue_.empty() && store_->HeadLsn() < next_)) break;
      from = next_;
      before = queue_.empty() ? 0 : queue_.front().records->front().lsn;
    }
    auto page = std::make_shared<FeedPage>();
    FeedReadSpec spec;
    spec.from = from;
    spec.limit = max - out->size();
    if (before != 0) spec.limit = std::min<size_t>(spec.limit, before - from);
    if (Status s = store_->ReadFeed(spec, page.get()); !s.ok()) return s;
    std::lock_guard<std::mutex> lock(mutex_);
    const size_t read_before = out->size();
    for (const ChangeRecord& r : page->records) {
      if (r.lsn != next_) break;    // never past a gap (the feed has none below the head)
      out->emplace_back(page, &r);  // shares the page
      ++next_;
    }
    from_feed_ += out->size() - read_before;
    if (out->size() == read_before) break;  // nothing there after all: no spinning
  }
  return Status::Ok();
}

}  // namespace feedd
