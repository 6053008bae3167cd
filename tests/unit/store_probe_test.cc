// StoreProbe: what a scrape reports is what the store counted - writes by
// container and op, requests by outcome, the state, the feed's head - under
// the names, types and labels of docs/metrics.md.
#include "storage/store_probe.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "storage/container_spec.h"
#include "storage/prepared_item.h"
#include "test_util.h"
#include "tests/blog_scenario.h"

namespace feedd {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;
using testutil::Obj;
using testutil::TempDir;

class StoreProbeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StoreOptions o;
    o.data_dir = dir_.path();
    o.containers = BlogContainers();
    o.sync = false;
    o.block_cache_bytes = 8u << 20;
    o.write_buffer_bytes = 4u << 20;
    Result<std::unique_ptr<DocumentStore>> r = DocumentStore::Open(o);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    store_ = std::move(r.value());
  }
  void TearDown() override {
    if (store_) store_->Close();
  }

  WriteResult Write(WriteOpKind kind, std::string_view body) {
    Result<PreparedItem> item = PrepareItem(*store_->FindContainer("users"), Obj(body),
                                            std::nullopt, std::nullopt, 1 << 20);
    EXPECT_TRUE(item.ok()) << item.status().ToString();
    WriteOp op;
    op.kind = kind;
    op.id = item->id;
    WriteRequest request;
    request.container = "users";
    request.partition_key = item->partition_key;
    if (kind != WriteOpKind::kDelete) op.item = std::move(*item);
    request.ops.push_back(std::move(op));
    return store_->Write(std::move(request));
  }

  TempDir dir_;
  std::unique_ptr<DocumentStore> store_;
};

const MetricFamily* Find(const std::vector<MetricFamily>& families, const std::string& name) {
  for (const auto& f : families) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

// The value of the sample of `name` with exactly `labels`; nullopt when none.
std::optional<double> Value(const std::vector<MetricFamily>& families, const std::string& name,
                            const std::vector<ClientMetric::Label>& labels = {}) {
  const MetricFamily* family = Find(families, name);
  if (family == nullptr) return std::nullopt;
  for (const auto& m : family->metric) {
    if (m.label == labels) {
      return family->type == MetricType::Counter ? m.counter.value : m.gauge.value;
    }
  }
  return std::nullopt;
}

TEST_F(StoreProbeTest, ReportsWhatTheStoreCounted) {
  const char* user = R"({"id":"u1","userId":"u1","username":"a"})";
  ASSERT_TRUE(Write(WriteOpKind::kCreate, user).status.ok());
  ASSERT_TRUE(
      Write(WriteOpKind::kUpsert, R"({"id":"u1","userId":"u1","username":"b"})").status.ok());
  ASSERT_FALSE(Write(WriteOpKind::kCreate, user).status.ok());  // the id exists: rejected
  ASSERT_TRUE(Write(WriteOpKind::kDelete, user).status.ok());

  std::vector<MetricFamily> f = StoreProbe(store_.get()).Collect();
  EXPECT_EQ(Value(f, "feedd_storage_writes_total", {{"container", "users"}, {"op", "create"}}), 1);
  EXPECT_EQ(Value(f, "feedd_storage_writes_total", {{"container", "users"}, {"op", "replace"}}), 1);
  EXPECT_EQ(Value(f, "feedd_storage_writes_total", {{"container", "users"}, {"op", "delete"}}), 1);
  EXPECT_EQ(Value(f, "feedd_storage_write_requests_total", {{"outcome", "committed"}}), 3);
  EXPECT_EQ(Value(f, "feedd_storage_write_requests_total", {{"outcome", "rejected"}}), 1);
  EXPECT_EQ(Value(f, "feedd_storage_write_requests_total", {{"outcome", "failed"}}), 0);
  EXPECT_EQ(Value(f, "feedd_feed_head_lsn"), 3);
  EXPECT_EQ(Value(f, "feedd_storage_healthy"), 1);
  EXPECT_EQ(Value(f, "feedd_storage_state", {{"state", "writable"}}), 1);
  for (const char* state : {"no_space", "recovering", "failed"}) {
    EXPECT_EQ(Value(f, "feedd_storage_state", {{"state", state}}), 0) << state;
  }
  EXPECT_EQ(Value(f, "feedd_storage_min_free_bytes"),
            static_cast<double>(store_->options().min_free_bytes));
  EXPECT_GT(Value(f, "feedd_disk_size_bytes").value_or(0), 0);

  ASSERT_NE(Find(f, "feedd_storage_writes_total"), nullptr);
  EXPECT_EQ(Find(f, "feedd_storage_writes_total")->type, MetricType::Counter);
  ASSERT_NE(Find(f, "feedd_storage_items"), nullptr);
  EXPECT_EQ(Find(f, "feedd_storage_items")->type, MetricType::Gauge);
}

}  // namespace
}  // namespace feedd
