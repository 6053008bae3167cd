#include "storage/churn_flush.h"

#include <rocksdb/db.h>

#include "util/logging.h"

namespace feedd {

ChurnFlush::ChurnFlush(RocksDatabase* db, uint64_t min_dead) : db_(db), min_dead_(min_dead) {
  for (const auto& c : db_->containers()) {
    uint64_t keys = 0;
    db_->db()->GetIntProperty(c.items, "rocksdb.estimate-num-keys", &keys);
    containers_.push_back(Container{static_cast<int64_t>(keys), 0});
  }
}

void ChurnFlush::NoteCommitted(size_t index, const std::array<uint64_t, 3>& counts) {
  Container& c = containers_[index];
  c.items += static_cast<int64_t>(counts[0]) - static_cast<int64_t>(counts[2]);
  if (c.items < 0) c.items = 0;
  // A delete leaves a tombstone and kills the version it deletes.
  c.dead_since_flush += counts[1] + 2 * counts[2];
  if (c.dead_since_flush < min_dead_ || c.dead_since_flush < 2 * static_cast<uint64_t>(c.items)) {
    return;
  }
  c.dead_since_flush = 0;
  const ContainerHandle& handle = db_->containers()[index];
  rocksdb::FlushOptions options;
  options.wait = false;
  options.allow_write_stall = true;
  rocksdb::Status s = db_->db()->Flush(options, handle.items);
  if (!s.ok()) {
    FEEDD_LOG(kWarning, "storage")
        << "flushing the memtable of " << handle.spec.name << " failed: " << s.ToString();
    return;
  }
  ++flushes_;
}

}  // namespace feedd
