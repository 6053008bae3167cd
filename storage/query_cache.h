// QueryCache: answers a repeated single-partition query from memory for as
// long as nothing in that logical partition has changed since the answer was
// computed - the feed (Q6) and a user's posts (Q3) are read far more often
// than they change (docs/architecture.md, "Query cache").
//
// Invalidation is by generation: every (container, partition key) hashes to
// one of 65,536 counters. The commit thread adds one to the counter of a
// partition for each change a group made to it, after RocksDB made the group
// visible and before the writes are acknowledged (so a writer that knows how
// many changes it made can tell whether anyone else wrote too:
// DocumentStore::PartitionGeneration); a query reads the counter before it makes its
// iterator (the view it reads), and its answer is kept with that value. An answer is served only
// while its counter is unchanged, so it is never older than a write that was
// acknowledged before the query started (partitions sharing a counter only
// cost extra misses). Cross-partition queries are not cached.
//
// Size: at most `capacity_bytes` of answers (least recently used dropped
// first); an answer larger than an eighth of it is not kept. 0 disables.
//
// Thread-safety: all methods are thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "storage/query.h"

namespace feedd {

class QueryCache {
 public:
  explicit QueryCache(size_t capacity_bytes);

  bool enabled() const { return capacity_bytes_ > 0; }

  // The key of a single-partition query of container `container_index`.
  static std::string Key(size_t container_index, const QuerySpec& spec);

  // Read before the query makes its iterator.
  uint64_t Generation(size_t container_index, std::string_view partition_key) const;
  // After a change to the partition is visible, before it is acknowledged:
  // once per change.
  void Invalidate(size_t container_index, std::string_view partition_key);

  // The kept answer of `key`, or nullptr when there is none or it is stale.
  std::shared_ptr<const QueryResult> Find(const std::string& key, size_t container_index,
                                          std::string_view partition_key);
  // Keeps `result`, computed through an iterator made after Generation()
  // returned `generation`.
  void Insert(std::string key, size_t container_index, std::string_view partition_key,
              uint64_t generation, const QueryResult& result);

  uint64_t hits() const { return hits_.load(); }
  uint64_t misses() const { return misses_.load(); }
  size_t bytes() const;

 private:
  static constexpr size_t kSlots = 65536;
  struct Entry {
    std::string key;
    uint64_t generation;
    size_t bytes;
    std::shared_ptr<const QueryResult> result;
  };

  static size_t SlotOf(size_t container_index, std::string_view partition_key);
  void EraseLocked(std::list<Entry>::iterator it);

  const size_t capacity_bytes_;
  std::unique_ptr<std::atomic<uint64_t>[]> generations_;

  mutable std::mutex mutex_;
  std::list<Entry> lru_;  // most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
  size_t bytes_ = 0;
  std::atomic<uint64_t> hits_{0};
  std::atomic<uint64_t> misses_{0};
};

}  // namespace feedd
