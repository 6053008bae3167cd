// ItemGenerations: a counter per item that grows with every change to the
// item, for readers that keep what they read of an item and must know when
// it is no longer current (the processors' point-read memo,
// processors/view_read_memo.h). A partition's generation (QueryCache) is
// too coarse for that: `user_posts` writes a copy of every post into its
// author's partition of `users`, so the author's own item would look
// changed with every like of every post of theirs.
//
// Each container has kSlots counters of its own, into which its items hash;
// items sharing one only cost extra misses (the counter grows by their
// changes too, never by fewer than the item's). Containers do not share
// counters, so a bulk import into one (SF 1: 175 M posts, comments and
// likes, every counter of one shared array bumped every few seconds) does
// not keep a memo of another's items (the users `usernames` reads) missing.
// The commit thread adds one to the counter of each item a group changed,
// after RocksDB made the group visible and before the writes are
// acknowledged. A reader that reads the counter before the item and keeps
// the item with that value holds a current item for as long as the counter
// is unchanged.
//
// Thread-safety: all methods are thread-safe.
// Memory: kSlots * 8 bytes (2 MiB) per container.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

namespace feedd {

class ItemGenerations {
 public:
  // `containers`: how many there are; container indexes are below it.
  explicit ItemGenerations(size_t containers);

  // REQUIRES (both): container_index < `containers`.
  // Read before the item.
  uint64_t Get(size_t container_index, std::string_view partition_key, std::string_view id) const;
  // After a change to the item is visible, before it is acknowledged.
  // Returns the item's generation right after it.
  uint64_t Bump(size_t container_index, std::string_view partition_key, std::string_view id);

 private:
  static constexpr size_t kSlots = size_t{1} << 18;
  static size_t SlotOf(size_t container_index, std::string_view partition_key, std::string_view id);

  std::unique_ptr<std::atomic<uint64_t>[]> counters_;
};

}  // namespace feedd
