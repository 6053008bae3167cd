#include "processors/commit_change_source.h"

#include <algorithm>

namespace feedd {
namespace {

constexpr auto kRecordInterval = std::chrono::milliseconds(100);

}  // namespace

CommitChangeSource::CommitChangeSource(DocumentStore* store, Options options)
    : store_(store), options_(std::move(options)), tail_(store, options_.max_queued_bytes) {}

void CommitChangeSource::SetReadyCallback(std::function<void()> ready) {
  tail_.SetReadyCallback(std::move(ready));
}

void CommitChangeSource::Seek(Lsn from) {
  tail_.Seek(from);
  acknowledged_ = recorded_ = from > 0 ? from - 1 : 0;
}

Status CommitChangeSource::NextBatch(size_t max, std::vector<SharedChangeRecord>* out) {
  return tail_.Next(max, out);
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

}  // namespace feedd
