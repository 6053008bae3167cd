// ChangeFeed: reading the durable change feed, the consumers' retention
// low-watermarks, and retention itself.
//
// Operation
//   Read() serves committed records (LSN <= the commit pipeline's head) in
//   LSN order. Retention drops the oldest records by age and by size, but
//   never a record that a registered consumer has not acknowledged. It
//   persists the truncation point, below which nothing is read again (so
//   lsn_not_retained answers survive restarts), and deletes the feed's
//   files that hold only records below it; it writes no range tombstone,
//   which would keep the feed's files from moving down without a rewrite.
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
  // `head`: the committed head LSN. `appended_bytes`: bytes of change
  // records committed since start (for size-based retention).
  ChangeFeed(RocksDatabase* db, const StoreOptions& options, std::function<Lsn()> head,
             std::function<uint64_t()> appended_bytes);
  ~ChangeFeed();

  // Loads the registered consumers (and, with size-based retention, the
  // feed's size). Call once before use.
  Status Load();
  void Start();
  void Stop();

  Lsn oldest_retained() const { return truncated_before_.load(); }
  Status Read(const FeedReadSpec& spec, FeedPage* page) const;

  Status RegisterConsumer(const std::string& name, Lsn acked);
  Status AckConsumer(const std::string& name, Lsn acked);
  Status UnregisterConsumer(const std::string& name);
  std::vector<ConsumerWatermark> Consumers() const;
  bool IsRegistered(const std::string& name) const;
  // A consumer's parked changes (DocumentStore::PutParked and friends).
  Status PutParked(const std::string& consumer, const ParkedRecord& parked);
  Status DeleteParked(const std::string& consumer, Lsn lsn);
  Result<std::vector<ParkedRecord>> ListParked(const std::string& consumer) const;
  // Records in memory an ack that was persisted elsewhere (a view write).
  void NoteAcked(const std::string& name, Lsn acked);

  Status EnforceRetention();

 private:
  Status PersistConsumer(const std::string& name, Lsn acked);
  // Where retention cuts, read in one pass over the records it drops.
  struct Cutoff {
    Lsn keep_from;           // the first LSN to keep
    uint64_t dropped_bytes;  // of the records from `from` to keep_from
  };
  // The cut by age and size, from `from` (the current truncation point),
  // dropping none past `last`.
  Result<Cutoff> RetentionCutoff(Lsn from, Lsn last) const;
  // Bytes (key + value) of the change records in [from, to).
  Result<uint64_t> RecordBytes(Lsn from, Lsn to) const;
  // Bytes of change records currently retained.
  uint64_t RetainedBytes() const;
  // Deletes the feed's SST files that hold only records before keep_from,
  // which retention has dropped.
  void DeleteDroppedFiles(Lsn keep_from);

  RocksDatabase* const db_;
  const StoreOptions options_;
  const std::function<Lsn()> head_;
  const std::function<uint64_t()> appended_bytes_;
  uint64_t loaded_bytes_ = 0;               // retained bytes at Load()
  std::atomic<uint64_t> dropped_bytes_{0};  // dropped by retention since Load()
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
