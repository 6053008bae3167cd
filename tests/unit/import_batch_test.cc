// Unit tests of the bulk-import path of DocumentStore (SubmitImport,
// storage/write_request.h ImportBatch) on a real RocksDB database in a fresh
// temporary directory: contiguous LSNs, change records marked as imports,
// index entries, items that fail alone, skip-existing semantics, and
// publication of unsynced batches only once the WAL is synced.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "storage/document_store.h"
#include "storage/prepared_item.h"
#include "tests/unit/test_util.h"
#include "util/clock.h"

namespace feedd {
namespace {

using testutil::HasCode;
using testutil::IsOk;
using testutil::Json;
using testutil::Obj;
using testutil::Ptr;
using testutil::TempDir;

constexpr size_t kMaxItem = 2 * 1024 * 1024;

std::vector<ContainerSpec> Containers() {
  std::vector<ContainerSpec> c;
  c.push_back(ContainerSpec{"orders", "/customer", {"/status"}});
  c.push_back(ContainerSpec{"views", "/k", {}, ContainerWriters::kProcessors});
  return c;
}

class ImportBatchTest : public ::testing::Test {
 protected:
  void SetUp() override { Open(Options()); }
  void TearDown() override {
    if (store_) store_->Close();
  }

  StoreOptions Options(bool sync = false) {
    StoreOptions o;
    o.data_dir = dir_.path();
    o.containers = Containers();
    o.sync = sync;
    o.clock = &clock_;
    o.retention_interval_ms = 3600 * 1000;
    o.block_cache_bytes = 8u << 20;
    o.write_buffer_bytes = 4u << 20;
    return o;
  }

  void Open(const StoreOptions& options) {
    if (store_) store_->Close();
    store_.reset();
    Result<std::unique_ptr<DocumentStore>> r = DocumentStore::Open(options);
    if (!r.ok()) throw std::runtime_error("Open: " + r.status().ToString());
    store_ = std::move(r.value());
  }

  // One import request for `body` (an orders item), as the import route
  // builds it: a create that skips an existing item, marked as imported.
  WriteRequest ImportRequest(std::string_view body, bool skip_if_exists = true) {
    Result<PreparedItem> item = PrepareItem(*store_->FindContainer("orders"), Obj(body),
                                            std::nullopt, std::nullopt, kMaxItem);
    if (!item.ok()) throw std::runtime_error(item.status().ToString());
    WriteOp op;
    op.kind = WriteOpKind::kCreate;
    op.id = item->id;
    op.skip_if_exists = skip_if_exists;
    op.imported = true;
    WriteRequest request;
    request.container = "orders";
    request.partition_key = item->partition_key;
    op.item = std::move(*item);
    request.ops.push_back(std::move(op));
    return request;
  }

  // As ImportRequest, with ifExists=replace: an upsert.
  WriteRequest Upsert(std::string_view body) {
    WriteRequest request = ImportRequest(body, /*skip_if_exists=*/false);
    request.ops[0].kind = WriteOpKind::kUpsert;
    return request;
  }

  static std::string Order(int i, std::string_view status = "open") {
    return R"({"id":"o)" + std::to_string(i) + R"(","customer":"c)" + std::to_string(i % 7) +
           R"(","status":")" + std::string(status) + R"("})";
  }

  ImportBatch Orders(int from, int to, bool sync = true) {
    ImportBatch batch;
    batch.sync = sync;
    for (int i = from; i < to; ++i) batch.requests.push_back(ImportRequest(Order(i)));
    return batch;
  }

  std::vector<ChangeRecord> Feed() { return testutil::WholeFeed(*store_); }

  // Ids of the orders found through the /status index with that value.
  std::set<std::string> ByStatus(std::string_view status) {
    std::set<std::string> ids;
    QuerySpec spec;
    spec.filters.push_back(FieldFilter{Ptr("/status"), boost::json::value(status)});
    spec.limit = 1000;
    QueryCost cost;
    Result<QueryResult> r = store_->Query("orders", spec, &cost);
    if (!r.ok()) throw std::runtime_error(r.status().ToString());
    EXPECT_EQ(cost.index_entries_read, r->items.size()) << "not answered from the index";
    for (const std::string& item : r->items) {
      ids.insert(std::string(Json(item).as_object().at("id").as_string()));
    }
    return ids;
  }

  TempDir dir_;
  ManualClock clock_{1'700'000'000'000ull};
  std::unique_ptr<DocumentStore> store_;
};

