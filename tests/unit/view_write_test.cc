// DocumentStore::SubmitView: a processor's effects across containers and
// partitions, all-or-nothing together with its retention watermark.
#include <gtest/gtest.h>

#include "storage/document_store.h"
#include "test_util.h"
#include "tests/blog_scenario.h"

namespace feedd {
namespace {

using testutil::IsOk;
using testutil::Obj;

class ViewWriteTest : public ::testing::Test {
 protected:
  void SetUp() override { Open(); }

  void Open() {
    StoreOptions options;
    options.data_dir = dir_.path();
    options.containers = BlogContainers();
    options.sync = false;
    auto store = DocumentStore::Open(options);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(*store);
  }

  WriteRequest Upsert(const std::string& container, std::string_view json) {
    auto item = PrepareItem(*store_->FindContainer(container), Obj(json), std::nullopt,
                            std::nullopt, 1 << 20);
    EXPECT_TRUE(item.ok()) << item.status().ToString();
    WriteOp op;
    op.kind = WriteOpKind::kUpsert;
    op.item = *item;
    op.origin = WriteOrigin::kProcessor;  // views are the processors' to write
    return WriteRequest{container, item->partition_key, {op}};
  }

  static WriteRequest Delete(const std::string& container, const std::string& pk,
                             const std::string& id, bool if_exists) {
    WriteOp op;
    op.kind = WriteOpKind::kDelete;
    op.id = id;
    op.if_exists = if_exists;
    op.origin = WriteOrigin::kProcessor;
    return WriteRequest{container, pk, {op}};
  }

  Lsn Acked(const std::string& name) {
    for (const auto& c : store_->Consumers()) {
      if (c.name == name) return c.acked;
    }
    return 0;
  }

  testutil::TempDir dir_;
  std::unique_ptr<DocumentStore> store_;
};

TEST_F(ViewWriteTest, AppliesEveryPartitionAndTheWatermarkTogether) {
  ASSERT_TRUE(IsOk(store_->RegisterConsumer("processor.v", 0)));
  ViewWrite view;
  view.requests.push_back(Upsert("users", R"({"id":"p1","userId":"u1","type":"post"})"));
  view.requests.push_back(Upsert("feed", R"({"id":"p1","type":"post"})"));
  view.requests.push_back(Delete("users", "u9", "p9", /*if_exists=*/true));
  view.consumer = "processor.v";
  view.consumer_acked = 7;
  WriteResult r = store_->WriteView(std::move(view));
  ASSERT_TRUE(IsOk(r.status));
  ASSERT_EQ(r.results.size(), 3u);
  EXPECT_EQ(r.results[2].http_status, 404);  // tolerated: nothing to delete
  EXPECT_EQ(store_->HeadLsn(), 2u);          // two changes, none for the no-op
  std::string item;
  EXPECT_TRUE(IsOk(store_->Read("users", "u1", "p1", &item)));
  EXPECT_TRUE(IsOk(store_->Read("feed", "post", "p1", &item)));
  EXPECT_EQ(Acked("processor.v"), 7u);

  // The watermark is durable with the view.
  store_->Close();
  store_.reset();
  Open();
  EXPECT_EQ(Acked("processor.v"), 7u);
}

TEST_F(ViewWriteTest, AFailingOpLeavesNothingAndKeepsTheWatermark) {
  ASSERT_TRUE(IsOk(store_->RegisterConsumer("processor.v", 3)));
  ViewWrite view;
  view.requests.push_back(Upsert("users", R"({"id":"p1","userId":"u1"})"));
  view.requests.push_back(Delete("feed", "post", "missing", /*if_exists=*/false));
  view.consumer = "processor.v";
  view.consumer_acked = 9;
  WriteResult r = store_->WriteView(std::move(view));
  EXPECT_EQ(r.status.code(), ErrorCode::kNotFound);
  EXPECT_EQ(r.failed_index, 1);
  std::string item;
  EXPECT_EQ(store_->Read("users", "u1", "p1", &item).code(), ErrorCode::kNotFound);
  EXPECT_EQ(store_->HeadLsn(), 0u);
  EXPECT_EQ(Acked("processor.v"), 3u);
}

TEST_F(ViewWriteTest, WatermarkAloneMoves) {
  ASSERT_TRUE(IsOk(store_->RegisterConsumer("processor.v", 0)));
  ViewWrite view;
  view.consumer = "processor.v";
  view.consumer_acked = 5;
  ASSERT_TRUE(IsOk(store_->WriteView(std::move(view)).status));
  EXPECT_EQ(Acked("processor.v"), 5u);
  EXPECT_EQ(store_->HeadLsn(), 0u);
}

TEST_F(ViewWriteTest, UnregisteredConsumerIsRefused) {
  ViewWrite view;
  view.consumer = "nobody";
  view.consumer_acked = 1;
  EXPECT_EQ(store_->WriteView(std::move(view)).status.code(), ErrorCode::kInvalidRequest);
}

// A worker's copy carries the source LSN it shows; an older one arriving
// late (a worker that lost its partitions mid-apply) must not win.
TEST_F(ViewWriteTest, SourceLsnConditionKeepsTheNewestSourceVersion) {
  auto copy = [&](Lsn source_lsn, const std::string& title) {
    auto item = PrepareDerivedItem(*store_->FindContainer("users"),
                                   Obj(R"({"id":"p1","userId":"u1","title":")" + title +
                                       R"(","_sourceLsn":)" + std::to_string(source_lsn) + "}"),
                                   1 << 20);
    EXPECT_TRUE(item.ok()) << item.status().ToString();
    WriteOp op;
    op.kind = WriteOpKind::kUpsert;
    op.item = *item;
    op.source_lsn = source_lsn;
    return store_->Write(WriteRequest{"users", "u1", {op}});
  };
  auto title = [&] {
    std::string json;
    EXPECT_TRUE(IsOk(store_->Read("users", "u1", "p1", &json)));
    return std::string(Obj(json).at("title").as_string());
  };

  WriteResult first = copy(10, "v10");
  ASSERT_TRUE(IsOk(first.status));
  EXPECT_EQ(first.results[0].http_status, 201);
  WriteResult newer = copy(12, "v12");
  ASSERT_TRUE(IsOk(newer.status));
  EXPECT_EQ(newer.results[0].http_status, 200);
  const Lsn head = store_->HeadLsn();

  for (Lsn stale : {Lsn{11}, Lsn{12}}) {
    WriteResult late = copy(stale, "stale");
    ASSERT_TRUE(IsOk(late.status)) << "a superseded write is a no-op, not an error";
    EXPECT_EQ(late.results[0].http_status, 412);
    EXPECT_EQ(late.last_lsn, 0u);
  }
  EXPECT_EQ(title(), "v12");
  EXPECT_EQ(store_->HeadLsn(), head) << "no change record for a superseded write";
  ASSERT_TRUE(IsOk(copy(13, "v13").status));
  EXPECT_EQ(title(), "v13");
}

}  // namespace
}  // namespace feedd
