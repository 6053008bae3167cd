// CommitProbe: the group-commit histograms of docs/metrics.md ("Storage"):
// requests per group commit and the seconds RocksDB's write (and fsync)
// took, observed as the commit thread reports each group
// (StoreOptions::on_group_commit), the seconds each sync of the
// write-ahead log took (StoreOptions::on_wal_sync), and the seconds each
// write waited in the commit queue (StoreOptions::on_queue_wait).
//
// Thread-safety: the functions Observer(), WalSyncObserver() and
// QueueWaitObserver() return may be called from any thread.
// Ownership: registers its families in the registry, which must outlive the
// probe and the function Observer() returns; the probe must outlive the
// store it observes.
#pragma once

#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <cstddef>
#include <functional>

namespace feedd {

class CommitProbe {
 public:
  explicit CommitProbe(prometheus::Registry& registry);

  // For StoreOptions::on_group_commit.
  std::function<void(size_t requests, double seconds)> Observer();
  // For StoreOptions::on_wal_sync.
  std::function<void(double seconds)> WalSyncObserver();
  // For StoreOptions::on_queue_wait.
  std::function<void(double seconds)> QueueWaitObserver();

 private:
  prometheus::Histogram& group_requests_;
  prometheus::Histogram& commit_seconds_;
  prometheus::Histogram& wal_sync_seconds_;
  prometheus::Histogram& queue_wait_seconds_;
};

}  // namespace feedd