TEST_F(ImportBatchTest, EveryItemGetsTheNextLsnAChangeRecordMarkedAsImportAndItsIndexEntries) {
  WriteRequest before = ImportRequest(Order(1000, "closed"));
  before.ops[0].imported = false;
  ASSERT_TRUE(IsOk(store_->Write(std::move(before)).status));  // LSN 1

  ImportResult r = store_->WriteImport(Orders(0, 300));
  ASSERT_TRUE(IsOk(r.status));
  ASSERT_EQ(r.results.size(), 300u);
  for (size_t i = 0; i < r.results.size(); ++i) {
    ASSERT_TRUE(IsOk(r.results[i].status)) << i;
    EXPECT_EQ(r.results[i].results.at(0).http_status, 201);
    EXPECT_EQ(r.results[i].last_lsn, 2 + i);  // contiguous, in line order
  }
  EXPECT_EQ(store_->HeadLsn(), 301u);

  std::vector<ChangeRecord> feed = Feed();
  ASSERT_EQ(feed.size(), 301u);
  for (size_t i = 0; i < feed.size(); ++i) {
    EXPECT_EQ(feed[i].lsn, i + 1);
    EXPECT_EQ(feed[i].op, ChangeOp::kCreate);
    boost::json::object envelope = Json(feed[i].envelope_json).as_object();
    if (i == 0) {
      EXPECT_FALSE(envelope.contains("import")) << feed[i].envelope_json;
      continue;
    }
    EXPECT_EQ(envelope.at("import"), boost::json::value(true)) << feed[i].envelope_json;
    EXPECT_EQ(feed[i].id, "o" + std::to_string(i - 1));
    EXPECT_TRUE(envelope.at("before").is_null());
    EXPECT_EQ(envelope.at("after").as_object().at("_lsn").to_number<uint64_t>(), feed[i].lsn);
  }

  std::set<std::string> open = ByStatus("open");
  EXPECT_EQ(open.size(), 300u);
  EXPECT_TRUE(open.count("o0") && open.count("o299"));
  EXPECT_EQ(ByStatus("closed"), std::set<std::string>{"o1000"});
}

TEST_F(ImportBatchTest, AnExistingItemIsSkippedWithoutAChangeSoARerunDuplicatesNothing) {
  ASSERT_TRUE(IsOk(store_->WriteImport(Orders(0, 50)).status));
  const Lsn head = store_->HeadLsn();
  std::string first;
  ASSERT_TRUE(IsOk(store_->Read("orders", "c3", "o3", &first)));

  // The re-run of a crashed import: the first 50 are there, 50 more are not.
  ImportBatch rerun = Orders(0, 100);
  rerun.requests[3] = ImportRequest(Order(3, "changed"));
  ImportResult r = store_->WriteImport(std::move(rerun));
  ASSERT_TRUE(IsOk(r.status));
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(IsOk(r.results[i].status)) << i;
    EXPECT_EQ(r.results[i].results.at(0).http_status, i < 50 ? 409 : 201) << i;
    EXPECT_EQ(r.results[i].last_lsn, i < 50 ? 0 : head + 1 + (i - 50)) << i;
  }
  EXPECT_EQ(store_->HeadLsn(), head + 50);
  std::string again;
  ASSERT_TRUE(IsOk(store_->Read("orders", "c3", "o3", &again)));
  EXPECT_EQ(again, first);  // left as it was
  EXPECT_EQ(Feed().size(), 100u);
  EXPECT_EQ(ByStatus("open").size(), 100u);
  EXPECT_TRUE(ByStatus("changed").empty());
}

