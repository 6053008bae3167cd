#include "processors/commit_change_source.h"

#include <algorithm>
#include <utility>

namespace feedd {
namespace {

constexpr auto kRecordInterval = std::chrono::milliseconds(100);

}  // namespace

CommitChangeSource::CommitChangeSource(DocumentStore* store, Options options)
    : store_(store), options_(std::move(options)), tail_(store, options_.budget) {}

void CommitChangeSource::SetReadyCallback(std::function<void()> ready) {
  tail_.SetReadyCallback(std::move(ready));
}

void CommitChangeSource::Seek(Lsn from) {
  tail_.Seek(from);
  acknowledged_ = from > 0 ? from - 1 : 0;
  std::unique_lock<std::mutex> lock(marks_->mutex);
  WaitForMark(lock);
  marks_->recorded = acknowledged_;
}

Status CommitChangeSource::NextBatch(size_t max, std::vector<SharedChangeRecord>* out) {
  return tail_.Next(max, out);
}

Status CommitChangeSource::Acknowledge(Lsn through) {
  acknowledged_ = std::max(acknowledged_, through);
  const auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard<std::mutex> lock(marks_->mutex);
    if (!marks_->failed.ok()) return std::exchange(marks_->failed, Status::Ok());
    if (marks_->in_flight || acknowledged_ <= marks_->recorded ||
        now - last_record_ < kRecordInterval) {
      return Status::Ok();
    }
    marks_->in_flight = true;
  }
  SubmitMark();
  return Status::Ok();
}

Status CommitChangeSource::Sync() {
  std::unique_lock<std::mutex> lock(marks_->mutex);
  WaitForMark(lock);
  marks_->failed = Status::Ok();  // the write below supersedes it
  if (acknowledged_ <= marks_->recorded) return Status::Ok();
  marks_->in_flight = true;
  lock.unlock();
  SubmitMark();
  lock.lock();
  WaitForMark(lock);
  return std::exchange(marks_->failed, Status::Ok());
}

void CommitChangeSource::SubmitMark() {
  last_record_ = std::chrono::steady_clock::now();
  const Lsn through = acknowledged_;
  ViewWrite mark;
  mark.consumer = options_.consumer;
  mark.consumer_acked = through;
  store_->SubmitView(std::move(mark), [marks = marks_, through](WriteResult r) {
    {
      std::lock_guard<std::mutex> lock(marks->mutex);
      marks->in_flight = false;
      if (r.status.ok()) {
        marks->recorded = std::max(marks->recorded, through);
      } else {
        marks->failed = std::move(r.status);
      }
    }
    marks->answered.notify_all();
  });
}

void CommitChangeSource::WaitForMark(std::unique_lock<std::mutex>& lock) {
  marks_->answered.wait(lock, [this] { return !marks_->in_flight; });
}

}  // namespace feedd
