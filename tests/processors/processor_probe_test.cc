// The processors' probes: ProcessorProbe reports each instance's status,
// the admin tasks and the jobs, ViewCommitProbe the instances'
// commit-to-view latencies, under the names, types, labels and buckets of
// docs/metrics.md ("Processors").
#include "processors/processor_probe.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <boost/json.hpp>
#include <chrono>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "processors/view_commit_probe.h"
#include "storage/container_spec.h"
#include "storage/prepared_item.h"
#include "tests/blog_scenario.h"
#include "tests/metric_samples.h"

namespace feedd {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

using testutil::SampleValue;

class ProcessorProbeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/feedd-processor-probe-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    StoreOptions options;
    options.data_dir = dir_;
    options.sync = false;
    options.containers = BlogContainers();
    auto store = DocumentStore::Open(options);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(*store);
  }
  void TearDown() override {
    if (store_) store_->Close();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  void Create(const std::string& container, const std::string& json) {
    auto item = PrepareItem(*store_->FindContainer(container), boost::json::parse(json).as_object(),
                            std::nullopt, std::nullopt, 1 << 20);
    ASSERT_TRUE(item.ok()) << item.status().ToString();
    WriteOp op;
    op.kind = WriteOpKind::kCreate;
    op.id = item->id;
    std::string pk = item->partition_key;
    op.item = std::move(*item);
    ASSERT_TRUE(store_->Write({container, pk, {op}}).status.ok());
  }

  // Until every instance of `manager` has applied the head (their view
  // writes move it).
  void WaitApplied(const ProcessorManager& manager) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    for (bool behind = true; behind;) {
      behind = false;
      for (const auto& instance : manager.instances()) {
        behind |= instance->GetStatus().applied_lsn < store_->HeadLsn();
      }
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the processors stay behind";
      if (behind) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  void CreateUserAndPost() {
    Create("users", R"({"id":"u1","userId":"u1","type":"user","username":"alice"})");
    Create("posts", R"({"id":"p1","postId":"p1","type":"post","userId":"u1","username":"alice",)"
                    R"("content":"x","creationDate":"2026-01-01T00:00:00.000Z",)"
                    R"("commentCount":0,"likeCount":0})");
  }

  std::string dir_;
  std::unique_ptr<DocumentStore> store_;
};

TEST_F(ProcessorProbeTest, ReportsEachInstanceTheAdminTasksAndTheJobs) {
  auto manager = ProcessorManager::Create(store_.get(), BlogProcessorSettings(), false, 2);
  ASSERT_TRUE(manager.ok()) << manager.status().ToString();
  ASSERT_TRUE((*manager)->Start().ok());
  ASSERT_NO_FATAL_FAILURE(CreateUserAndPost());
  ASSERT_NO_FATAL_FAILURE(WaitApplied(**manager));
  (*manager)->Stop();  // the statuses hold still from here

  const std::vector<MetricFamily> f = ProcessorProbe(manager->get()).Collect();
  const auto counter = MetricType::Counter;
  const auto gauge = MetricType::Gauge;
  ASSERT_EQ((*manager)->instances().size(), 3u);
  for (const auto& instance : (*manager)->instances()) {
    const ProcessorStatus s = instance->GetStatus();
    const std::vector<ClientMetric::Label> l = {{"processor", s.name}};
    SCOPED_TRACE(s.name);
    EXPECT_EQ(SampleValue(f, "feedd_processor_applied_lsn", gauge, l), s.applied_lsn);
    EXPECT_EQ(SampleValue(f, "feedd_processor_lag_changes", gauge, l), s.lag_changes);
    EXPECT_EQ(SampleValue(f, "feedd_processor_parked_changes", gauge, l), s.parked);
    EXPECT_EQ(SampleValue(f, "feedd_processor_paused", gauge, l), 0);
    EXPECT_EQ(SampleValue(f, "feedd_processor_rebuilding", gauge, l), 0);
    EXPECT_GT(SampleValue(f, "feedd_processor_applies_total", counter,
                          {{"processor", s.name}, {"outcome", "applied"}})
                  .value_or(0),
              0);
    EXPECT_EQ(SampleValue(f, "feedd_processor_applies_total", counter,
                          {{"processor", s.name}, {"outcome", "applied"}}),
              s.applied);
    EXPECT_EQ(SampleValue(f, "feedd_processor_applies_total", counter,
                          {{"processor", s.name}, {"outcome", "failed"}}),
              s.errors);
    EXPECT_EQ(SampleValue(f, "feedd_processor_applies_total", counter,
                          {{"processor", s.name}, {"outcome", "parked"}}),
              s.parked_total);
    EXPECT_EQ(SampleValue(f, "feedd_processor_changes_taken_total", counter,
                          {{"processor", s.name}, {"from", "commit_path"}}),
              s.from_commit_path);
    EXPECT_EQ(SampleValue(f, "feedd_processor_changes_taken_total", counter,
                          {{"processor", s.name}, {"from", "durable_feed"}}),
              s.from_durable_feed);
    for (const auto& [why, count] : {std::pair{"outside_concern", s.passed_over_outside_concern},
                                     std::pair{"applied_already", s.passed_over_applied_already}}) {
      EXPECT_EQ(SampleValue(f, "feedd_processor_changes_passed_over_total", counter,
                            {{"processor", s.name}, {"why", why}}),
                count);
    }
    if (s.name == "usernames") {
      // user_posts' copy of the post in users is not a user. (Whether the
      // post's own change is passed over as applied already depends on
      // what else is in flight then: RuntimeTest covers that count.)
      EXPECT_GE(s.passed_over_outside_concern, 1u);
    }
    EXPECT_EQ(SampleValue(f, "feedd_processor_view_writes_total", counter, l), s.view_writes);
    EXPECT_EQ(SampleValue(f, "feedd_processor_batches_total", counter, l), s.batches);
    EXPECT_EQ(SampleValue(f, "feedd_processor_rebuilds_total", counter, l), s.rebuilds);
    EXPECT_EQ(SampleValue(f, "feedd_processor_view_collisions_total", counter, l), s.collisions);
    for (const auto& [read, counts] :
         {std::pair{"query", s.view_query_memo}, std::pair{"item", s.view_item_memo}}) {
      EXPECT_EQ(SampleValue(f, "feedd_processor_view_read_memo_bytes", gauge,
                            {{"processor", s.name}, {"read", read}}),
                counts.bytes)
          << read;
    }
    // `usernames` looked the post's author up, and kept the user.
    if (s.name == "usernames") {
      EXPECT_GT(s.view_item_memo.bytes, 0u);
    }
  }
  EXPECT_EQ(SampleValue(f, "feedd_admin_tasks_running", gauge), 0);
  for (const char* reason : {"in_progress", "too_many"}) {
    EXPECT_EQ(SampleValue(f, "feedd_admin_tasks_refused_total", counter, {{"reason", reason}}), 0)
        << reason;
  }
  EXPECT_EQ(SampleValue(f, "feedd_jobs_running", gauge), 0);
  // Every type and final state from 0, before the first job.
  for (const char* type : {"rebuild", "verify"}) {
    for (const char* state : {"cancelled", "failed", "succeeded"}) {
      EXPECT_EQ(
          SampleValue(f, "feedd_jobs_finished_total", counter, {{"type", type}, {"state", state}}),
          0)
          << type << " " << state;
    }
  }
}

TEST_F(ProcessorProbeTest, ViewCommitsLandInTheirProcessorsHistogram) {
  prometheus::Registry registry;
  ViewCommitProbe probe(registry);
  auto manager =
      ProcessorManager::Create(store_.get(), BlogProcessorSettings(), false, 2, probe.Observer());
  ASSERT_TRUE(manager.ok()) << manager.status().ToString();
  ASSERT_TRUE((*manager)->Start().ok());
  ASSERT_NO_FATAL_FAILURE(CreateUserAndPost());
  ASSERT_NO_FATAL_FAILURE(WaitApplied(**manager));
  (*manager)->Stop();

  const std::vector<double> documented = {0.001, 0.0025,
                                          0.005, 0.01,
                                          0.015, 0.02,
                                          0.025, 0.03,
                                          0.04,  0.05,
                                          0.06,  0.075,
                                          0.1,   0.15,
                                          0.25,  0.5,
                                          1,     2.5,
                                          5,     10,
                                          30,    std::numeric_limits<double>::infinity()};
  std::map<std::string, uint64_t> observed;  // processor -> commits observed
  for (const auto& family : registry.Collect()) {
    if (family.name != "feedd_processor_commit_to_view_seconds") continue;
    EXPECT_EQ(family.type, MetricType::Histogram);
    for (const auto& m : family.metric) {
      ASSERT_EQ(m.label.size(), 1u);
      EXPECT_EQ(m.label[0].name, "processor");
      std::vector<double> bounds;
      for (const auto& b : m.histogram.bucket) bounds.push_back(b.upper_bound);
      EXPECT_EQ(bounds, documented) << m.label[0].value;
      observed[m.label[0].value] = m.histogram.sample_count;
    }
  }
  // The post is copied into user_posts and feed; usernames had no post to
  // write when the user came.
  EXPECT_GE(observed["user_posts"], 1u);
  EXPECT_GE(observed["feed"], 1u);
}

}  // namespace
}  // namespace feedd