// Import groups reuse their WriteBatch buffers: nothing of a bigger earlier
// batch is written again with a smaller later one (a deleted item stays
// deleted, the head and the feed are the later batch's).
TEST_F(ImportBatchTest, ASmallerBatchAfterABigOneWritesOnlyItsOwnRecords) {
  ASSERT_TRUE(IsOk(store_->WriteImport(Orders(0, 200)).status));
  WriteOp remove;
  remove.kind = WriteOpKind::kDelete;
  remove.id = "o3";
  ASSERT_TRUE(IsOk(store_->Write(WriteRequest{"orders", "c3", {remove}}).status));
  ASSERT_TRUE(IsOk(store_->WriteImport(Orders(200, 202)).status));
  EXPECT_EQ(store_->HeadLsn(), 203u);
  std::string json;
  EXPECT_TRUE(HasCode(store_->Read("orders", "c3", "o3", &json), ErrorCode::kNotFound));
  EXPECT_EQ(Feed().size(), 203u);
  EXPECT_EQ(ByStatus("open").size(), 201u);
  Open(Options());  // and so it stays, from the WAL
  EXPECT_EQ(store_->HeadLsn(), 203u);
  EXPECT_TRUE(HasCode(store_->Read("orders", "c3", "o3", &json), ErrorCode::kNotFound));
  EXPECT_EQ(Feed().size(), 203u);
}

TEST_F(ImportBatchTest, ADuplicateIdWithinOneBatchIsSkippedOrAConflict) {
  ImportBatch batch;
  batch.requests.push_back(ImportRequest(Order(1)));
  batch.requests.push_back(ImportRequest(Order(1, "second")));
  batch.requests.push_back(ImportRequest(Order(1, "third"), /*skip_if_exists=*/false));
  ImportResult r = store_->WriteImport(std::move(batch));
  ASSERT_TRUE(IsOk(r.status));
  EXPECT_EQ(r.results[0].results.at(0).http_status, 201);
  EXPECT_EQ(r.results[1].results.at(0).http_status, 409);
  EXPECT_TRUE(HasCode(r.results[2].status, ErrorCode::kConflict)) << r.results[2].status.ToString();
  EXPECT_EQ(store_->HeadLsn(), 1u);
  EXPECT_EQ(ByStatus("open"), std::set<std::string>{"o1"});
}

// An import group reads the stored versions of its items before it writes
// them, holding at most StoreOptions::import_prefetch_bytes of them; past
// that bound the rest are read one by one. Either way a replaced item gets
// its stored version as the before-image, and its old index entry goes.
TEST_F(ImportBatchTest, ItemsPastThePrefetchBoundAreReadOneByOne) {
  for (size_t bound : {size_t{1}, StoreOptions().import_prefetch_bytes}) {
    SCOPED_TRACE("import_prefetch_bytes " + std::to_string(bound));
    TempDir dir;
    StoreOptions options = Options();
    options.data_dir = dir.path();
    options.import_prefetch_bytes = bound;  // 1: the first MultiGet's 32 items only
    Open(options);
    ASSERT_TRUE(IsOk(store_->WriteImport(Orders(0, 100)).status));
    ImportBatch replace;
    for (int i = 0; i < 100; ++i) replace.requests.push_back(Upsert(Order(i, "closed")));
    ImportResult r = store_->WriteImport(std::move(replace));
    ASSERT_TRUE(IsOk(r.status));
    for (int i = 0; i < 100; ++i) {
      ASSERT_TRUE(IsOk(r.results[i].status)) << i;
      EXPECT_EQ(r.results[i].results.at(0).http_status, 200) << i;
    }
    std::vector<ChangeRecord> feed = Feed();
    ASSERT_EQ(feed.size(), 200u);
    for (size_t i = 100; i < 200; ++i) {
      EXPECT_EQ(feed[i].op, ChangeOp::kReplace) << i;
      boost::json::object envelope = Json(feed[i].envelope_json).as_object();
      EXPECT_EQ(envelope.at("before").at("status"), "open") << i;
      EXPECT_EQ(envelope.at("after").at("status"), "closed") << i;
    }
    EXPECT_TRUE(ByStatus("open").empty());
    EXPECT_EQ(ByStatus("closed").size(), 100u);
    store_->Close();  // before its directory goes
    store_.reset();
  }
}

