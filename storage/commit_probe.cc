#include "storage/commit_probe.h"

namespace feedd {
namespace {

const prometheus::Histogram::BucketBoundaries kGroupSizes = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512};
const prometheus::Histogram::BucketBoundaries kCommitSeconds = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1};
// The disk's own: seconds-long syncs happen on a busy shared disk.
const prometheus::Histogram::BucketBoundaries kWalSyncSeconds = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 2.5};

// A write waits for the groups before it: about one commit, or several
// when the commit thread falls behind.
const prometheus::Histogram::BucketBoundaries kQueueWaitSeconds = {
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1};

}  // namespace

CommitProbe::CommitProbe(prometheus::Registry& registry)
    : group_requests_(prometheus::BuildHistogram()
                          .Name("feedd_storage_commit_group_requests")
                          .Help("Write requests per group commit (one WriteBatch, one fsync)")
                          .Register(registry)
                          .Add({}, kGroupSizes)),
      commit_seconds_(prometheus::BuildHistogram()
                          .Name("feedd_storage_commit_duration_seconds")
                          .Help("RocksDB write (and fsync when storage.sync) of one group")
                          .Register(registry)
                          .Add({}, kCommitSeconds)),
      wal_sync_seconds_(prometheus::BuildHistogram()
                            .Name("feedd_storage_wal_sync_duration_seconds")
                            .Help("One sync (fdatasync) of RocksDB's write-ahead log")
                            .Register(registry)
                            .Add({}, kWalSyncSeconds)),
      queue_wait_seconds_(
          prometheus::BuildHistogram()
              .Name("feedd_storage_commit_queue_wait_seconds")
              .Help("Time a write (a client's request or a processor's view write) waited in the "
                    "commit queue for the groups before it")
              .Register(registry)
              .Add({}, kQueueWaitSeconds)) {}

std::function<void(size_t, double)> CommitProbe::Observer() {
  return [this](size_t requests, double seconds) {
    group_requests_.Observe(static_cast<double>(requests));
    commit_seconds_.Observe(seconds);
  };
}

std::function<void(double)> CommitProbe::WalSyncObserver() {
  return [this](double seconds) { wal_sync_seconds_.Observe(seconds); };
}

std::function<void(double)> CommitProbe::QueueWaitObserver() {
  return [this](double seconds) { queue_wait_seconds_.Observe(seconds); };
}

}  // namespace feedd
