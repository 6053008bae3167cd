// CommitProbe: every group commit a store reports lands in the histograms
// of docs/metrics.md, with their documented buckets.
#include "storage/commit_probe.h"

#include <gtest/gtest.h>

#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "storage/container_spec.h"
#include "storage/prepared_item.h"
#include "test_util.h"
#include "tests/blog_scenario.h"

namespace feedd {
namespace {

using prometheus::MetricFamily;
using prometheus::MetricType;
using testutil::Obj;
using testutil::TempDir;

const prometheus::ClientMetric::Histogram* Histogram(const std::vector<MetricFamily>& families,
                                                     const std::string& name) {
  for (const auto& f : families) {
    if (f.name == name && f.type == MetricType::Histogram && f.metric.size() == 1) {
      return &f.metric[0].histogram;
    }
  }
  return nullptr;
}

std::vector<double> Bounds(const prometheus::ClientMetric::Histogram& h) {
  std::vector<double> bounds;
  for (const auto& b : h.bucket) bounds.push_back(b.upper_bound);
  return bounds;
}

// Opens a store on `dir` observed by `probe`, writes two users one after
// the other, and closes it.
void WriteTwoUsers(CommitProbe& probe, const std::string& dir, bool sync) {
  StoreOptions o;
  o.data_dir = dir;
  o.containers = BlogContainers();
  o.sync = sync;
  o.on_group_commit = probe.Observer();
  o.on_wal_sync = probe.WalSyncObserver();
  o.on_queue_wait = probe.QueueWaitObserver();
  auto store = DocumentStore::Open(o);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  for (const char* id : {"u1", "u2"}) {
    auto item = PrepareItem(*(*store)->FindContainer("users"),
                            Obj(std::string(R"({"id":")") + id + R"(","userId":")" + id + "\"}"),
                            std::nullopt, std::nullopt, 1 << 20);
    ASSERT_TRUE(item.ok()) << item.status().ToString();
    WriteOp op;
    op.kind = WriteOpKind::kCreate;
    op.id = id;
    op.item = std::move(*item);
    ASSERT_TRUE((*store)->Write({"users", id, {op}}).status.ok());
  }
  (*store)->Close();
}

TEST(CommitProbeTest, ObservesTheGroupCommitsOfAStore) {
  prometheus::Registry registry;
  CommitProbe probe(registry);
  TempDir dir;
  ASSERT_NO_FATAL_FAILURE(WriteTwoUsers(probe, dir.path(), /*sync=*/false));

  const std::vector<MetricFamily> families = registry.Collect();
  const auto* groups = Histogram(families, "feedd_storage_commit_group_requests");
  const auto* seconds = Histogram(families, "feedd_storage_commit_duration_seconds");
  ASSERT_NE(groups, nullptr);
  ASSERT_NE(seconds, nullptr);
  // Two writes one after the other: two groups of one request each.
  EXPECT_EQ(groups->sample_count, 2u);
  EXPECT_EQ(groups->sample_sum, 2);
  EXPECT_EQ(seconds->sample_count, 2u);
  EXPECT_GT(seconds->sample_sum, 0);
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(Bounds(*groups), (std::vector<double>{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, inf}));
  EXPECT_EQ(Bounds(*seconds), (std::vector<double>{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                                   0.01, 0.025, 0.05, 0.1, 0.25, 1, inf}));
  // Each write waited in the commit queue once.
  const auto* waits = Histogram(families, "feedd_storage_commit_queue_wait_seconds");
  ASSERT_NE(waits, nullptr);
  EXPECT_EQ(waits->sample_count, 2u);
}

// Each wait lands in the first bucket whose bound is at least the wait.
TEST(CommitProbeTest, PutsEachQueueWaitInItsBucket) {
  prometheus::Registry registry;
  CommitProbe probe(registry);
  const std::vector<double> waits = {0.00003, 0.0003, 0.001, 0.001, 2.0};
  const auto observe = probe.QueueWaitObserver();
  for (double wait : waits) observe(wait);

  const std::vector<MetricFamily> families = registry.Collect();
  const auto* h = Histogram(families, "feedd_storage_commit_queue_wait_seconds");
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->sample_count, 5u);
  EXPECT_DOUBLE_EQ(h->sample_sum, 2.00233);
  const double inf = std::numeric_limits<double>::infinity();
  ASSERT_EQ(Bounds(*h), (std::vector<double>{0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                             0.01, 0.025, 0.05, 0.1, 0.25, 1, inf}));
  std::vector<uint64_t> cumulative;
  for (const auto& b : h->bucket) cumulative.push_back(b.cumulative_count);
  EXPECT_EQ(cumulative, (std::vector<uint64_t>{1, 1, 1, 2, 4, 4, 4, 4, 4, 4, 4, 4, 4, 5}));
}

// With storage.sync every acknowledged write synced the WAL first.
TEST(CommitProbeTest, ObservesEverySyncOfTheWal) {
  prometheus::Registry registry;
  CommitProbe probe(registry);
  TempDir dir;
  ASSERT_NO_FATAL_FAILURE(WriteTwoUsers(probe, dir.path(), /*sync=*/true));

  const std::vector<MetricFamily> families = registry.Collect();
  const auto* syncs = Histogram(families, "feedd_storage_wal_sync_duration_seconds");
  ASSERT_NE(syncs, nullptr);
  EXPECT_GE(syncs->sample_count, 2u);
  EXPECT_GT(syncs->sample_sum, 0);
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(Bounds(*syncs), (std::vector<double>{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                                 0.01, 0.025, 0.05, 0.1, 0.25, 1, 2.5, inf}));
}

}  // namespace
}  // namespace feedd
