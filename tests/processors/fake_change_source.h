// FakeChangeSource: a ChangeSource over records a test hands it, for tests
// of what an instance does with its source (order, passing over, parking,
// acknowledgements) without the commit path.
//
// The test keeps the Feed (shared with the source, which the instance owns)
// and appends records with consecutive LSNs from 1.
// Thread-safety: every method is thread-safe.
#pragma once

#include <algorithm>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "processors/change_source.h"

namespace feedd {

class FakeChangeSource final : public ChangeSource {
 public:
  struct Feed {
    std::mutex mutex;
    std::function<void()> ready;        // the source's ready callback
    std::vector<ChangeRecord> records;  // records[i].lsn == i + 1
    Lsn position = 1;                   // of the next NextBatch()
    std::vector<Lsn> seeks;
    Lsn acknowledged = 0;
    Lsn synced = 0;  // the acknowledgement last made durable

    void Append(ChangeRecord record) {
      std::function<void()> tell;
      {
        std::lock_guard<std::mutex> lock(mutex);
        record.lsn = records.size() + 1;
        records.push_back(std::move(record));
        tell = ready;
      }
      if (tell) tell();
    }
  };

  explicit FakeChangeSource(std::shared_ptr<Feed> feed) : feed_(std::move(feed)) {}

  void SetReadyCallback(std::function<void()> ready) override {
    std::lock_guard<std::mutex> lock(feed_->mutex);
    feed_->ready = std::move(ready);
  }

  void Seek(Lsn from) override {
    std::lock_guard<std::mutex> lock(feed_->mutex);
    feed_->position = from;
    feed_->seeks.push_back(from);
  }

  Status NextBatch(size_t max, std::vector<SharedChangeRecord>* out) override {
    out->clear();
    std::lock_guard<std::mutex> lock(feed_->mutex);
    while (out->size() < max && feed_->position <= feed_->records.size()) {
      out->push_back(std::make_shared<const ChangeRecord>(feed_->records[feed_->position - 1]));
      ++feed_->position;
    }
    counts_.from_feed += out->size();
    return Status::Ok();
  }

  Status Acknowledge(Lsn through) override {
    std::lock_guard<std::mutex> lock(feed_->mutex);
    feed_->acknowledged = std::max(feed_->acknowledged, through);
    return Status::Ok();
  }

  Status Sync() override {
    std::lock_guard<std::mutex> lock(feed_->mutex);
    feed_->synced = feed_->acknowledged;
    return Status::Ok();
  }

  ChangeSourceCounts counts() const override {
    std::lock_guard<std::mutex> lock(feed_->mutex);
    return counts_;
  }

 private:
  const std::shared_ptr<Feed> feed_;
  ChangeSourceCounts counts_;  // GUARDED_BY(feed_->mutex)
};

}  // namespace feedd