// An import group is written in key order; the records of one key keep
// the order they were made in, so an item replaced by later lines of its
// own batch ends as the last line, with only that line's index entry.
TEST_F(ImportBatchTest, AnItemReplacedWithinItsOwnBatchEndsAsItsLastLine) {
  ImportBatch batch;
  batch.requests.push_back(Upsert(Order(1)));
  batch.requests.push_back(Upsert(Order(1, "closed")));
  batch.requests.push_back(Upsert(Order(1, "shipped")));
  ImportResult r = store_->WriteImport(std::move(batch));
  ASSERT_TRUE(IsOk(r.status));
  EXPECT_EQ(r.results[0].results.at(0).http_status, 201);
  EXPECT_EQ(r.results[1].results.at(0).http_status, 200);
  EXPECT_EQ(r.results[2].results.at(0).http_status, 200);
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(round == 0 ? "written" : "reopened, from the WAL");
    EXPECT_EQ(store_->HeadLsn(), 3u);
    std::string json;
    ASSERT_TRUE(IsOk(store_->Read("orders", "c1", "o1", &json)));
    EXPECT_EQ(Json(json).as_object().at("status"), "shipped");
    EXPECT_TRUE(ByStatus("open").empty());
    EXPECT_TRUE(ByStatus("closed").empty());
    EXPECT_EQ(ByStatus("shipped"), std::set<std::string>{"o1"});
    Open(Options());
  }
}

TEST_F(ImportBatchTest, AnItemThatFailsIsWrittenNotAtAllAndTheOthersAre) {
  ImportBatch batch = Orders(0, 10);
  // Refused on the commit thread: clients do not write processors' containers.
  Result<PreparedItem> view_item =
      PrepareItem(*store_->FindContainer("views"), Obj(R"({"id":"v","k":"k"})"), std::nullopt,
                  std::nullopt, kMaxItem);
  ASSERT_TRUE(IsOk(view_item.status()));
  WriteRequest refused;
  refused.container = "views";
  refused.partition_key = "k";
  WriteOp op;
  op.kind = WriteOpKind::kCreate;
  op.id = "v";
  op.item = std::move(*view_item);
  op.imported = true;
  refused.ops.push_back(std::move(op));
  batch.requests.insert(batch.requests.begin() + 5, std::move(refused));

  ImportResult r = store_->WriteImport(std::move(batch));
  ASSERT_TRUE(IsOk(r.status));
  ASSERT_EQ(r.results.size(), 11u);
  EXPECT_FALSE(r.results[5].status.ok());
  EXPECT_EQ(r.results[5].last_lsn, 0u);
  EXPECT_EQ(r.results[6].last_lsn, 6u);  // the LSN the refused one did not take
  EXPECT_EQ(store_->HeadLsn(), 10u);
  std::vector<ChangeRecord> feed = Feed();
  ASSERT_EQ(feed.size(), 10u);
  for (const ChangeRecord& record : feed) EXPECT_EQ(record.container, "orders");
  std::string json;
  EXPECT_TRUE(HasCode(store_->Read("views", "k", "v", &json), ErrorCode::kNotFound));
}

// Batches queued back to back, without waiting for an answer: each sees the
// items of the one before as there, so an overlapping line is skipped, never
// created twice, and the LSNs run on from batch to batch. (A commit pipeline
// that evaluates a batch while the one before is written must keep this.)
TEST_F(ImportBatchTest, BatchesQueuedBackToBackSeeTheItemsOfTheBatchBeforeThem) {
  constexpr int kBatches = 8;
  std::vector<std::future<ImportResult>> answers;
  for (int k = 0; k < kBatches; ++k) {
    auto answered = std::make_shared<std::promise<ImportResult>>();
    answers.push_back(answered->get_future());
    // Lines k*50 .. k*50+99: the first half is the batch before's second.
    store_->SubmitImport(Orders(k * 50, k * 50 + 100, /*sync=*/false),
                         [answered](ImportResult r) { answered->set_value(std::move(r)); });
  }
  Lsn next = 1;
  for (int k = 0; k < kBatches; ++k) {
    ImportResult r = answers[k].get();
    ASSERT_TRUE(IsOk(r.status)) << k;
    ASSERT_EQ(r.results.size(), 100u);
    for (int i = 0; i < 100; ++i) {
      ASSERT_TRUE(IsOk(r.results[i].status)) << k << "/" << i;
      const bool overlaps = k > 0 && i < 50;
      EXPECT_EQ(r.results[i].results.at(0).http_status, overlaps ? 409 : 201) << k << "/" << i;
      EXPECT_EQ(r.results[i].last_lsn, overlaps ? 0 : next++) << k << "/" << i;
    }
  }
  ASSERT_TRUE(IsOk(store_->WriteImport(Orders(0, 0)).status));  // a synced, empty batch
  const size_t items = 50 * (kBatches + 1);
  EXPECT_EQ(store_->HeadLsn(), items);
  std::vector<ChangeRecord> feed = Feed();
  ASSERT_EQ(feed.size(), items);
  for (size_t i = 0; i < feed.size(); ++i) EXPECT_EQ(feed[i].id, "o" + std::to_string(i));
  EXPECT_EQ(ByStatus("open").size(), items);
}

