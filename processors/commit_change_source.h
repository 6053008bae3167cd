// CommitChangeSource: the in-daemon processors' ChangeSource: a CommitTail
// (storage/commit_tail.h) - changes in-process from the commit path, and
// from the durable feed for whatever the commit path did not hand over -
// and the instance's applied watermark.
//
// Operation
//   Acknowledge()d positions are recorded as the consumer's applied
//   watermark (a ViewWrite with no requests, which also holds retention) at
//   most every 100 ms, and on Sync(). Acknowledge() does not wait for that
//   write: the reader goes on while it queues behind the commit pipeline's
//   groups (behind a bulk import's, hundreds of milliseconds), at most one
//   at a time, and a failure is returned by the next Acknowledge(). Sync()
//   waits for it, and then records the last position itself.
//
// Thread-safety: as ChangeSource; the ready callback runs on the commit
// thread, the watermark write's answer on the commit pipeline's.
// Ownership: borrows the store, which must outlive the source.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "processors/change_source.h"
#include "storage/commit_tail.h"
#include "storage/document_store.h"

namespace feedd {

class CommitChangeSource final : public ChangeSource {
 public:
  struct Options {
    std::string consumer;  // whose watermark Acknowledge() records
    // The memory for records queued from the commit path; beyond it they
    // are read back from the durable feed. Null: the store's, which its
    // other in-process readers share.
    std::shared_ptr<CommitTailBudget> budget = nullptr;
  };

  CommitChangeSource(DocumentStore* store, Options options);

  void SetReadyCallback(std::function<void()> ready) override;
  void Seek(Lsn from) override;
  Status NextBatch(size_t max, std::vector<SharedChangeRecord>* out) override;
  Status Acknowledge(Lsn through) override;
  Status Sync() override;
  ChangeSourceCounts counts() const override {
    return ChangeSourceCounts{tail_.from_commits(), tail_.from_feed()};
  }

  // Groups not queued because the budget had no room for them.
  uint64_t groups_overflowed() const { return tail_.groups_overflowed(); }

 private:
  // The watermark writes, shared with their answers (which may come after
  // the source is gone).
  struct Marks {
    std::mutex mutex;
    std::condition_variable answered;
    bool in_flight = false;  // a write not answered yet
    Lsn recorded = 0;        // the last position written
    Status failed;           // the last write's error, until reported
  };
  // Writes acknowledged_ as the watermark without waiting; the caller has
  // set marks_->in_flight. The answer clears it.
  void SubmitMark();
  // Waits until no watermark write is in flight; returns with `lock` held.
  void WaitForMark(std::unique_lock<std::mutex>& lock);

  DocumentStore* const store_;
  const Options options_;
  CommitTail tail_;
  const std::shared_ptr<Marks> marks_ = std::make_shared<Marks>();

  // The reader's thread only.
  Lsn acknowledged_ = 0;
  std::chrono::steady_clock::time_point last_record_;
};

}  // namespace feedd
