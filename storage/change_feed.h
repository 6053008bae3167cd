// ChangeFeed: reading the durable change feed, the consumers' retention
// low-watermarks, and retention itself.
//
// Operation
//   Read() serves committed records (LSN <= the commit pipeline's head) in
//   LSN order. Retention drops the oldest records by age and by size, but
//   never a record that a registered consumer has not acknowledged; it
//   records the truncation point in the same WriteBatch as the deletion, so
//   lsn_not_retained answers survive restarts.
//
// Concurrency
//   All methods are thread-safe. Retention runs on its own thread (Start/Stop)
//   or on demand (EnforceRetention).
//
// Ownership
//   Borrows the RocksDatabase and the head function's owner. Internal to storage/.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "storage/change_record.h"
#include "storage/document_store.h"
#include "storage/rocks_database.h"
#include "storage/store_options.h"

namespace feedd {

class ChangeFeed {
 public:
  ChangeFeed(RocksDatabase* db, const StoreOptions& options, std::function<Lsn()> head);
  ~ChangeFeed();

  // Loads the registered consumers. Call once before use.
  Status Load();
  void Start();
  void Stop();

  Lsn oldest_retained() const { return truncated_before_.load(); }
  Status Read(const FeedReadSpec& spec, FeedPage* page) const;

  Status RegisterConsumer(const std::string& name, Lsn acked);
  Status AckConsumer(const std::string& name, Lsn acked);
  Status UnregisterConsumer(const std::string& name);
  std::vector<ConsumerWatermark> Consumers() const;

  Status EnforceRetention();

 private:
  Status PersistConsumer(const std::string& name, Lsn acked);
  // The first LSN to keep by age and size alone.
  Result<Lsn> RetentionCutoff(Lsn head) const;

  RocksDatabase* const db_;
  const StoreOptions options_;
  const std::function<Lsn()> head_;
  std::atomic<Lsn> truncated_before_;

  mutable std::mutex consumers_mutex_;
  std::map<std::string, Lsn> consumers_;

  std::mutex retention_mutex_;  // one retention pass at a time
  std::mutex thread_mutex_;
  std::condition_variable thread_wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace feedd
