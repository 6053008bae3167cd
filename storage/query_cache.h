// QueryCache: answers a repeated single-partition query from memory for as
// long as its answer is known to be current - the feed (Q6) and a user's
// posts (Q3) are read far more often than they change (docs/architecture.md,
// "Query cache").
//
// Currency is by generation: every (container, partition key) hashes to one
// of 65,536 counters. The commit thread adds one to the counter of a
// partition for each change a group made to it, after RocksDB made the group
// visible and before the writes are acknowledged (so a writer that knows how
// many changes it made can tell whether anyone else wrote too:
// DocumentStore::PartitionGeneration); a query reads the counter before it
// makes its iterator (the view it reads), and its answer is kept with that
// value. An answer is served only while its counter is unchanged, so it is
// never older than a write that was acknowledged before the query started
// (partitions sharing a counter only cost extra misses). Cross-partition
// queries are not cached.
//
// Kept current: an answer that holds every item of its partition the query
// selects (a first page without a continuation, not cut by max_page_bytes,
// ordered or without filters) is not dropped when the partition changes.
// With each change the commit thread hands over the item's new version
// (Update()); the answer takes it in - the item leaves the answer, and
// enters it again at its place in the query's order if it passes the
// filters (QueryRowReader, as the query engine reads items) - and advances
// with the counter, under one lock. So the `feed` partition, a post in and
// the oldest out with every new post, is served from memory after each
// change instead of computed again. Such an answer keeps its rows beyond the
// page too, up to twice its limit (more, an unreadable version or a page
// over its bytes drop it); its page is the first `limit` rows with the
// continuation a computed page would carry. It is served whatever computing
// it again would cost, with the cost of the computation it started from.
//
// Size: at most `capacity_bytes` of answers (least recently used dropped
// first); an answer larger than an eighth of it is not kept. 0 disables.
//
// Thread-safety: Update() and Invalidate() are called by one thread (the
// commit thread); everything else is thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "storage/query.h"

namespace feedd {

class QueryCache {
 public:
  explicit QueryCache(size_t capacity_bytes);
  ~QueryCache();

  bool enabled() const { return capacity_bytes_ > 0; }

  // The key of a single-partition query of container `container_index`.
  static std::string Key(size_t container_index, const QuerySpec& spec);

  // Read before the query makes its iterator.
  uint64_t Generation(size_t container_index, std::string_view partition_key) const;

  // After a change to an item is visible, before it is acknowledged, once
  // per change. Update(): the item's new version is `version` (its stored
  // JSON; nullopt when deleted), which the partition's answers kept current
  // take in. Invalidate(): the new version is not known, and every answer
  // of the partition is dropped.
  void Update(size_t container_index, std::string_view partition_key, std::string_view id,
              std::optional<std::string_view> version);
  void Invalidate(size_t container_index, std::string_view partition_key);

  // The kept answer of `key`, or nullptr when there is none or it is stale.
  std::shared_ptr<const QueryResult> Find(const std::string& key, size_t container_index,
                                          std::string_view partition_key);
  // Keeps `result` of the single-partition `spec`, computed through an
  // iterator made after Generation() returned `generation`. `rows`: the row
  // of each of its items (QueryEngine::Run); with them an answer that holds
  // every item its query selects is kept current.
  void Insert(std::string key, size_t container_index, const QuerySpec& spec, uint64_t generation,
              const QueryResult& result, std::vector<QueryRow> rows);

  uint64_t hits() const { return hits_.load(); }
  uint64_t misses() const { return misses_.load(); }
  // Changes taken into kept answers instead of dropping them.
  uint64_t updates() const { return updates_.load(); }
  size_t bytes() const;

 private:
  static constexpr size_t kSlots = 65536;
  class CurrentAnswer;  // the rows of an answer kept current (query_cache.cc)
  struct Entry {
    std::string key;
    size_t slot;
    uint64_t generation;
    size_t bytes;
    // Null once a change was taken in, until Find() builds the page again.
    std::shared_ptr<const QueryResult> result;
    std::unique_ptr<CurrentAnswer> current;  // null: stale at the partition's next change
  };
  using Entries = std::list<Entry>;

  static size_t SlotOf(size_t container_index, std::string_view partition_key);
  // A change to a slot without answers kept current: only its counter
  // moves, without the lock. False (nothing done) when it has some.
  bool BumpUnlessKept(size_t slot);
  // Update() (row_key set) or Invalidate() of a slot with answers kept current.
  void ChangeLocked(size_t slot, size_t container_index, std::string_view partition_key,
                    const std::string* row_key, std::optional<std::string_view> version);
  // What `entry` holds in memory, estimated.
  static size_t EntryBytes(const Entry& entry);
  void SetBytesLocked(Entry& entry);
  void EraseLocked(Entries::iterator it);

  const size_t capacity_bytes_;
  std::unique_ptr<std::atomic<uint64_t>[]> generations_;
  // Answers kept current, by slot: where there are none, a change only
  // advances the counter, without the lock.
  std::unique_ptr<std::atomic<uint32_t>[]> current_in_slot_;

  mutable std::mutex mutex_;
  Entries lru_;  // most recently used first
  std::unordered_map<std::string, Entries::iterator> index_;
  std::unordered_multimap<size_t, Entries::iterator> current_by_slot_;
  size_t bytes_ = 0;
  std::atomic<uint64_t> hits_{0};
  std::atomic<uint64_t> misses_{0};
  std::atomic<uint64_t> updates_{0};
};

}  // namespace feedd
