// ViewQueryMemo: the whole answers of a processor's single-partition queries,
// kept between its batches, each valid for one generation of its partition
// (DocumentStore::PartitionGeneration). A `top_n` view reads its members for
// every new post; with the memo it reads them from the store once, and then
// carries them forward with its own writes (StagedReadsViewContext).
//
// An answer is kept only for the generation at which it is the committed
// state of the partition, and served only while the partition's generation
// is still that one: any change by anyone (or a change to a partition that
// shares the counter) makes it a miss, never a stale answer.
//
// Bounds: at most kMaxEntries answers (least recently used dropped first),
// each of at most kMaxItems items; larger answers are not kept.
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
#include <vector>

namespace feedd {

class ViewQueryMemo {
 public:
  static constexpr size_t kMaxEntries = 16;
  static constexpr size_t kMaxItems = 1000;

  // The current generation of a partition (DocumentStore::PartitionGeneration);
  // nullopt when none is kept, which turns the memo off for it.
  using GenerationFn = std::function<std::optional<uint64_t>(const std::string& container,
                                                             const std::string& partition_key)>;

  explicit ViewQueryMemo(GenerationFn generation) : generation_(std::move(generation)) {}

  std::optional<uint64_t> Generation(const std::string& container,
                                     const std::string& partition_key) const {
    return generation_(container, partition_key);
  }

  using Items = std::shared_ptr<const std::vector<boost::json::object>>;

  // The answer kept for `key` at `generation`; nullptr (a miss) when none is
  // kept for that generation.
  Items Find(const std::string& key, uint64_t generation);
  // Keeps `items` as the answer of `key` at `generation` (replacing any).
  void Keep(const std::string& key, uint64_t generation, Items items);
  void Erase(const std::string& key);

  uint64_t hits() const { return hits_.load(); }
  uint64_t misses() const { return misses_.load(); }

 private:
  struct Entry {
    std::string key;
    uint64_t generation;
    Items items;
  };

  const GenerationFn generation_;
  std::mutex mutex_;
  std::list<Entry> entries_;  // most recently used first
  std::atomic<uint64_t> hits_{0};
  std::atomic<uint64_t> misses_{0};
};

}  // namespace feedd
