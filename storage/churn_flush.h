// ChurnFlush: flushes the memtable of a container whose recent writes are
// mostly dead entries - deletes and overwritten versions - compared with the
// items it holds. A small container that is rewritten all the time (the
// capped `feed` view: every new post enters and evicts one) otherwise keeps
// thousands of dead entries in its memtable, and every scan of a partition
// steps over all of them: Q6 fell from ~8,700 to ~1,100 queries/s after 30 s
// of the scenario's write mix, and stays at 3,100-7,400 with this rule
// (docs/benchmarks.md). Flushing moves them to an SST file, where compaction
// drops them (RocksDatabase marks files with many deletes for compaction).
//
// Rule: after at least `min_dead` (1,024) dead entries (a replace leaves one,
// a delete two: its tombstone and the version it deletes) in a
// container since its last flush, and at least twice as many as the items it
// holds (estimated once at open, then kept by creates minus deletes), its
// memtable is flushed in the background. Large containers such as `posts`
// never qualify.
//
// Thread-safety: NoteCommitted() from the commit thread only; flushes() from
// any thread.
// Ownership: borrows the RocksDatabase.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <vector>

#include "storage/rocks_database.h"

namespace feedd {

class ChurnFlush {
 public:
  static constexpr uint64_t kDefaultMinDead = 1024;

  explicit ChurnFlush(RocksDatabase* db, uint64_t min_dead = kDefaultMinDead);

  // After a committed group: `counts` of container `index` by op (create,
  // replace, delete).
  void NoteCommitted(size_t index, const std::array<uint64_t, 3>& counts);

  // Memtable flushes this rule asked for.
  uint64_t flushes() const { return flushes_.load(); }

 private:
  struct Container {
    int64_t items = 0;  // estimate
    uint64_t dead_since_flush = 0;
  };

  RocksDatabase* const db_;
  const uint64_t min_dead_;
  std::vector<Container> containers_;
  std::atomic<uint64_t> flushes_{0};
};

}  // namespace feedd