TEST_F(ImportBatchTest, UnsyncedBatchesArePublishedOnlyOnceTheWalIsSynced) {
  Open(Options(/*sync=*/true));
  std::mutex mu;
  std::vector<Lsn> handed;  // LSNs the commit listener got, in order
  uint64_t token = store_->AddCommitListener([&](const CommittedChanges& records) {
    std::lock_guard<std::mutex> lock(mu);
    for (const ChangeRecord& record : *records) {
      // Handed over before the head covers them.
      EXPECT_LT(store_->HeadLsn(), record.lsn);
      handed.push_back(record.lsn);
    }
  });

  // A batch's callback runs on the commit thread right after its write: an
  // unsynced batch is answered while the head is still below it, a synced
  // one once the head covers it and everything before it.
  auto import = [&](int from, int to, bool sync) {
    std::promise<std::pair<Status, Lsn>> answered;
    store_->SubmitImport(Orders(from, to, sync), [&](ImportResult r) {
      answered.set_value({r.status, store_->HeadLsn()});
    });
    return answered.get_future().get();
  };
  auto [first, head_after_first] = import(0, 10, false);
  ASSERT_TRUE(IsOk(first));
  EXPECT_LT(head_after_first, 10u);
  auto [second, head_after_second] = import(10, 20, false);
  ASSERT_TRUE(IsOk(second));
  EXPECT_LT(head_after_second, 20u);
  auto [third, head_after_third] = import(20, 30, true);
  ASSERT_TRUE(IsOk(third));
  EXPECT_EQ(head_after_third, 30u);
  {
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_EQ(handed.size(), 30u);
    for (size_t i = 0; i < handed.size(); ++i) EXPECT_EQ(handed[i], i + 1);
  }
  store_->RemoveCommitListener(token);
  EXPECT_EQ(Feed().size(), 30u);
}

TEST_F(ImportBatchTest, AnUnsyncedBatchIsPublishedWhenTheCommitThreadFallsIdle) {
  Open(Options(/*sync=*/true));
  ASSERT_TRUE(IsOk(store_->WriteImport(Orders(0, 10, /*sync=*/false)).status));
  // Nothing else is queued: the commit thread syncs the WAL and publishes.
  Lsn reached = 0;
  std::promise<void> published;
  store_->OnHeadReached(10, [&] { published.set_value(); });
  ASSERT_EQ(published.get_future().wait_for(std::chrono::seconds(60)), std::future_status::ready);
  reached = store_->HeadLsn();
  EXPECT_EQ(reached, 10u);
  EXPECT_EQ(Feed().size(), 10u);
}

TEST_F(ImportBatchTest, ImportedItemsSurviveAReopenWithTheirChangeRecords) {
  Open(Options(/*sync=*/true));
  ASSERT_TRUE(IsOk(store_->WriteImport(Orders(0, 40, /*sync=*/false)).status));
  ASSERT_TRUE(IsOk(store_->WriteImport(Orders(40, 80, /*sync=*/true)).status));
  Open(Options(/*sync=*/true));
  EXPECT_EQ(store_->HeadLsn(), 80u);
  EXPECT_EQ(Feed().size(), 80u);
  EXPECT_EQ(ByStatus("open").size(), 80u);
  // And the next write continues the LSNs.
  ImportResult r = store_->WriteImport(Orders(80, 81));
  ASSERT_TRUE(IsOk(r.status));
  EXPECT_EQ(r.results[0].last_lsn, 81u);
}

}  // namespace
}  // namespace feedd
