// FakeChangeSource: a ChangeSource over records a test hands it, for tests
// of what an instance does with its source (order, passing over, parking,
// acknowledgements) without the commit path.
//
// The test keeps the Feed (shared with the source, which the instance owns)
// and appends records with consecutive LSNs from 1.
// Thread-safety: every method is thread-safe.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "processors/change_source.h"

namespace feedd {

class FakeChangeSource final : public ChangeSource {
 public:
  struct Feed {
    std::mutex mutex;
    std::condition_variable changed;
    std::vector<ChangeRecord> records;  // records[i].lsn == i + 1
    Lsn position = 1;                   // of the next NextBatch()
    std::vector<Lsn> seeks;
    Lsn acknowledged = 0;
    Lsn synced = 0;  // the acknowledgement last made durable
    bool interrupted = false;

    void Append(ChangeRecord record) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        record.lsn = records.size() + 1;
        records.push_back(std::move(record));
      }
      changed.notify_all();
    }
  };

  explicit FakeChangeSource(std::shared_ptr<Feed> feed) : feed_(std::move(feed)) {}

  void Seek(Lsn from) override {
    std::lock_guard<std::mutex> lock(feed_->mutex);
    feed_->position = from;
    feed_->seeks.push_back(from);
    feed_->interrupted = false;
  }

  Status NextBatch(size_t max, std::chrono::milliseconds wait,
                   std::vector<ChangeRecord>* out) override {
    out->clear();
    std::unique_lock<std::mutex> lock(feed_->mutex);
    feed_->changed.wait_for(
        lock, wait, [&] { return feed_->interrupted || feed_->records.size() >= feed_->position; });
    if (feed_->interrupted) return Status::Ok();
    while (out->size() < max && feed_->position <= feed_->records.size()) {
      out->push_back(feed_->records[feed_->position - 1]);
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

  void Interrupt() override {
    {
      std::lock_guard<std::mutex> lock(feed_->mutex);
      feed_->interrupted = true;
    }
    feed_->changed.notify_all();
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
