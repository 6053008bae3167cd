// CommitChangeSource: the in-daemon processors' ChangeSource: a CommitTail
// (storage/commit_tail.h) - changes in-process from the commit path, and
// from the durable feed for whatever the commit path did not hand over -
// and the instance's applied watermark.
//
// Operation
//   Acknowledge()d positions are recorded as the consumer's applied
//   watermark (a ViewWrite with no requests, which also holds retention) at
//   most every 100 ms, and on Sync().
//
// Thread-safety: as ChangeSource; the ready callback runs on the commit
// thread.
// Ownership: borrows the store, which must outlive the source.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "processors/change_source.h"
#include "storage/commit_tail.h"
#include "storage/document_store.h"

namespace feedd {

class CommitChangeSource final : public ChangeSource {
 public:
  struct Options {
    std::string consumer;  // whose watermark Acknowledge() records
    // Records queued from the commit path at most; beyond it they are read
    // back from the durable feed.
    size_t max_queued_bytes = CommitTail::kDefaultMaxQueuedBytes;
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

  // Groups not queued because the queue was full.
  uint64_t groups_overflowed() const { return tail_.groups_overflowed(); }

 private:
  Status Record(Lsn through);

  DocumentStore* const store_;
  const Options options_;
  CommitTail tail_;

  // The reader's thread only.
  Lsn acknowledged_ = 0;
  Lsn recorded_ = 0;
  std::chrono::steady_clock::time_point last_record_;
};

}  // namespace feedd
