#include "processors/commit_change_source.h"

#include <algorithm>

namespace feedd {
namespace {

constexpr auto kRecordInterval = std::chrono::milliseconds(100);

size_t BytesOf(const std::vector<ChangeRecord>& records) {
  size_t bytes = 0;
  for (const ChangeRecord& r : records) {
    bytes += sizeof(ChangeRecord) + r.envelope_json.size() + r.container.size() +
             r.partition_key.size() + r.id.size();
  }
  return bytes;
}

}  // namespace

CommitChangeSource::CommitChangeSource(DocumentStore* store, Options options)
    : store_(store), options_(std::move(options)) {
  listener_ = store_->AddCommitListener([this](const CommittedChanges& r) { OnCommitted(r); });
}

CommitChangeSource::~CommitChangeSource() { store_->RemoveCommitListener(listener_); }

void CommitChangeSource::OnCommitted(const CommittedChanges& records) {
  const size_t bytes = BytesOf(*records);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (records->back().lsn < next_) return;  // already read from the feed
    if (queued_bytes_ + bytes > options_.max_queued_bytes && !queue_.empty()) {
      ++overflowed_;  // the reader finds the gap and reads it from the feed
    } else {
      queue_.push_back(QueuedGroup{records, bytes});
      queued_bytes_ += bytes;
    }
  }
  wake_.notify_one();
}

void CommitChangeSource::Seek(Lsn from) {
  std::lock_guard<std::mutex> lock(mutex_);
  next_ = from;
  interrupted_ = false;
  acknowledged_ = recorded_ = from > 0 ? from - 1 : 0;
}

void CommitChangeSource::PopFront() {
  queued_bytes_ -= queue_.front().bytes;
  queue_.pop_front();
}

bool CommitChangeSource::TakeQueued(size_t max, std::vector<ChangeRecord>* out) {
  while (!queue_.empty() && queue_.front().records->back().lsn < next_) PopFront();
  if (queue_.empty() || queue_.front().records->front().lsn > next_) return false;
  while (!queue_.empty() && out->size() < max) {
    const std::vector<ChangeRecord>& group = *queue_.front().records;
    if (group.front().lsn > next_) break;  // a gap: the next call reads it from the feed
    for (size_t i = next_ - group.front().lsn; i < group.size() && out->size() < max; ++i) {
      out->push_back(group[i]);
    }
    next_ = out->back().lsn + 1;
    if (group.back().lsn < next_) PopFront();
  }
  from_commits_ += out->size();
  return true;
}

Status CommitChangeSource::NextBatch(size_t max, std::chrono::milliseconds wait,
                                     std::vector<ChangeRecord>* out) {
  out->clear();
  Lsn from = 0, before = 0;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    const auto deadline = std::chrono::steady_clock::now() + wait;
    for (;;) {
      if (interrupted_) return Status::Ok();
      if (TakeQueued(max, out)) return Status::Ok();
      // Not queued: behind the commit path, or a gap the queue skipped. The
      // listener runs before the head moves, so a head at the position
      // means the record is only in the feed.
      if (!queue_.empty() || store_->HeadLsn() >= next_) {
        from = next_;
        before = queue_.empty() ? 0 : queue_.front().records->front().lsn;
        break;
      }
      if (wake_.wait_until(lock, deadline) == std::cv_status::timeout) {
        if (TakeQueued(max, out)) return Status::Ok();
        if (queue_.empty() && store_->HeadLsn() < next_) return Status::Ok();
      }
    }
  }
  FeedPage page;
  FeedReadSpec spec;
  spec.from = from;
  spec.limit = before == 0 ? max : std::min<size_t>(max, before - from);
  if (Status s = store_->ReadFeed(spec, &page); !s.ok()) return s;
  std::lock_guard<std::mutex> lock(mutex_);
  if (next_ != from) return Status::Ok();  // Seek()ed meanwhile
  for (ChangeRecord& r : page.records) {
    if (r.lsn != next_) break;  // never past a gap (the feed has none below the head)
    out->push_back(std::move(r));
    ++next_;
  }
  from_feed_ += out->size();
  return Status::Ok();
}

Status CommitChangeSource::Acknowledge(Lsn through) {
  acknowledged_ = std::max(acknowledged_, through);
  if (std::chrono::steady_clock::now() - last_record_ < kRecordInterval) return Status::Ok();
  return Record(acknowledged_);
}

Status CommitChangeSource::Sync() { return Record(acknowledged_); }

Status CommitChangeSource::Record(Lsn through) {
  if (through <= recorded_) return Status::Ok();
  ViewWrite mark;
  mark.consumer = options_.consumer;
  mark.consumer_acked = through;
  WriteResult r = store_->WriteView(std::move(mark));
  if (!r.status.ok()) return r.status;
  recorded_ = through;
  last_record_ = std::chrono::steady_clock::now();
  return Status::Ok();
}

void CommitChangeSource::Interrupt() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    interrupted_ = true;
  }
  wake_.notify_all();
}

}  // namespace feedd
