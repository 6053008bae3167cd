// ViewReadMemo: what a processor's reads of the store returned - the whole
// answers of single-partition queries, or point reads of items - kept between
// its batches, each valid for one generation of what it depends on: its
// partition for a query (DocumentStore::PartitionGeneration), the item for a
// point read (DocumentStore::ItemGeneration). A `top_n` view reads its
// members for every new post, and `usernames` the post's user for every
// post, comment and like; with the memo each is read from the store once,
// and then served from memory until it changes (a query's answer is even
// carried forward with the processor's own writes: StagedReadsViewContext).
//
// An answer is kept only for a generation at which it is the committed
// state, and served only while the generation is still that one: any change
// by anyone (or a change to a partition or item that shares the counter)
// makes it a miss, never a stale answer.
//
// Bounds (Limits): the answers it keeps take at most `max_bytes` of memory
// (an estimate: keys, items and their bookkeeping; least recently used
// dropped first), each of at most `max_items` items; larger answers are not
// kept. The bytes come from the processor's `read_memo_mb` setting
// (docs/processors.md), so that a data set's users fit, whatever their
// number, and large items cannot make the memo grow past it.
//
// Thread-safety: all methods are thread-safe (the applier threads of one
// processor instance share it).
#pragma once

#include <atomic>
#include <boost/json/object.hpp>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace feedd {

class ViewReadMemo {
 public:
  struct Limits {
    size_t max_bytes;
    size_t max_items;
  };
  // A processor's query answers: a few view partitions of up to 1,000 items.
  static constexpr Limits QueryLimits(size_t max_bytes) { return Limits{max_bytes, 1000}; }
  // A processor's point reads: the items its changes look up (one per key),
  // such as the author of every comment and like, in no order.
  static constexpr Limits ItemLimits(size_t max_bytes) { return Limits{max_bytes, 1}; }

  // The current generation of what an answer depends on: of a partition
  // (queries: `id` is empty) or of an item (point reads); nullopt when none
  // is kept, which turns the memo off for it.
  using GenerationFn = std::function<std::optional<uint64_t>(
      const std::string& container, const std::string& partition_key, const std::string& id)>;
  // An answer: the items of a query, or of a point read (none: not found),
  // each shared on its own (ViewContext::SharedItems).
  using Item = std::shared_ptr<const boost::json::object>;
  using Items = std::shared_ptr<const std::vector<Item>>;

  ViewReadMemo(GenerationFn generation, Limits limits)
      : generation_(std::move(generation)), limits_(limits) {}

  std::optional<uint64_t> Generation(const std::string& container, const std::string& partition_key,
                                     const std::string& id = std::string()) const {
    return generation_(container, partition_key, id);
  }

  // The answer kept for `key` at `generation`; nullptr (a miss) when none is
  // kept for that generation.
  Items Find(const std::string& key, uint64_t generation);
  // Keeps `items` as the answer of `key` at `generation` (replacing any).
  // Items it shares with the answer it replaces are not measured again.
  void Keep(const std::string& key, uint64_t generation, Items items);
  void Erase(const std::string& key);

  uint64_t hits() const { return hits_.load(); }
  uint64_t misses() const { return misses_.load(); }
  // The estimated memory of what it keeps (at most Limits::max_bytes).
  uint64_t bytes() const { return bytes_.load(); }

  // What an answer of `items` kept for `key` is counted as.
  // Items shared with other answers count in each.
  static size_t EntryBytes(const std::string& key, const std::vector<Item>& items);
  // The same, from EntryBytes() of an answer `previous` of the same key:
  // only the items that are not in both are measured.
  static size_t EntryBytes(const std::vector<Item>& items, const std::vector<Item>& previous,
                           size_t previous_bytes);

 private:
  static size_t ItemBytes(const Item& item);

  struct Entry {
    std::string key;
    uint64_t generation;
    Items items;
    size_t bytes;  // EntryBytes()
  };
  void EraseLocked(std::list<Entry>::iterator it);

  const GenerationFn generation_;
  const Limits limits_;
  std::mutex mutex_;
  std::list<Entry> entries_;  // most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
  std::atomic<uint64_t> bytes_{0};  // of entries_; written under mutex_
  std::atomic<uint64_t> hits_{0};
  std::atomic<uint64_t> misses_{0};
};

}  // namespace feedd
