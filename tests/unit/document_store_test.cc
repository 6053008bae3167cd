// Unit tests of DocumentStore (storage/document_store.h) on a real RocksDB
// database in a fresh temporary directory: item operations and their error
// paths, preconditions, transactional batches, secondary indexes, queries
// with continuation and costs, the change feed, head watches, persistence
// across reopen, concurrency, retention and shutdown.
//
// Semantics come from docs/api.md and the headers;
// nothing here depends on how the implementation is written.
#include "storage/document_store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <boost/json.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "storage/json_scan.h"
#include "storage/key_format.h"
#include "storage/patch.h"
#include "storage/prepared_item.h"
#include "storage/query.h"
#include "storage/rocks_database.h"
#include "tests/blog_scenario.h"
#include "tests/unit/test_util.h"
#include "util/clock.h"

namespace feedd {
namespace {

namespace json = boost::json;
using testutil::HasCode;
using testutil::IsOk;
using testutil::Json;
using testutil::Obj;
using testutil::Ptr;
using testutil::Str;
using testutil::TempDir;

constexpr uint64_t kT0 = 1'700'000'000'000ull;
constexpr size_t kMaxItem = 2 * 1024 * 1024;
constexpr auto kLongWait = std::chrono::seconds(60);

// The scenario's containers (`feed` open to clients: the tests use it as a
// plain container), one with a nested partition key and two secondary
// indexes, and one that only processors write.
std::vector<ContainerSpec> TestContainers() {
  std::vector<ContainerSpec> c = BlogContainers();
  for (auto& spec : c) spec.writers = ContainerWriters::kAny;
  c.push_back(ContainerSpec{"orders", "/customer/id", {"/status", "/amount"}});
  c.push_back(ContainerSpec{"views", "/k", {}, ContainerWriters::kProcessors});
  return c;
}

std::string S(const json::value& v) {
  if (!v.is_string()) throw std::runtime_error("not a string: " + Str(v));
  return std::string(v.as_string());
}

uint64_t U(const json::value& v) { return v.to_number<uint64_t>(); }

FieldFilter Eq(std::string_view pointer, json::value value) {
  return FieldFilter{Ptr(pointer), std::move(value)};
}

// The records the commit path hands its listeners, from construction until
// Stop() (which returns them).
class HandedRecords {
 public:
  explicit HandedRecords(DocumentStore* store)
      : store_(store), token_(store->AddCommitListener([this](const CommittedChanges& records) {
          std::lock_guard<std::mutex> lock(mu_);
          records_.insert(records_.end(), records->begin(), records->end());
        })) {}
  HandedRecords(const HandedRecords&) = delete;
  HandedRecords& operator=(const HandedRecords&) = delete;
  ~HandedRecords() {
    if (store_ != nullptr) store_->RemoveCommitListener(token_);
  }

  std::vector<ChangeRecord> Stop() {
    store_->RemoveCommitListener(token_);
    store_ = nullptr;
    std::lock_guard<std::mutex> lock(mu_);
    return records_;
  }

 private:
  DocumentStore* store_;
  std::mutex mu_;
  std::vector<ChangeRecord> records_;
  const uint64_t token_;  // after mu_ and records_, which the listener uses
};

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_NO_FATAL_FAILURE(OpenStore(Options())); }
  void TearDown() override { CloseStore(); }

  StoreOptions Options() {
    StoreOptions o;
    o.data_dir = dir_.path();
    o.containers = TestContainers();
    o.sync = false;
    o.clock = &clock_;
    o.retention_interval_ms = 3600 * 1000;  // tests run retention explicitly
    o.block_cache_bytes = 8u << 20;
    o.write_buffer_bytes = 4u << 20;
    return o;
  }

  void OpenStore(const StoreOptions& options) {
    Result<std::unique_ptr<DocumentStore>> r = DocumentStore::Open(options);
    ASSERT_TRUE(r.ok()) << "Open: " << r.status().ToString();
    ASSERT_NE(r.value(), nullptr);
    store_ = std::move(r.value());
  }

  void CloseStore() {
    if (store_) {
      store_->Close();
      store_.reset();
    }
  }

  void Reopen(const StoreOptions& options) {
    CloseStore();
    ASSERT_NO_FATAL_FAILURE(OpenStore(options));
  }

  // ---- building requests ----

  const ContainerSpec& Spec(std::string_view container) const {
    const ContainerSpec* spec = store_->FindContainer(container);
    if (spec == nullptr) throw std::runtime_error("no container " + std::string(container));
    return *spec;
  }

  PreparedItem Item(std::string_view container, std::string_view body) const {
    Result<PreparedItem> r =
        PrepareItem(Spec(container), Obj(body), std::nullopt, std::nullopt, kMaxItem);
    if (!r.ok()) throw std::runtime_error("test item rejected: " + r.status().ToString());
    return std::move(r.value());
  }

  static WriteOp ItemOp(WriteOpKind kind, PreparedItem item,
                        std::optional<std::string> if_match = std::nullopt) {
    WriteOp op;
    op.kind = kind;
    op.id = item.id;
    op.item = std::move(item);
    op.if_match = std::move(if_match);
    return op;
  }

  static WriteOp KeyOp(WriteOpKind kind, std::string id,
                       std::optional<std::string> if_match = std::nullopt) {
    WriteOp op;
    op.kind = kind;
    op.id = std::move(id);
    op.if_match = std::move(if_match);
    return op;
  }

  WriteOp PatchOpFor(std::string_view container, std::string id, std::string_view ops,
                     std::optional<std::string> if_match = std::nullopt) const {
    Result<std::vector<PatchOp>> parsed = ParsePatchOperations(Spec(container), Json(ops));
    if (!parsed.ok())
      throw std::runtime_error("test patch rejected: " + parsed.status().ToString());
    WriteOp op = KeyOp(WriteOpKind::kPatch, std::move(id), std::move(if_match));
    op.patch = std::move(parsed.value());
    return op;
  }

  WriteResult Batch(std::string_view container, std::string_view pk, std::vector<WriteOp> ops) {
    WriteRequest request;
    request.container = std::string(container);
    request.partition_key = std::string(pk);
    request.ops = std::move(ops);
    return store_->Write(std::move(request));
  }

  WriteResult One(std::string_view container, std::string_view pk, WriteOp op) {
    std::vector<WriteOp> ops;
    ops.push_back(std::move(op));
    return Batch(container, pk, std::move(ops));
  }

  WriteResult ItemWrite(WriteOpKind kind, std::string_view container, std::string_view body,
                        std::optional<std::string> if_match) {
    PreparedItem item = Item(container, body);
    std::string pk = item.partition_key;
    return One(container, pk, ItemOp(kind, std::move(item), std::move(if_match)));
  }
  WriteResult Create(std::string_view c, std::string_view body,
                     std::optional<std::string> if_match = std::nullopt) {
    return ItemWrite(WriteOpKind::kCreate, c, body, std::move(if_match));
  }
  WriteResult Upsert(std::string_view c, std::string_view body,
                     std::optional<std::string> if_match = std::nullopt) {
    return ItemWrite(WriteOpKind::kUpsert, c, body, std::move(if_match));
  }
  WriteResult Replace(std::string_view c, std::string_view body,
                      std::optional<std::string> if_match = std::nullopt) {
    return ItemWrite(WriteOpKind::kReplace, c, body, std::move(if_match));
  }
  WriteResult Delete(std::string_view c, std::string_view pk, std::string id,
                     std::optional<std::string> if_match = std::nullopt) {
    return One(c, pk, KeyOp(WriteOpKind::kDelete, std::move(id), std::move(if_match)));
  }
  WriteResult Patch(std::string_view c, std::string_view pk, std::string id, std::string_view ops,
                    std::optional<std::string> if_match = std::nullopt) {
    return One(c, pk, PatchOpFor(c, std::move(id), ops, std::move(if_match)));
  }

  // A processor's view write of `op` to partition `pk` of `c`, by the
  // consumer `processor.test` (registered by the test).
  WriteResult ViewWriteOne(std::string_view c, std::string_view pk, WriteOp op) {
    ViewWrite view;
    view.consumer = "processor.test";
    view.requests.push_back(WriteRequest{std::string(c), std::string(pk), {}});
    view.requests.back().ops.push_back(std::move(op));
    return store_->WriteView(std::move(view));
  }

  // ---- reading back ----

  static json::object ResultItem(const WriteResult& w, size_t i = 0) {
    if (i >= w.results.size()) throw std::runtime_error("no result " + std::to_string(i));
    return Obj(w.results[i].item_json);
  }
  static std::string Etag(const WriteResult& w, size_t i = 0) {
    return S(ResultItem(w, i).at("_etag"));
  }

  Status ReadJson(std::string_view c, std::string_view pk, std::string_view id,
                  json::object* out) const {
    std::string text;
    Status s = store_->Read(c, pk, id, &text);
    if (s.ok()) *out = Obj(text);
    return s;
  }

  json::object MustRead(std::string_view c, std::string_view pk, std::string_view id) const {
    json::object out;
    Status s = ReadJson(c, pk, id, &out);
    if (!s.ok()) {
      throw std::runtime_error("Read " + std::string(c) + "/" + std::string(pk) + "/" +
                               std::string(id) + ": " + s.ToString());
    }
    return out;
  }

  Status ReadStatus(std::string_view c, std::string_view pk, std::string_view id) const {
    json::object ignored;
    return ReadJson(c, pk, id, &ignored);
  }

  // Every change record from `from` up to the head, page by page.
  std::vector<ChangeRecord> Feed(Lsn from = 1,
                                 std::optional<std::string> container = std::nullopt) const {
    std::vector<ChangeRecord> out;
    const Lsn head = store_->HeadLsn();
    for (int guard = 0; from <= head; ++guard) {
      if (guard > 100000) throw std::runtime_error("ReadFeed does not finish");
      FeedReadSpec spec;
      spec.from = from;
      spec.limit = 1000;
      spec.container = container;
      FeedPage page;
      Status s = store_->ReadFeed(spec, &page);
      if (!s.ok()) throw std::runtime_error("ReadFeed: " + s.ToString());
      for (ChangeRecord& r : page.records) out.push_back(std::move(r));
      if (page.next <= from) throw std::runtime_error("ReadFeed made no progress");
      from = page.next;
    }
    return out;
  }

  static std::vector<Lsn> Lsns(const std::vector<ChangeRecord>& records) {
    std::vector<Lsn> out;
    for (const ChangeRecord& r : records) out.push_back(r.lsn);
    return out;
  }

  // ---- queries ----

  QueryResult MustQuery(std::string_view c, const QuerySpec& spec) const {
    Result<QueryResult> r = store_->Query(c, spec);
    if (!r.ok()) throw std::runtime_error("Query: " + r.status().ToString());
    return std::move(r.value());
  }

  // "pk/id" of each item of a result, in order.
  std::vector<std::string> Keys(std::string_view c, const std::vector<std::string>& items) const {
    const JsonPointer pk = Ptr(Spec(c).partition_key_path);
    std::vector<std::string> out;
    for (const std::string& text : items) {
      json::value item = Json(text);
      const json::value* v = pk.Find(item);
      out.push_back((v != nullptr && v->is_string() ? std::string(v->as_string()) : "?") + "/" +
                    S(item.at("id")));
    }
    return out;
  }
  std::vector<std::string> Keys(std::string_view c, const QueryResult& r) const {
    return Keys(c, r.items);
  }

  // Runs `spec` page by page with `limit`; returns every item in order.
  // Gives up (with a test failure) after `max_pages` pages.
  std::vector<std::string> AllPages(std::string_view c, QuerySpec spec, size_t limit,
                                    size_t max_pages, size_t* pages = nullptr) const {
    std::vector<std::string> out;
    std::set<std::string> tokens_seen;
    spec.limit = limit;
    spec.continuation.clear();
    size_t n = 0;
    for (;;) {
      if (++n > max_pages) {
        ADD_FAILURE() << "still a continuation after " << max_pages << " pages of " << limit << "; "
                      << out.size() << " items so far";
        break;
      }
      QueryResult r = MustQuery(c, spec);
      EXPECT_LE(r.items.size(), limit);
      out.insert(out.end(), r.items.begin(), r.items.end());
      if (!r.continuation) break;
      EXPECT_FALSE(r.continuation->empty()) << "a set continuation must not be empty";
      if (r.continuation->empty()) break;
      if (!tokens_seen.insert(*r.continuation).second) {
        ADD_FAILURE() << "page " << n << " returned a continuation already seen";
        break;
      }
      spec.continuation = *r.continuation;
    }
    if (pages != nullptr) *pages = n;
    return out;
  }

  static uint64_t TotalSize(const std::vector<std::string>& items) {
    uint64_t n = 0;
    for (const std::string& s : items) n += s.size();
    return n;
  }

  // Declared before store_ so that they outlive it.
  ManualClock clock_{kT0};
  TempDir dir_;
  std::unique_ptr<DocumentStore> store_;
};

// ===================================================================
// Opening, containers, health
// ===================================================================

TEST_F(StoreTest, FreshStoreIsEmptyAndHealthy) {
  EXPECT_TRUE(IsOk(store_->Health()));
  EXPECT_EQ(store_->HeadLsn(), 0u);
  EXPECT_EQ(store_->OldestRetainedLsn(), 1u);
  StoreStats stats = store_->Stats();
  EXPECT_EQ(stats.head_lsn, 0u);
  EXPECT_EQ(stats.oldest_retained_lsn, 1u);
  EXPECT_EQ(stats.changes_committed, 0u);

  std::set<std::string> names;
  for (const ContainerSpec& c : store_->containers()) names.insert(c.name);
  EXPECT_EQ(names, (std::set<std::string>{"users", "posts", "feed", "orders", "views"}));
  ASSERT_NE(store_->FindContainer("posts"), nullptr);
  EXPECT_EQ(store_->FindContainer("posts")->partition_key_path, "/postId");
  EXPECT_EQ(store_->FindContainer("posts")->index_paths, (std::vector<std::string>{"/userId"}));
  ASSERT_NE(store_->FindContainer("orders"), nullptr);
  EXPECT_EQ(store_->FindContainer("orders")->partition_key_path, "/customer/id");
  EXPECT_EQ(store_->FindContainer("nope"), nullptr);
  EXPECT_EQ(store_->FindContainer("Posts"), nullptr);
  EXPECT_EQ(store_->options().data_dir, dir_.path());

  FeedReadSpec spec;
  FeedPage page;
  ASSERT_TRUE(IsOk(store_->ReadFeed(spec, &page)));
  EXPECT_TRUE(page.records.empty());
  EXPECT_EQ(page.next, 1u);
}

// `setting` of every column family, as RocksDB recorded it in the newest
// OPTIONS file of `dir` (family -> value), from the sections that start with
// `section` ("CFOptions" or "TableOptions/BlockBasedTable").
std::map<std::string, std::string> RecordedSetting(const std::string& dir,
                                                   const std::string& section,
                                                   const std::string& setting) {
  std::string newest;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("OPTIONS-", 0) == 0 && name > newest) newest = name;
  }
  std::map<std::string, std::string> values;
  if (newest.empty()) return values;
  std::ifstream in(dir + "/" + newest);
  const std::string head = "[" + section + " \"", key = "  " + setting + "=";
  std::string line, family;
  while (std::getline(in, line)) {
    if (line.rfind("[", 0) == 0) {
      family =
          line.rfind(head, 0) == 0 ? line.substr(head.size(), line.size() - head.size() - 2) : "";
    }
    if (!family.empty() && line.rfind(key, 0) == 0) values[family] = line.substr(key.size());
  }
  return values;
}

// The items' column families, where every write first looks its key up
// (most often absent in an import), have a memtable bloom filter; the
// feed's and the indexes' (never read by key before a write) have none.
TEST_F(StoreTest, OnlyTheItemsFamiliesHaveAMemtableBloomFilter) {
  auto filtering = RecordedSetting(dir_.path(), "CFOptions", "memtable_whole_key_filtering");
  ASSERT_EQ(filtering.count("items.posts"), 1u);
  for (const auto& [name, value] : filtering) {
    EXPECT_EQ(value, name.rfind("items.", 0) == 0 ? "true" : "false") << name;
  }
  EXPECT_EQ(filtering.at("feed"), "false");
}

// Every family's files keep their index and filter in partitions, so that a
// read loads the small part it needs, however large the data grows beside
// the block cache.
TEST_F(StoreTest, EveryFamilyPartitionsItsIndexAndFilter) {
  const std::string section = "TableOptions/BlockBasedTable";
  auto index = RecordedSetting(dir_.path(), section, "index_type");
  auto filters = RecordedSetting(dir_.path(), section, "partition_filters");
  ASSERT_EQ(index.count("items.posts"), 1u);
  ASSERT_EQ(index.count("feed"), 1u);
  ASSERT_EQ(filters.size(), index.size());
  for (const auto& [name, value] : index) {
    EXPECT_EQ(value, "kTwoLevelIndexSearch") << name;
    EXPECT_EQ(filters.at(name), "true") << name;
  }
}

TEST_F(StoreTest, OpenFailsForUnusableDataDir) {
  StoreOptions o = Options();
  o.data_dir = dir_.path() + "/file";
  {
    std::FILE* f = std::fopen(o.data_dir.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("not a directory", f);
    std::fclose(f);
  }
  EXPECT_FALSE(DocumentStore::Open(o).ok());
}

// ===================================================================
// Single-item operations
// ===================================================================

TEST_F(StoreTest, CreateReturns201AndStoresSystemProperties) {
  WriteResult w = Create(
      "posts", R"({"id":"a","postId":"P","userId":"u1","title":"t","_etag":"bogus","_lsn":99})");
  ASSERT_TRUE(IsOk(w.status));
  EXPECT_EQ(w.failed_index, -1);
  ASSERT_EQ(w.results.size(), 1u);
  EXPECT_EQ(w.results[0].http_status, 201);
  EXPECT_EQ(w.results[0].lsn, 1u);
  EXPECT_EQ(w.last_lsn, 1u);

  json::object item = ResultItem(w);
  EXPECT_EQ(S(item.at("id")), "a");
  EXPECT_EQ(S(item.at("postId")), "P");
  EXPECT_EQ(S(item.at("userId")), "u1");
  EXPECT_EQ(S(item.at("title")), "t");
  const std::string etag = S(item.at("_etag"));
  ASSERT_GE(etag.size(), 2u);
  EXPECT_EQ(etag.front(), '"') << etag;
  EXPECT_EQ(etag.back(), '"') << etag;
  EXPECT_NE(etag, "bogus");
  EXPECT_NE(etag, "\"bogus\"");
  EXPECT_EQ(U(item.at("_lsn")), 1u);
  EXPECT_EQ(U(item.at("_ts")), kT0);
  EXPECT_EQ(item.size(), 7u) << Str(item);  // 4 client properties + 3 system ones

  EXPECT_EQ(MustRead("posts", "P", "a"), item);
  EXPECT_EQ(store_->HeadLsn(), 1u);
  // The same id in another partition is another item.
  EXPECT_TRUE(HasCode(ReadStatus("posts", "Q", "a"), ErrorCode::kNotFound));
  // Another container does not see it.
  EXPECT_TRUE(HasCode(ReadStatus("users", "P", "a"), ErrorCode::kNotFound));
}

// The change envelope names each item's partition key and id as JSON
// strings, escaped where they need it, exactly as boost::json writes them.
TEST_F(StoreTest, TheEnvelopeEscapesPartitionKeysAndIdsThatNeedIt) {
  const std::vector<std::pair<std::string, std::string>> keys = {
      {"P", "a"},          {"q\"uote", "q\"id"}, {"back\\slash", "b"},
      {"line\nfeed", "c"}, {"\x01ctl\x1f", "d"}, {"\xc3\xa9t\xc3\xa9", "\xc3\xa9"}};
  for (const auto& [pk, id] : keys) {
    json::object body{{"id", id}, {"postId", pk}, {"userId", "u1"}};
    ASSERT_TRUE(IsOk(Create("posts", json::serialize(body)).status)) << pk;
  }
  std::vector<ChangeRecord> feed = Feed();
  ASSERT_EQ(feed.size(), keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    const auto& [pk, id] = keys[i];
    SCOPED_TRACE(pk);
    const std::string& envelope = feed[i].envelope_json;
    EXPECT_NE(envelope.find(",\"partitionKey\":" + json::serialize(json::string(pk)) +
                            ",\"id\":" + json::serialize(json::string(id)) + ","),
              std::string::npos)
        << envelope;
    json::value parsed = json::parse(envelope);
    EXPECT_EQ(S(parsed.at("partitionKey")), pk);
    EXPECT_EQ(S(parsed.at("id")), id);
    EXPECT_EQ(S(parsed.at("container")), "posts");
  }
}

TEST_F(StoreTest, CreateOfExistingItemIsConflict) {
  WriteResult first = Create("posts", R"({"id":"a","postId":"P","title":"one"})");
  ASSERT_TRUE(IsOk(first.status));
  clock_.Advance(3);
  WriteResult again = Create("posts", R"({"id":"a","postId":"P","title":"two"})");
  EXPECT_TRUE(HasCode(again.status, ErrorCode::kConflict));
  EXPECT_EQ(ErrorCodeHttpStatus(again.status.code()), 409);
  EXPECT_EQ(again.failed_index, 0);
  EXPECT_EQ(again.last_lsn, 0u);
  EXPECT_EQ(MustRead("posts", "P", "a"), ResultItem(first));
  EXPECT_EQ(store_->HeadLsn(), 1u);
  EXPECT_EQ(Feed().size(), 1u);

  // Same id in another partition: a different item, created.
  WriteResult other = Create("posts", R"({"id":"a","postId":"Q","title":"three"})");
  ASSERT_TRUE(IsOk(other.status));
  EXPECT_EQ(other.results[0].http_status, 201);
  EXPECT_EQ(other.results[0].lsn, 2u);
  EXPECT_EQ(S(MustRead("posts", "P", "a").at("title")), "one");
  EXPECT_EQ(S(MustRead("posts", "Q", "a").at("title")), "three");
}

TEST_F(StoreTest, UpsertCreatesWith201ThenReplacesWith200) {
  WriteResult w1 = Upsert("users", R"({"id":"u1","userId":"u1","name":"Ann","old":true})");
  ASSERT_TRUE(IsOk(w1.status));
  EXPECT_EQ(w1.results[0].http_status, 201);
  EXPECT_EQ(w1.results[0].lsn, 1u);

  clock_.Advance(5);
  WriteResult w2 = Upsert("users", R"({"id":"u1","userId":"u1","name":"Bob"})");
  ASSERT_TRUE(IsOk(w2.status));
  EXPECT_EQ(w2.results[0].http_status, 200);
  EXPECT_EQ(w2.results[0].lsn, 2u);
  EXPECT_EQ(w2.last_lsn, 2u);

  json::object item = ResultItem(w2);
  EXPECT_EQ(S(item.at("name")), "Bob");
  EXPECT_EQ(item.if_contains("old"), nullptr) << "an upsert replaces the whole item";
  EXPECT_EQ(U(item.at("_lsn")), 2u);
  EXPECT_EQ(U(item.at("_ts")), kT0 + 5);
  EXPECT_NE(S(item.at("_etag")), Etag(w1)) << "the etag changes on every write";
  EXPECT_EQ(MustRead("users", "u1", "u1"), item);
}

TEST_F(StoreTest, ReplaceOfMissingItemIsNotFound) {
  WriteResult w = Replace("users", R"({"id":"u9","userId":"u9"})");
  EXPECT_TRUE(HasCode(w.status, ErrorCode::kNotFound));
  EXPECT_EQ(w.failed_index, 0);
  EXPECT_EQ(store_->HeadLsn(), 0u);
  EXPECT_TRUE(HasCode(ReadStatus("users", "u9", "u9"), ErrorCode::kNotFound));

  ASSERT_TRUE(IsOk(Create("users", R"({"id":"u1","userId":"u1","v":1})").status));
  WriteResult r = Replace("users", R"({"id":"u1","userId":"u1","v":2})");
  ASSERT_TRUE(IsOk(r.status));
  EXPECT_EQ(r.results[0].http_status, 200);
  EXPECT_EQ(r.results[0].lsn, 2u);
  EXPECT_EQ(MustRead("users", "u1", "u1").at("v").to_number<int64_t>(), 2);
}

TEST_F(StoreTest, EtagPreconditions) {
  const char* kPk = "u1";
  WriteResult c = Create("users", R"({"id":"u1","userId":"u1","v":1})");
  ASSERT_TRUE(IsOk(c.status));
  const std::string etag1 = Etag(c);

  // The right etag.
  WriteResult r1 = Replace("users", R"({"id":"u1","userId":"u1","v":2})", etag1);
  ASSERT_TRUE(IsOk(r1.status));
  EXPECT_EQ(r1.results[0].http_status, 200);
  const std::string etag2 = Etag(r1);
  EXPECT_NE(etag2, etag1);

  // A stale or made-up etag: 412 for every kind of write, nothing changes.
  for (const std::string& wrong : {etag1, std::string("\"garbage\""), std::string("garbage")}) {
    SCOPED_TRACE(wrong);
    EXPECT_TRUE(HasCode(Replace("users", R"({"id":"u1","userId":"u1","v":3})", wrong).status,
                        ErrorCode::kPreconditionFailed));
    EXPECT_TRUE(HasCode(Upsert("users", R"({"id":"u1","userId":"u1","v":3})", wrong).status,
                        ErrorCode::kPreconditionFailed));
    EXPECT_TRUE(
        HasCode(Patch("users", kPk, "u1", R"([{"op":"set","path":"/v","value":3}])", wrong).status,
                ErrorCode::kPreconditionFailed));
    EXPECT_TRUE(HasCode(Delete("users", kPk, "u1", wrong).status, ErrorCode::kPreconditionFailed));
  }
  EXPECT_EQ(ErrorCodeHttpStatus(ErrorCode::kPreconditionFailed), 412);
  EXPECT_EQ(MustRead("users", kPk, "u1"), ResultItem(r1));
  EXPECT_EQ(store_->HeadLsn(), 2u);

  // "*" matches any existing version.
  WriteResult r2 = Replace("users", R"({"id":"u1","userId":"u1","v":4})", "*");
  ASSERT_TRUE(IsOk(r2.status));
  EXPECT_EQ(r2.results[0].http_status, 200);
  WriteResult r3 = Upsert("users", R"({"id":"u1","userId":"u1","v":5})", Etag(r2));
  ASSERT_TRUE(IsOk(r3.status));
  EXPECT_EQ(r3.results[0].http_status, 200);
  WriteResult r4 = Patch("users", kPk, "u1", R"([{"op":"incr","path":"/v","value":1}])", "*");
  ASSERT_TRUE(IsOk(r4.status));
  EXPECT_EQ(ResultItem(r4).at("v").to_number<int64_t>(), 6);
  WriteResult r5 = Patch("users", kPk, "u1", R"([{"op":"incr","path":"/v","value":1}])", Etag(r4));
  ASSERT_TRUE(IsOk(r5.status));
  EXPECT_EQ(ResultItem(r5).at("v").to_number<int64_t>(), 7);
  EXPECT_EQ(store_->HeadLsn(), 6u);

  // A precondition on a missing item fails with precondition_failed.
  for (const std::string& any : {std::string("*"), Etag(r5)}) {
    SCOPED_TRACE(any);
    EXPECT_TRUE(HasCode(Replace("users", R"({"id":"u9","userId":"u1"})", any).status,
                        ErrorCode::kPreconditionFailed));
    EXPECT_TRUE(HasCode(Upsert("users", R"({"id":"u9","userId":"u1"})", any).status,
                        ErrorCode::kPreconditionFailed));
    EXPECT_TRUE(
        HasCode(Patch("users", kPk, "u9", R"([{"op":"set","path":"/v","value":1}])", any).status,
                ErrorCode::kPreconditionFailed));
    EXPECT_TRUE(HasCode(Delete("users", kPk, "u9", any).status, ErrorCode::kPreconditionFailed));
  }
  EXPECT_TRUE(HasCode(ReadStatus("users", kPk, "u9"), ErrorCode::kNotFound));
  EXPECT_EQ(store_->HeadLsn(), 6u);

  // Delete with the current etag.
  WriteResult d = Delete("users", kPk, "u1", Etag(r5));
  ASSERT_TRUE(IsOk(d.status));
  EXPECT_EQ(d.results[0].http_status, 204);
  EXPECT_TRUE(HasCode(ReadStatus("users", kPk, "u1"), ErrorCode::kNotFound));
}

TEST_F(StoreTest, DeleteReturns204ThenNotFound) {
  ASSERT_TRUE(IsOk(Create("posts", R"({"id":"a","postId":"P"})").status));
  WriteResult d = Delete("posts", "P", "a");
  ASSERT_TRUE(IsOk(d.status));
  ASSERT_EQ(d.results.size(), 1u);
  EXPECT_EQ(d.results[0].http_status, 204);
  EXPECT_TRUE(d.results[0].item_json.empty());
  EXPECT_EQ(d.results[0].lsn, 2u);
  EXPECT_EQ(d.last_lsn, 2u);
  EXPECT_TRUE(HasCode(ReadStatus("posts", "P", "a"), ErrorCode::kNotFound));

  WriteResult again = Delete("posts", "P", "a");
  EXPECT_TRUE(HasCode(again.status, ErrorCode::kNotFound));
  EXPECT_EQ(again.failed_index, 0);
  EXPECT_EQ(store_->HeadLsn(), 2u);

  // A deleted item can be created again.
  WriteResult re = Create("posts", R"({"id":"a","postId":"P","v":2})");
  ASSERT_TRUE(IsOk(re.status));
  EXPECT_EQ(re.results[0].http_status, 201);
  EXPECT_EQ(re.results[0].lsn, 3u);
}

TEST_F(StoreTest, PatchUpdatesTheStoredItem) {
  WriteResult c = Create(
      "orders",
      R"({"id":"o1","customer":{"id":"c1","name":"N"},"status":"open","amount":10,"tags":["a"]})");
  ASSERT_TRUE(IsOk(c.status));
  clock_.Advance(7);
  WriteResult p = Patch("orders", "c1", "o1",
                        R"([{"op":"set","path":"/status","value":"shipped"},
                            {"op":"incr","path":"/amount","value":5},
                            {"op":"add","path":"/tags/-","value":"b"},
                            {"op":"remove","path":"/customer/name"}])");
  ASSERT_TRUE(IsOk(p.status));
  ASSERT_EQ(p.results.size(), 1u);
  EXPECT_EQ(p.results[0].http_status, 200);
  EXPECT_EQ(p.results[0].lsn, 2u);
  json::object item = ResultItem(p);
  EXPECT_EQ(S(item.at("status")), "shipped");
  EXPECT_EQ(item.at("amount").to_number<int64_t>(), 15);
  EXPECT_EQ(item.at("tags"), Json(R"(["a","b"])"));
  EXPECT_EQ(item.at("customer"), Json(R"({"id":"c1"})"));
  EXPECT_EQ(S(item.at("id")), "o1");
  EXPECT_EQ(U(item.at("_lsn")), 2u);
  EXPECT_EQ(U(item.at("_ts")), kT0 + 7);
  EXPECT_NE(S(item.at("_etag")), Etag(c));
  EXPECT_EQ(MustRead("orders", "c1", "o1"), item);

  // Missing item.
  WriteResult missing =
      Patch("orders", "c1", "o9", R"([{"op":"set","path":"/status","value":"x"}])");
  EXPECT_TRUE(HasCode(missing.status, ErrorCode::kNotFound));
  EXPECT_EQ(missing.failed_index, 0);

  // A patch that cannot be applied changes nothing, even its earlier ops.
  for (const char* bad : {R"([{"op":"set","path":"/status","value":"x"},
                              {"op":"replace","path":"/nope","value":1}])",
                          R"([{"op":"set","path":"/status","value":"x"},
                              {"op":"incr","path":"/status","value":1}])",
                          R"([{"op":"set","path":"/status","value":"x"},
                              {"op":"remove","path":"/nope/deeper"}])"}) {
    SCOPED_TRACE(bad);
    EXPECT_TRUE(HasCode(Patch("orders", "c1", "o1", bad).status, ErrorCode::kInvalidPatch));
  }
  EXPECT_EQ(MustRead("orders", "c1", "o1"), item);
  EXPECT_EQ(store_->HeadLsn(), 2u);
  EXPECT_EQ(Feed().size(), 2u);
}

TEST_F(StoreTest, UnknownContainerAndMissingItems) {
  EXPECT_TRUE(HasCode(ReadStatus("users", "u1", "u1"), ErrorCode::kNotFound));
  EXPECT_TRUE(HasCode(ReadStatus("nope", "u1", "u1"), ErrorCode::kContainerNotFound));

  PreparedItem item = Item("posts", R"({"id":"a","postId":"p"})");
  WriteRequest request;
  request.container = "nope";
  request.partition_key = "p";
  request.ops.push_back(ItemOp(WriteOpKind::kCreate, item));
  WriteResult w = store_->Write(std::move(request));
  EXPECT_TRUE(HasCode(w.status, ErrorCode::kContainerNotFound));
  EXPECT_EQ(store_->HeadLsn(), 0u);

  Result<QueryResult> q = store_->Query("nope", QuerySpec{});
  EXPECT_TRUE(HasCode(q.status(), ErrorCode::kContainerNotFound));
}

TEST_F(StoreTest, PartitionKeysThatArePrefixesDoNotMix) {
  ASSERT_TRUE(IsOk(Create("users", R"({"id":"x","userId":"a","name":"A"})").status));
  ASSERT_TRUE(IsOk(Create("users", R"({"id":"x","userId":"ab","name":"AB"})").status));
  ASSERT_TRUE(IsOk(Create("users", R"({"id":"y","userId":"ab","name":"AB2"})").status));
  ASSERT_TRUE(IsOk(Create("users", R"({"id":"bx","userId":"a","name":"A2"})").status));

  EXPECT_EQ(S(MustRead("users", "a", "x").at("name")), "A");
  EXPECT_EQ(S(MustRead("users", "ab", "x").at("name")), "AB");
  EXPECT_TRUE(HasCode(ReadStatus("users", "a", "y"), ErrorCode::kNotFound));
  EXPECT_TRUE(IsOk(ReadStatus("users", "a", "bx")));
  EXPECT_TRUE(HasCode(ReadStatus("users", "ab", "bx"), ErrorCode::kNotFound));

  QuerySpec q;
  q.partition_key = "a";
  EXPECT_EQ(Keys("users", MustQuery("users", q)), (std::vector<std::string>{"a/bx", "a/x"}));
  q.partition_key = "ab";
  EXPECT_EQ(Keys("users", MustQuery("users", q)), (std::vector<std::string>{"ab/x", "ab/y"}));

  ASSERT_TRUE(IsOk(Delete("users", "a", "x").status));
  EXPECT_EQ(S(MustRead("users", "ab", "x").at("name")), "AB");
}

// ===================================================================
// Transactional batches
// ===================================================================

TEST_F(StoreTest, BatchAppliesEveryOpWithConsecutiveLsns) {
  ASSERT_TRUE(IsOk(Create("users", R"({"id":"u1","userId":"u1"})").status));  // LSN 1
  clock_.Advance(10);

  std::vector<WriteOp> ops;
  ops.push_back(ItemOp(WriteOpKind::kCreate, Item("feed", R"({"id":"x","type":"post","v":1})")));
  ops.push_back(ItemOp(WriteOpKind::kCreate, Item("feed", R"({"id":"y","type":"post","v":1})")));
  ops.push_back(ItemOp(WriteOpKind::kUpsert, Item("feed", R"({"id":"y","type":"post","v":2})")));
  ops.push_back(PatchOpFor("feed", "x", R"([{"op":"incr","path":"/v","value":10}])"));
  ops.push_back(KeyOp(WriteOpKind::kRead, "x"));
  ops.push_back(KeyOp(WriteOpKind::kDelete, "y"));
  ops.push_back(ItemOp(WriteOpKind::kUpsert, Item("feed", R"({"id":"z","type":"post"})")));
  WriteResult w = Batch("feed", "post", std::move(ops));
  ASSERT_TRUE(IsOk(w.status)) << "failed_index=" << w.failed_index;
  EXPECT_EQ(w.failed_index, -1);
  ASSERT_EQ(w.results.size(), 7u);

  const std::vector<int> statuses = {201, 201, 200, 200, 200, 204, 201};
  const std::vector<Lsn> lsns = {2, 3, 4, 5, 0, 6, 7};
  for (size_t i = 0; i < 7; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(w.results[i].http_status, statuses[i]);
    EXPECT_EQ(w.results[i].lsn, lsns[i]);
  }
  EXPECT_EQ(w.last_lsn, 7u);
  EXPECT_EQ(store_->HeadLsn(), 7u);

  // The read saw the patch made earlier in the same batch.
  EXPECT_EQ(ResultItem(w, 4).at("v").to_number<int64_t>(), 11);
  EXPECT_EQ(ResultItem(w, 4), ResultItem(w, 3));
  EXPECT_TRUE(w.results[5].item_json.empty());

  json::object x = MustRead("feed", "post", "x");
  EXPECT_EQ(x, ResultItem(w, 3));
  EXPECT_EQ(U(x.at("_lsn")), 5u);
  EXPECT_EQ(U(x.at("_ts")), kT0 + 10);
  EXPECT_TRUE(HasCode(ReadStatus("feed", "post", "y"), ErrorCode::kNotFound));
  EXPECT_EQ(U(MustRead("feed", "post", "z").at("_lsn")), 7u);

  std::vector<ChangeRecord> records = Feed(2);
  ASSERT_EQ(records.size(), 6u);
  const std::vector<std::string> ops_seen = {"create",  "create", "replace",
                                             "replace", "delete", "create"};
  const std::vector<std::string> ids = {"x", "y", "y", "x", "y", "z"};
  for (size_t i = 0; i < records.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(records[i].lsn, 2 + i);
    EXPECT_EQ(ChangeOpName(records[i].op), ops_seen[i]);
    EXPECT_EQ(records[i].id, ids[i]);
    EXPECT_EQ(records[i].container, "feed");
    EXPECT_EQ(records[i].partition_key, "post");
    EXPECT_EQ(records[i].ts_ms, kT0 + 10);
  }
  // Before-images inside a batch are the versions written earlier in it.
  json::object e_create_y = Obj(records[1].envelope_json);
  json::object e_upsert_y = Obj(records[2].envelope_json);
  json::object e_patch_x = Obj(records[3].envelope_json);
  json::object e_delete_y = Obj(records[4].envelope_json);
  json::object e_create_x = Obj(records[0].envelope_json);
  EXPECT_EQ(e_upsert_y.at("before"), e_create_y.at("after"));
  EXPECT_EQ(e_patch_x.at("before"), e_create_x.at("after"));
  EXPECT_EQ(e_delete_y.at("before"), e_upsert_y.at("after"));
  EXPECT_TRUE(e_delete_y.at("after").is_null());
}

TEST_F(StoreTest, BatchOfOnlyReadsWritesNothing) {
  WriteResult c = Create("feed", R"({"id":"x","type":"post","v":1})");
  ASSERT_TRUE(IsOk(c.status));
  std::vector<WriteOp> ops;
  ops.push_back(KeyOp(WriteOpKind::kRead, "x"));
  ops.push_back(KeyOp(WriteOpKind::kRead, "x", Etag(c)));
  WriteResult w = Batch("feed", "post", std::move(ops));
  ASSERT_TRUE(IsOk(w.status));
  ASSERT_EQ(w.results.size(), 2u);
  for (const OpResult& r : w.results) {
    EXPECT_EQ(r.http_status, 200);
    EXPECT_EQ(r.lsn, 0u);
    EXPECT_EQ(Obj(r.item_json), ResultItem(c));
  }
  EXPECT_EQ(w.last_lsn, 0u);
  EXPECT_EQ(store_->HeadLsn(), 1u);
  EXPECT_EQ(Feed().size(), 1u);

  std::vector<WriteOp> bad;
  bad.push_back(KeyOp(WriteOpKind::kRead, "x", "\"stale\""));
  EXPECT_TRUE(
      HasCode(Batch("feed", "post", std::move(bad)).status, ErrorCode::kPreconditionFailed));
}

TEST_F(StoreTest, FailingBatchLeavesNothingBehind) {
  // Partition c1 holds o1; partition c2 holds q1.
  WriteResult o1 = Create("orders", R"({"id":"o1","customer":{"id":"c1"},"status":"open"})");
  ASSERT_TRUE(IsOk(o1.status));
  ASSERT_TRUE(
      IsOk(Create("orders", R"({"id":"q1","customer":{"id":"c2"},"status":"open"})").status));
  const json::object o1_before = MustRead("orders", "c1", "o1");
  const std::string o1_etag = Etag(o1);
  const Lsn head = store_->HeadLsn();
  ASSERT_EQ(head, 2u);
  const uint64_t changes_before = store_->Stats().changes_committed;

  struct Case {
    const char* name;
    std::function<WriteOp()> failing;
    ErrorCode code;
  };
  const std::vector<Case> cases = {
      {"create of an existing item",
       [&] {
         return ItemOp(WriteOpKind::kCreate,
                       Item("orders", R"({"id":"o1","customer":{"id":"c1"}})"));
       },
       ErrorCode::kConflict},
      {"create of an item created earlier in the batch",
       [&] {
         return ItemOp(WriteOpKind::kCreate,
                       Item("orders", R"({"id":"o2","customer":{"id":"c1"}})"));
       },
       ErrorCode::kConflict},
      {"replace of a missing item",
       [&] {
         return ItemOp(WriteOpKind::kReplace,
                       Item("orders", R"({"id":"o9","customer":{"id":"c1"}})"));
       },
       ErrorCode::kNotFound},
      {"delete of a missing item", [&] { return KeyOp(WriteOpKind::kDelete, "o9"); },
       ErrorCode::kNotFound},
      {"delete of an item of another partition", [&] { return KeyOp(WriteOpKind::kDelete, "q1"); },
       ErrorCode::kNotFound},
      {"patch of a missing item",
       [&] { return PatchOpFor("orders", "o9", R"([{"op":"set","path":"/x","value":1}])"); },
       ErrorCode::kNotFound},
      {"read of a missing item", [&] { return KeyOp(WriteOpKind::kRead, "o9"); },
       ErrorCode::kNotFound},
      {"replace with a wrong etag",
       [&] {
         return ItemOp(WriteOpKind::kReplace,
                       Item("orders", R"({"id":"o1","customer":{"id":"c1"}})"), "\"nope\"");
       },
       ErrorCode::kPreconditionFailed},
      {"delete with the etag o1 had before the batch patched it",
       [&] { return KeyOp(WriteOpKind::kDelete, "o1", o1_etag); }, ErrorCode::kPreconditionFailed},
      {"patch that cannot be applied",
       [&] { return PatchOpFor("orders", "o1", R"([{"op":"incr","path":"/status","value":1}])"); },
       ErrorCode::kInvalidPatch},
      {"create in another partition",
       [&] {
         return ItemOp(WriteOpKind::kCreate,
                       Item("orders", R"({"id":"o5","customer":{"id":"c2"}})"));
       },
       ErrorCode::kPartitionKeyMismatch},
  };

  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<WriteOp> ops;
    ops.push_back(
        ItemOp(WriteOpKind::kCreate,
               Item("orders", R"({"id":"o2","customer":{"id":"c1"},"status":"pending"})")));
    ops.push_back(
        PatchOpFor("orders", "o1", R"([{"op":"set","path":"/status","value":"pending"}])"));
    ops.push_back(
        ItemOp(WriteOpKind::kUpsert,
               Item("orders", R"({"id":"o3","customer":{"id":"c1"},"status":"pending"})")));
    ops.push_back(c.failing());
    ops.push_back(
        ItemOp(WriteOpKind::kCreate,
               Item("orders", R"({"id":"o4","customer":{"id":"c1"},"status":"pending"})")));
    WriteResult w = Batch("orders", "c1", std::move(ops));

    EXPECT_TRUE(HasCode(w.status, c.code));
    EXPECT_EQ(w.failed_index, 3);
    EXPECT_EQ(w.last_lsn, 0u);

    // No LSN used, no change record, no item change.
    EXPECT_EQ(store_->HeadLsn(), head);
    EXPECT_EQ(store_->Stats().head_lsn, head);
    EXPECT_EQ(store_->Stats().changes_committed, changes_before);
    FeedReadSpec spec;
    spec.from = head + 1;
    FeedPage page;
    ASSERT_TRUE(IsOk(store_->ReadFeed(spec, &page)));
    EXPECT_TRUE(page.records.empty());
    EXPECT_EQ(MustRead("orders", "c1", "o1"), o1_before);
    for (const char* id : {"o2", "o3", "o4", "o5"}) {
      EXPECT_TRUE(HasCode(ReadStatus("orders", "c1", id), ErrorCode::kNotFound)) << id;
    }
    EXPECT_TRUE(HasCode(ReadStatus("orders", "c2", "o5"), ErrorCode::kNotFound));

    // No index entry: the batch's status value finds nothing; the old one is intact.
    QuerySpec pending;
    pending.filters.push_back(Eq("/status", "pending"));
    QueryResult r = MustQuery("orders", pending);
    EXPECT_TRUE(r.items.empty()) << Str(json::value_from(r.items));
    EXPECT_EQ(r.cost.index_entries_read, 0u);
    QuerySpec open;
    open.filters.push_back(Eq("/status", "open"));
    EXPECT_EQ(Keys("orders", MustQuery("orders", open)),
              (std::vector<std::string>{"c1/o1", "c2/q1"}));
    QuerySpec partition;
    partition.partition_key = "c1";
    EXPECT_EQ(Keys("orders", MustQuery("orders", partition)), (std::vector<std::string>{"c1/o1"}));
  }

  // The next write takes the next LSN: a failed batch burns none.
  WriteResult next = Create("orders", R"({"id":"o7","customer":{"id":"c1"}})");
  ASSERT_TRUE(IsOk(next.status));
  EXPECT_EQ(next.results[0].lsn, head + 1);
  std::vector<ChangeRecord> records = Feed();
  EXPECT_EQ(Lsns(records), (std::vector<Lsn>{1, 2, 3}));
}

TEST_F(StoreTest, BatchOpForAnotherPartitionIsRejected) {
  std::vector<WriteOp> ops;
  ops.push_back(ItemOp(WriteOpKind::kCreate, Item("users", R"({"id":"a","userId":"u1"})")));
  ops.push_back(ItemOp(WriteOpKind::kCreate, Item("users", R"({"id":"b","userId":"u2"})")));
  WriteResult w = Batch("users", "u1", std::move(ops));
  EXPECT_TRUE(HasCode(w.status, ErrorCode::kPartitionKeyMismatch));
  EXPECT_EQ(w.failed_index, 1);
  EXPECT_TRUE(HasCode(ReadStatus("users", "u1", "a"), ErrorCode::kNotFound));
  EXPECT_TRUE(HasCode(ReadStatus("users", "u2", "b"), ErrorCode::kNotFound));
  EXPECT_EQ(store_->HeadLsn(), 0u);

  // A single-item request whose item is in another partition, too.
  WriteResult single = One(
      "users", "u1", ItemOp(WriteOpKind::kUpsert, Item("users", R"({"id":"c","userId":"u2"})")));
  EXPECT_TRUE(HasCode(single.status, ErrorCode::kPartitionKeyMismatch));
  EXPECT_EQ(single.failed_index, 0);
  EXPECT_TRUE(HasCode(ReadStatus("users", "u2", "c"), ErrorCode::kNotFound));
  EXPECT_TRUE(HasCode(ReadStatus("users", "u1", "c"), ErrorCode::kNotFound));
  EXPECT_EQ(store_->HeadLsn(), 0u);
}

TEST_F(StoreTest, BatchSizeLimits) {
  std::vector<WriteOp> too_many;
  for (int i = 0; i < 101; ++i) {
    too_many.push_back(ItemOp(WriteOpKind::kCreate, Item("feed", R"({"id":"i)" + std::to_string(i) +
                                                                     R"(","type":"bulk"})")));
  }
  WriteResult w = Batch("feed", "bulk", std::move(too_many));
  EXPECT_TRUE(HasCode(w.status, ErrorCode::kTooManyOperations));
  EXPECT_EQ(store_->HeadLsn(), 0u);
  EXPECT_TRUE(HasCode(ReadStatus("feed", "bulk", "i0"), ErrorCode::kNotFound));

  WriteResult empty = Batch("feed", "bulk", {});
  EXPECT_FALSE(empty.status.ok());
  EXPECT_EQ(store_->HeadLsn(), 0u);

  std::vector<WriteOp> hundred;
  for (int i = 0; i < 100; ++i) {
    hundred.push_back(ItemOp(WriteOpKind::kCreate, Item("feed", R"({"id":"i)" + std::to_string(i) +
                                                                    R"(","type":"bulk"})")));
  }
  WriteResult ok = Batch("feed", "bulk", std::move(hundred));
  ASSERT_TRUE(IsOk(ok.status));
  ASSERT_EQ(ok.results.size(), 100u);
  for (size_t i = 0; i < 100; ++i) {
    EXPECT_EQ(ok.results[i].http_status, 201);
    EXPECT_EQ(ok.results[i].lsn, i + 1);
  }
  EXPECT_EQ(ok.last_lsn, 100u);
  EXPECT_EQ(store_->HeadLsn(), 100u);
  EXPECT_EQ(Lsns(Feed()).size(), 100u);
}

// ===================================================================
// Secondary indexes
// ===================================================================

TEST_F(StoreTest, IndexFollowsCreateUpdateAndDelete) {
  ASSERT_TRUE(
      IsOk(Create("orders", R"({"id":"o1","customer":{"id":"c1"},"status":"open","amount":10})")
               .status));
  ASSERT_TRUE(
      IsOk(Create("orders", R"({"id":"o2","customer":{"id":"c2"},"status":"open","amount":20})")
               .status));
  ASSERT_TRUE(
      IsOk(Create("orders", R"({"id":"o3","customer":{"id":"c3"},"status":"closed","amount":10})")
               .status));

  auto by = [&](const char* pointer, json::value v) {
    QuerySpec q;
    q.filters.push_back(Eq(pointer, std::move(v)));
    return MustQuery("orders", q);
  };
  using Ks = std::vector<std::string>;

  QueryResult open = by("/status", "open");
  EXPECT_EQ(Keys("orders", open), (Ks{"c1/o1", "c2/o2"}));
  EXPECT_EQ(open.cost.index_entries_read, 2u);
  EXPECT_EQ(open.cost.partitions_scanned, 2u);
  EXPECT_GE(open.cost.items_read, 2u);
  EXPECT_GE(open.cost.bytes_read, TotalSize(open.items));
  EXPECT_FALSE(open.continuation.has_value());

  // An update that changes the indexed value moves the entry.
  ASSERT_TRUE(
      IsOk(Upsert("orders", R"({"id":"o1","customer":{"id":"c1"},"status":"closed","amount":10})")
               .status));
  QueryResult open2 = by("/status", "open");
  EXPECT_EQ(Keys("orders", open2), (Ks{"c2/o2"}));
  EXPECT_EQ(open2.cost.index_entries_read, 1u) << "a stale index entry was left behind";
  EXPECT_EQ(Keys("orders", by("/status", "closed")), (Ks{"c1/o1", "c3/o3"}));

  // Same through a patch.
  ASSERT_TRUE(IsOk(
      Patch("orders", "c2", "o2", R"([{"op":"set","path":"/status","value":"shipped"}])").status));
  QueryResult open3 = by("/status", "open");
  EXPECT_TRUE(open3.items.empty());
  EXPECT_EQ(open3.cost.index_entries_read, 0u) << "a stale index entry was left behind";
  EXPECT_EQ(Keys("orders", by("/status", "shipped")), (Ks{"c2/o2"}));

  // Removing the indexed field removes the entry.
  ASSERT_TRUE(IsOk(Patch("orders", "c3", "o3", R"([{"op":"remove","path":"/status"}])").status));
  QueryResult closed = by("/status", "closed");
  EXPECT_EQ(Keys("orders", closed), (Ks{"c1/o1"}));
  EXPECT_EQ(closed.cost.index_entries_read, 1u);

  // An update that keeps the value keeps exactly one entry.
  ASSERT_TRUE(
      IsOk(Patch("orders", "c1", "o1", R"([{"op":"set","path":"/note","value":"n"}])").status));
  QueryResult closed2 = by("/status", "closed");
  EXPECT_EQ(Keys("orders", closed2), (Ks{"c1/o1"}));
  EXPECT_EQ(closed2.cost.index_entries_read, 1u);

  // Delete removes the entry.
  ASSERT_TRUE(IsOk(Delete("orders", "c1", "o1").status));
  QueryResult closed3 = by("/status", "closed");
  EXPECT_TRUE(closed3.items.empty());
  EXPECT_EQ(closed3.cost.index_entries_read, 0u);

  // Numbers compare by value: 10 and 10.0 are the same key; "10" is not.
  ASSERT_TRUE(IsOk(Create("orders", R"({"id":"o4","customer":{"id":"c4"},"amount":10.0})").status));
  EXPECT_EQ(Keys("orders", by("/amount", 10)), (Ks{"c3/o3", "c4/o4"}));
  EXPECT_EQ(Keys("orders", by("/amount", 10.0)), (Ks{"c3/o3", "c4/o4"}));
  EXPECT_TRUE(by("/amount", "10").items.empty());
  EXPECT_EQ(Keys("orders", by("/amount", 20)), (Ks{"c2/o2"}));
}

// An item a version before the invalid_number check stored with a bare
// Infinity (written here straight into RocksDB) can still be replaced and
// deleted in an indexed container: its index entries are found and removed,
// and its change record has no before-image, which no reader could parse. A
// patch refuses it: it would store the Infinity again.
TEST_F(StoreTest, AnItemStoredWithInfinityByAnOlderVersionCanBeReplacedAndDeleted) {
  for (const char* id : {"o1", "o2"}) {
    ASSERT_TRUE(IsOk(Create("orders", R"({"id":")" + std::string(id) +
                                          R"(","customer":{"id":"c1"},"status":"open"})")
                         .status));
  }
  CloseStore();
  {
    Result<std::unique_ptr<RocksDatabase>> db = RocksDatabase::Open(Options());
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    const ContainerHandle* orders = (*db)->Find("orders");
    ASSERT_NE(orders, nullptr);
    // The items keep the LSNs of their creates.
    for (const auto& [id, lsn] : {std::pair<std::string, Lsn>{"o1", 1}, {"o2", 2}}) {
      const std::string legacy = R"({"id":")" + id +
                                 R"(","customer":{"id":"c1"},"status":"open","big":Infinity,)"
                                 R"("_etag":"\")" +
                                 std::to_string(lsn) + R"(\"","_lsn":)" + std::to_string(lsn) +
                                 R"(,"_ts":1})";
      ASSERT_TRUE((*db)
                      ->db()
                      ->Put(rocksdb::WriteOptions(), orders->items, key_format::ItemKey("c1", id),
                            key_format::ItemValue(lsn, legacy))
                      .ok());
    }
  }
  ASSERT_NO_FATAL_FAILURE(OpenStore(Options()));

  EXPECT_TRUE(
      HasCode(Patch("orders", "c1", "o1", R"([{"op":"set","path":"/note","value":"n"}])").status,
              ErrorCode::kStorageError));
  ASSERT_TRUE(
      IsOk(Upsert("orders", R"({"id":"o1","customer":{"id":"c1"},"status":"closed"})").status));
  ASSERT_TRUE(IsOk(Delete("orders", "c1", "o2").status));

  QuerySpec open;
  open.filters.push_back(Eq("/status", "open"));
  QueryResult found = MustQuery("orders", open);
  EXPECT_TRUE(found.items.empty());
  EXPECT_EQ(found.cost.index_entries_read, 0u) << "a stale index entry was left behind";
  QuerySpec closed;
  closed.filters.push_back(Eq("/status", "closed"));
  EXPECT_EQ(Keys("orders", MustQuery("orders", closed)), std::vector<std::string>{"c1/o1"});

  std::vector<ChangeRecord> records = Feed(3);
  ASSERT_EQ(records.size(), 2u);
  for (const ChangeRecord& record : records) {
    json::object env = Obj(record.envelope_json);
    ASSERT_NE(env.if_contains("before"), nullptr);
    EXPECT_TRUE(env.at("before").is_null()) << record.envelope_json;
  }
}

TEST_F(StoreTest, IndexLookupDoesNotMatchValuePrefixesOrOtherTypes) {
  ASSERT_TRUE(IsOk(Create("posts", R"({"id":"p1","postId":"p1","userId":"u1"})").status));
  ASSERT_TRUE(IsOk(Create("posts", R"({"id":"p2","postId":"p2","userId":"u10"})").status));
  ASSERT_TRUE(IsOk(Create("posts", R"({"id":"p3","postId":"p3","userId":"u1"})").status));
  ASSERT_TRUE(IsOk(Create("posts", R"({"id":"p4","postId":"p4","userId":"u"})").status));
  ASSERT_TRUE(IsOk(Create("posts", R"({"id":"p5","postId":"p5","userId":1})").status));
  ASSERT_TRUE(IsOk(Create("posts", R"({"id":"p6","postId":"p6","userId":true})").status));
  ASSERT_TRUE(IsOk(Create("posts", R"({"id":"p7","postId":"p7","userId":null})").status));
  ASSERT_TRUE(IsOk(Create("posts", R"({"id":"p8","postId":"p8","userId":["u1"]})").status));
  ASSERT_TRUE(IsOk(Create("posts", R"({"id":"p9","postId":"p9"})").status));

  auto by = [&](json::value v) {
    QuerySpec q;
    q.filters.push_back(Eq("/userId", std::move(v)));
    return Keys("posts", MustQuery("posts", q));
  };
  using Ks = std::vector<std::string>;
  EXPECT_EQ(by("u1"), (Ks{"p1/p1", "p3/p3"}));
  EXPECT_EQ(by("u10"), (Ks{"p2/p2"}));
  EXPECT_EQ(by("u"), (Ks{"p4/p4"}));
  EXPECT_EQ(by(1), (Ks{"p5/p5"}));
  EXPECT_EQ(by(1.0), (Ks{"p5/p5"}));
  EXPECT_EQ(by("1"), (Ks{}));
  EXPECT_EQ(by(true), (Ks{"p6/p6"}));
  EXPECT_EQ(by(false), (Ks{}));
  EXPECT_EQ(by(nullptr), (Ks{"p7/p7"}));
}

TEST_F(StoreTest, IndexQueryAppliesTheOtherFilters) {
  ASSERT_TRUE(
      IsOk(Create("posts",
                  R"({"id":"p1","postId":"p1","userId":"u1","type":"post","meta":{"lang":"en"}})")
               .status));
  ASSERT_TRUE(
      IsOk(Create("posts",
                  R"({"id":"p2","postId":"p2","userId":"u1","type":"draft","meta":{"lang":"en"}})")
               .status));
  ASSERT_TRUE(
      IsOk(Create("posts",
                  R"({"id":"p3","postId":"p3","userId":"u2","type":"post","meta":{"lang":"en"}})")
               .status));
  ASSERT_TRUE(
      IsOk(Create("posts",
                  R"({"id":"p4","postId":"p4","userId":"u1","type":"post","meta":{"lang":"fr"}})")
               .status));

  QuerySpec q;
  q.filters.push_back(Eq("/type", "post"));  // not indexed, listed first
  q.filters.push_back(Eq("/userId", "u1"));
  q.filters.push_back(Eq("/meta/lang", "en"));
  QueryResult r = MustQuery("posts", q);
  EXPECT_EQ(Keys("posts", r), (std::vector<std::string>{"p1/p1"}));
  EXPECT_EQ(r.cost.index_entries_read, 3u) << "served by the /userId index";
  EXPECT_LE(r.cost.items_read, 3u);
  EXPECT_GE(r.cost.items_read, 1u);
}

TEST_F(StoreTest, CrossPartitionQueryUsesIndexOrFullScan) {
  constexpr int kPosts = 12;
  for (int i = 0; i < kPosts; ++i) {
    char body[160];
    std::snprintf(body, sizeof body,
                  R"({"id":"p%02d","postId":"p%02d","userId":"u%d","type":"%s","n":%d})", i, i,
                  i % 4, i % 2 == 0 ? "post" : "draft", i);
    ASSERT_TRUE(IsOk(Create("posts", body).status));
  }
  QuerySpec all;
  all.limit = kMaxQueryLimit;
  QueryResult everything = MustQuery("posts", all);
  ASSERT_EQ(everything.items.size(), static_cast<size_t>(kPosts));
  const uint64_t all_bytes = TotalSize(everything.items);

  // Through the index: reads only the matching items.
  QuerySpec by_user;
  by_user.filters.push_back(Eq("/userId", "u1"));
  QueryResult r1 = MustQuery("posts", by_user);
  EXPECT_EQ(Keys("posts", r1), (std::vector<std::string>{"p01/p01", "p05/p05", "p09/p09"}));
  EXPECT_EQ(r1.cost.index_entries_read, 3u);
  EXPECT_GE(r1.cost.items_read, 3u);
  EXPECT_LT(r1.cost.items_read, static_cast<uint64_t>(kPosts));
  EXPECT_EQ(r1.cost.partitions_scanned, 3u);
  EXPECT_GE(r1.cost.bytes_read, TotalSize(r1.items));
  EXPECT_LT(r1.cost.bytes_read, all_bytes);

  // Not indexed: a full scan of the container.
  QuerySpec by_type;
  by_type.filters.push_back(Eq("/type", "post"));
  QueryResult r2 = MustQuery("posts", by_type);
  EXPECT_EQ(Keys("posts", r2), (std::vector<std::string>{"p00/p00", "p02/p02", "p04/p04", "p06/p06",
                                                         "p08/p08", "p10/p10"}));
  EXPECT_EQ(r2.cost.index_entries_read, 0u);
  EXPECT_EQ(r2.cost.items_read, static_cast<uint64_t>(kPosts));
  EXPECT_EQ(r2.cost.partitions_scanned, static_cast<uint64_t>(kPosts));
  EXPECT_GE(r2.cost.bytes_read, all_bytes);

  // No filter: everything in (partition key, id) order.
  EXPECT_EQ(everything.cost.index_entries_read, 0u);
  EXPECT_EQ(everything.cost.items_read, static_cast<uint64_t>(kPosts));
  EXPECT_EQ(everything.cost.partitions_scanned, static_cast<uint64_t>(kPosts));
  std::vector<std::string> keys = Keys("posts", everything);
  EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
  EXPECT_FALSE(everything.continuation.has_value());
}

// ===================================================================
// Queries
// ===================================================================

// storage/derived_items.h: who may write derived items.
TEST_F(StoreTest, DerivedItemsAreTheProcessorsToWrite) {
  auto as = [](WriteOp op, WriteOrigin origin) {
    op.origin = origin;
    return op;
  };
  auto derived = [this](std::string_view container, std::string_view body) {
    Result<PreparedItem> r = PrepareDerivedItem(Spec(container), Obj(body), kMaxItem);
    if (!r.ok()) throw std::runtime_error("derived item rejected: " + r.status().ToString());
    return std::move(r.value());
  };
  const char* copy = R"({"id":"p1","userId":"u1","t":1,"_sourceLsn":7,)"
                     R"("_source":{"container":"posts","partitionKey":"p1","id":"p1"}})";
  // A processors-only container refuses every client op, even on a missing item.
  EXPECT_TRUE(
      HasCode(Create("views", R"({"id":"a","k":"x"})").status, ErrorCode::kDerivedContainer));
  EXPECT_TRUE(HasCode(Delete("views", "x", "a").status, ErrorCode::kDerivedContainer));
  ASSERT_TRUE(One("views", "x",
                  as(ItemOp(WriteOpKind::kUpsert, derived("views", R"({"id":"a","k":"x"})")),
                     WriteOrigin::kProcessor))
                  .status.ok());
  ASSERT_TRUE(One("views", "x",
                  as(ItemOp(WriteOpKind::kUpsert, Item("views", R"({"id":"b","k":"x"})")),
                     WriteOrigin::kOverride))
                  .status.ok());
  // In a mixed container: a client cannot write or delete an item with _source.
  ASSERT_TRUE(One("users", "u1",
                  as(ItemOp(WriteOpKind::kUpsert, derived("users", copy)), WriteOrigin::kProcessor))
                  .status.ok());
  EXPECT_TRUE(HasCode(Upsert("users", R"({"id":"p1","userId":"u1","t":2})").status,
                      ErrorCode::kDerivedItem));
  EXPECT_TRUE(HasCode(Patch("users", "u1", "p1", R"([{"op":"set","path":"/t","value":2}])").status,
                      ErrorCode::kDerivedItem));
  EXPECT_TRUE(HasCode(Delete("users", "u1", "p1").status, ErrorCode::kDerivedItem));
  // Reads in a batch are not writes.
  EXPECT_TRUE(One("users", "u1", KeyOp(WriteOpKind::kRead, "p1")).status.ok());
  // A processor's copy of another source never replaces it, nor a client's item.
  ASSERT_TRUE(Create("users", R"({"id":"u1","userId":"u1","username":"ana"})").status.ok());
  std::string twin = copy;
  twin.replace(twin.find(R"("partitionKey":"p1")"), 19, R"("partitionKey":"p9")");
  // The error names both items, as container/partitionKey/id.
  struct Refused {
    std::string body, message;
  };
  for (const Refused& refused :
       {Refused{twin,
                "collision: the copy of posts/p9/p1 would overwrite users/u1/p1, which is a copy "
                "of posts/p1/p1; refused"},
        Refused{R"({"id":"u1","userId":"u1","type":"post","_sourceLsn":8,)"
                R"("_source":{"container":"posts","partitionKey":"evil","id":"u1"}})",
                "collision: the copy of posts/evil/u1 would overwrite users/u1/u1, which is an "
                "item a client wrote; refused"}}) {
    WriteResult w = One(
        "users", "u1",
        as(ItemOp(WriteOpKind::kUpsert, derived("users", refused.body)), WriteOrigin::kProcessor));
    EXPECT_TRUE(HasCode(w.status, ErrorCode::kDerivedItem)) << w.status.ToString();
    EXPECT_EQ(w.status.message(), refused.message);
  }
  EXPECT_EQ(S(MustRead("users", "u1", "u1").at("username")), "ana");
  EXPECT_EQ(U(MustRead("users", "u1", "p1").at("t")), 1u);
  // The same source may; so may an override.
  std::string same = copy;
  same.replace(same.find(R"("t":1)"), 5, R"("t":3)");
  EXPECT_TRUE(One("users", "u1",
                  as(ItemOp(WriteOpKind::kUpsert, derived("users", same)), WriteOrigin::kProcessor))
                  .status.ok());
  EXPECT_TRUE(One("users", "u1", as(KeyOp(WriteOpKind::kDelete, "p1"), WriteOrigin::kOverride))
                  .status.ok());
}

TEST_F(StoreTest, PartitionQueryReadsOnlyThatPartition) {
  for (const char* body :
       {R"({"id":"e","type":"post","lang":"en"})", R"({"id":"a","type":"post","lang":"en"})",
        R"({"id":"c","type":"post","lang":"en"})", R"({"id":"b","type":"post","lang":"fr"})",
        R"({"id":"d","type":"post","lang":"fr"})"}) {
    ASSERT_TRUE(IsOk(Create("feed", body).status));
  }
  ASSERT_TRUE(IsOk(Create("feed", R"({"id":"a","type":"comment","lang":"en"})").status));
  ASSERT_TRUE(IsOk(Create("feed", R"({"id":"z","type":"like"})").status));
  ASSERT_TRUE(IsOk(Create("feed", R"({"id":"a","type":"posts","lang":"en"})").status));

  QuerySpec q;
  q.partition_key = "post";
  QueryResult r = MustQuery("feed", q);
  EXPECT_EQ(Keys("feed", r),
            (std::vector<std::string>{"post/a", "post/b", "post/c", "post/d", "post/e"}));
  EXPECT_EQ(r.cost.partitions_scanned, 1u);
  EXPECT_EQ(r.cost.index_entries_read, 0u);
  EXPECT_EQ(r.cost.items_read, 5u);
  EXPECT_GE(r.cost.bytes_read, TotalSize(r.items));
  EXPECT_FALSE(r.continuation.has_value());

  q.filters.push_back(Eq("/lang", "en"));
  QueryResult en = MustQuery("feed", q);
  EXPECT_EQ(Keys("feed", en), (std::vector<std::string>{"post/a", "post/c", "post/e"}));
  EXPECT_EQ(en.cost.partitions_scanned, 1u);
  EXPECT_EQ(en.cost.items_read, 5u);

  QuerySpec none;
  none.partition_key = "nope";
  QueryResult empty = MustQuery("feed", none);
  EXPECT_TRUE(empty.items.empty());
  EXPECT_FALSE(empty.continuation.has_value());
  EXPECT_EQ(empty.cost.items_read, 0u);

  QuerySpec limited;
  limited.partition_key = "post";
  limited.limit = 3;
  QueryResult page = MustQuery("feed", limited);
  EXPECT_EQ(Keys("feed", page), (std::vector<std::string>{"post/a", "post/b", "post/c"}));
  EXPECT_TRUE(page.continuation.has_value());
}

TEST_F(StoreTest, FiltersMatchScalarsAndPointers) {
  ASSERT_TRUE(
      IsOk(Create("feed", R"({"id":"i1","type":"t","n":1,"b":true,"z":null,"m":{"lang":"en"}})")
               .status));
  ASSERT_TRUE(
      IsOk(Create("feed", R"({"id":"i2","type":"t","n":1.0,"b":false,"m":{"lang":"fr"}})").status));
  ASSERT_TRUE(
      IsOk(Create("feed", R"({"id":"i3","type":"t","n":2,"b":"true","z":0,"m":"en"})").status));
  ASSERT_TRUE(IsOk(Create("feed", R"({"id":"i4","type":"t","n":"1","lang":"en"})").status));
  // Stored text with escapes, and a value that is an object.
  ASSERT_TRUE(IsOk(
      Create("feed", R"({"id":"i5","type":"t","q":"say \"hi\"\n","o":{"a":[1,2]},"e":"caf\u00e9"})")
          .status));

  auto run = [&](std::vector<FieldFilter> filters, bool cross) {
    QuerySpec q;
    if (!cross) q.partition_key = "t";
    q.filters = std::move(filters);
    std::vector<std::string> ids;
    for (const std::string& item : MustQuery("feed", q).items)
      ids.push_back(S(Json(item).at("id")));
    return ids;
  };
  using Ids = std::vector<std::string>;
  for (bool cross : {false, true}) {
    SCOPED_TRACE(cross ? "cross-partition" : "one partition");
    EXPECT_EQ(run({Eq("/n", 1)}, cross), (Ids{"i1", "i2"}));
    EXPECT_EQ(run({Eq("/n", 1.0)}, cross), (Ids{"i1", "i2"}));
    EXPECT_EQ(run({Eq("/n", "1")}, cross), (Ids{"i4"}));
    EXPECT_EQ(run({Eq("/b", true)}, cross), (Ids{"i1"}));
    EXPECT_EQ(run({Eq("/b", "true")}, cross), (Ids{"i3"}));
    EXPECT_EQ(run({Eq("/z", nullptr)}, cross), (Ids{"i1"}));
    EXPECT_EQ(run({Eq("/m/lang", "en")}, cross), (Ids{"i1"}));
    EXPECT_EQ(run({Eq("/m/lang", "en"), Eq("/n", 2)}, cross), (Ids{}));
    EXPECT_EQ(run({Eq("/q", "say \"hi\"\n")}, cross), (Ids{"i5"}));
    EXPECT_EQ(run({Eq("/q", "say \\\"hi\\\"\\n")}, cross), (Ids{}));  // the escaped text
    EXPECT_EQ(run({Eq("/e", "caf\xc3\xa9")}, cross), (Ids{"i5"}));
    EXPECT_EQ(run({Eq("/o", json::parse(R"({"a":[1,2]})"))}, cross), (Ids{"i5"}));
    EXPECT_EQ(run({Eq("/o/a/1", 2)}, cross), (Ids{"i5"}));
    EXPECT_EQ(run({Eq("/n", 1), Eq("/b", false)}, cross), (Ids{"i2"}));
    EXPECT_EQ(run({Eq("/type", "t")}, cross), (Ids{"i1", "i2", "i3", "i4", "i5"}));
  }
}

// Order of values: missing < null < false < true < numbers < strings < arrays/objects;
// ties by (partition key, id).
TEST_F(StoreTest, OrderByFollowsTheDocumentedValueOrder) {
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"m", ""},      {"k", "null"},  {"z", "false"}, {"b", "true"}, {"y", "-1"},
      {"c", "1.0"},   {"d", "1"},     {"a", "2.5"},   {"x", "10"},   {"w", "\"10\""},
      {"e", "\"a\""}, {"f", "\"b\""}, {"g", "[1]"}};
  // Insert in an order unrelated to the expected one.
  for (size_t i = 0; i < expected.size(); ++i) {
    const auto& [id, rank] = expected[(i * 5) % expected.size()];
    std::string body = R"({"id":")" + id + R"(","type":"t")";
    if (!rank.empty()) body += R"(,"meta":{"rank":)" + rank + "}";
    body += "}";
    ASSERT_TRUE(IsOk(Create("feed", body).status)) << body;
  }
  std::vector<std::string> want;
  for (const auto& e : expected) want.push_back(e.first);

  for (bool cross : {false, true}) {
    SCOPED_TRACE(cross ? "cross-partition" : "one partition");
    QuerySpec q;
    if (!cross) q.partition_key = "t";
    q.order_by = Ptr("/meta/rank");
    std::vector<std::string> asc;
    for (const std::string& item : MustQuery("feed", q).items)
      asc.push_back(S(Json(item).at("id")));
    EXPECT_EQ(asc, want);

    q.descending = true;
    std::vector<std::string> desc;
    for (const std::string& item : MustQuery("feed", q).items)
      desc.push_back(S(Json(item).at("id")));
    std::vector<std::string> reversed(want.rbegin(), want.rend());
    std::vector<std::string> reversed_ties_asc = reversed;
    // "c" (1.0) and "d" (1) tie; a descending query may keep the tie order ascending.
    std::iter_swap(std::find(reversed_ties_asc.begin(), reversed_ties_asc.end(), "c"),
                   std::find(reversed_ties_asc.begin(), reversed_ties_asc.end(), "d"));
    EXPECT_TRUE(desc == reversed || desc == reversed_ties_asc) << testing::PrintToString(desc);
  }
}

TEST_F(StoreTest, OrderByBreaksTiesByPartitionKeyThenId) {
  struct Row {
    int date;
    std::string pk, id;
  };
  std::vector<Row> rows;
  for (int i = 0; i < 15; ++i) {
    // Several ids per partition so that both tie-breakers matter.
    Row row{(i * 7) % 3, "p" + std::to_string(i % 4), "i" + std::to_string((i * 11) % 15)};
    rows.push_back(row);
    ASSERT_TRUE(IsOk(Create("feed", R"({"id":")" + row.id + R"(","type":")" + row.pk +
                                        R"(","creationDate":)" + std::to_string(row.date) + "}")
                         .status));
  }
  std::vector<Row> sorted = rows;
  std::sort(sorted.begin(), sorted.end(), [](const Row& a, const Row& b) {
    return std::tie(a.date, a.pk, a.id) < std::tie(b.date, b.pk, b.id);
  });
  std::vector<std::string> want;
  for (const Row& r : sorted) want.push_back(r.pk + "/" + r.id);

  QuerySpec q;
  q.order_by = Ptr("/creationDate");
  QueryResult asc = MustQuery("feed", q);
  EXPECT_EQ(Keys("feed", asc), want);
  EXPECT_EQ(asc.cost.partitions_scanned, 4u);

  q.descending = true;
  QueryResult desc = MustQuery("feed", q);
  ASSERT_EQ(desc.items.size(), rows.size());
  std::vector<int64_t> dates;
  for (const std::string& item : desc.items) {
    dates.push_back(Json(item).at("creationDate").to_number<int64_t>());
  }
  EXPECT_TRUE(std::is_sorted(dates.rbegin(), dates.rend())) << testing::PrintToString(dates);
  std::vector<std::string> desc_keys = Keys("feed", desc);
  std::sort(desc_keys.begin(), desc_keys.end());
  std::vector<std::string> want_sorted = want;
  std::sort(want_sorted.begin(), want_sorted.end());
  EXPECT_EQ(desc_keys, want_sorted);
}

TEST_F(StoreTest, ContinuationWalksEveryPageWithoutDuplicatesOrGaps) {
  for (int i = 0; i < 30; ++i) {
    char body[200];
    std::snprintf(body, sizeof body,
                  R"({"id":"p%02d","postId":"p%02d","userId":"u%d","type":"%s","creationDate":%d})",
                  i, i, i < 20 ? 1 : 2, i % 3 == 0 ? "post" : "draft", (i * 7) % 4);
    ASSERT_TRUE(IsOk(Create("posts", body).status));
    std::snprintf(body, sizeof body, R"({"id":"f%02d","type":"post","rank":%d})", (i * 13) % 30,
                  i % 5);
    ASSERT_TRUE(IsOk(Create("feed", body).status));
  }

  struct Case {
    const char* name;
    const char* container;
    QuerySpec spec;
    size_t expected;
  };
  std::vector<Case> cases;
  {
    QuerySpec s;
    s.partition_key = "post";
    cases.push_back({"partition scan", "feed", s, 30});
    s.order_by = Ptr("/rank");
    s.descending = true;
    cases.push_back({"partition scan ordered descending", "feed", s, 30});
    s.descending = false;
    cases.push_back({"partition scan ordered", "feed", s, 30});
  }
  {
    QuerySpec s;
    s.filters.push_back(Eq("/userId", "u1"));
    cases.push_back({"index lookup", "posts", s, 20});
    s.order_by = Ptr("/creationDate");
    s.descending = true;
    cases.push_back({"index lookup ordered descending", "posts", s, 20});
  }
  {
    QuerySpec s;
    s.filters.push_back(Eq("/type", "post"));
    cases.push_back({"full scan with filter", "posts", s, 10});
  }
  {
    QuerySpec s;
    cases.push_back({"full scan", "posts", s, 30});
    s.order_by = Ptr("/creationDate");
    cases.push_back({"full scan ordered", "posts", s, 30});
    s.descending = true;
    cases.push_back({"full scan ordered descending", "posts", s, 30});
  }

  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    QuerySpec one = c.spec;
    one.limit = kMaxQueryLimit;
    QueryResult whole = MustQuery(c.container, one);
    EXPECT_FALSE(whole.continuation.has_value());
    ASSERT_EQ(whole.items.size(), c.expected);
    const std::vector<std::string> want = Keys(c.container, whole);
    for (size_t limit : {size_t{1}, size_t{7}, size_t{10}, c.expected}) {
      SCOPED_TRACE("limit " + std::to_string(limit));
      const size_t min_pages = (c.expected + limit - 1) / limit;
      size_t pages = 0;
      std::vector<std::string> got =
          Keys(c.container, AllPages(c.container, c.spec, limit, min_pages + 1, &pages));
      EXPECT_EQ(got, want);
      EXPECT_EQ(std::set<std::string>(got.begin(), got.end()).size(), got.size()) << "duplicates";
      EXPECT_GE(pages, min_pages);
      EXPECT_LE(pages, min_pages + 1);
    }
  }
}

TEST_F(StoreTest, ContinuationSurvivesChangesBetweenPages) {
  for (int i = 0; i < 12; ++i) {
    char body[100];
    std::snprintf(body, sizeof body, R"({"id":"i%02d","type":"post"})", i);
    ASSERT_TRUE(IsOk(Create("feed", body).status));
  }
  QuerySpec q;
  q.partition_key = "post";
  q.limit = 5;
  QueryResult p1 = MustQuery("feed", q);
  ASSERT_EQ(Keys("feed", p1),
            (std::vector<std::string>{"post/i00", "post/i01", "post/i02", "post/i03", "post/i04"}));
  ASSERT_TRUE(p1.continuation.has_value());

  // Delete the last item returned, add one before and one after the position.
  ASSERT_TRUE(IsOk(Delete("feed", "post", "i04").status));
  ASSERT_TRUE(IsOk(Create("feed", R"({"id":"i015","type":"post"})").status));
  ASSERT_TRUE(IsOk(Create("feed", R"({"id":"i04a","type":"post"})").status));

  q.continuation = *p1.continuation;
  QueryResult p2 = MustQuery("feed", q);
  EXPECT_EQ(Keys("feed", p2), (std::vector<std::string>{"post/i04a", "post/i05", "post/i06",
                                                        "post/i07", "post/i08"}));
  ASSERT_TRUE(p2.continuation.has_value());
  q.continuation = *p2.continuation;
  QueryResult p3 = MustQuery("feed", q);
  EXPECT_EQ(Keys("feed", p3), (std::vector<std::string>{"post/i09", "post/i10", "post/i11"}));
}

TEST_F(StoreTest, MalformedContinuationIsRejected) {
  ASSERT_TRUE(IsOk(Create("feed", R"({"id":"a","type":"post"})").status));
  QuerySpec q;
  q.partition_key = "post";
  q.continuation = "\x01garbage\xff";
  Result<QueryResult> r = store_->Query("feed", q);
  EXPECT_FALSE(r.ok());
}

// ===================================================================
// Change feed
// ===================================================================

TEST_F(StoreTest, FeedHoldsEveryMutationWithItsEnvelope) {
  std::vector<WriteResult> w;
  w.push_back(Create("users", R"({"id":"u1","userId":"u1","name":"A"})"));
  clock_.Advance(1);
  w.push_back(Create("posts", R"({"id":"p1","postId":"p1","userId":"u1","title":"T"})"));
  clock_.Advance(1);
  w.push_back(Upsert("users", R"({"id":"u1","userId":"u1","name":"B"})"));
  clock_.Advance(1);
  w.push_back(Patch("posts", "p1", "p1", R"([{"op":"set","path":"/title","value":"T2"}])"));
  clock_.Advance(1);
  w.push_back(Delete("posts", "p1", "p1"));
  clock_.Advance(1);
  w.push_back(Upsert("users", R"({"id":"u2","userId":"u2","name":"C"})"));
  clock_.Advance(1);
  w.push_back(Delete("users", "u1", "u1"));
  for (size_t i = 0; i < w.size(); ++i) {
    ASSERT_TRUE(IsOk(w[i].status)) << "write " << i;
    ASSERT_EQ(w[i].last_lsn, i + 1);
  }

  const json::value null;
  auto item = [&](size_t i) { return json::value(ResultItem(w[i])); };
  struct Want {
    const char* op;
    const char* container;
    const char* pk;
    const char* id;
    json::value before, after;
  };
  const std::vector<Want> want = {
      {"create", "users", "u1", "u1", null, item(0)},
      {"create", "posts", "p1", "p1", null, item(1)},
      {"replace", "users", "u1", "u1", item(0), item(2)},
      {"replace", "posts", "p1", "p1", item(1), item(3)},
      {"delete", "posts", "p1", "p1", item(3), null},
      {"create", "users", "u2", "u2", null, item(5)},
      {"delete", "users", "u1", "u1", item(2), null},
  };

  std::vector<ChangeRecord> records = Feed(1);
  ASSERT_EQ(records.size(), want.size());
  for (size_t i = 0; i < records.size(); ++i) {
    SCOPED_TRACE("record " + std::to_string(i + 1));
    const ChangeRecord& r = records[i];
    EXPECT_EQ(r.lsn, i + 1);
    EXPECT_EQ(r.ts_ms, kT0 + i);
    EXPECT_EQ(ChangeOpName(r.op), want[i].op);
    EXPECT_EQ(r.container, want[i].container);
    EXPECT_EQ(r.partition_key, want[i].pk);
    EXPECT_EQ(r.id, want[i].id);

    json::object env = Obj(r.envelope_json);
    for (const char* key :
         {"lsn", "op", "container", "partitionKey", "id", "ts", "before", "after"}) {
      EXPECT_NE(env.if_contains(key), nullptr) << key << " missing in " << r.envelope_json;
    }
    EXPECT_EQ(U(env.at("lsn")), i + 1);
    EXPECT_EQ(S(env.at("op")), want[i].op);
    EXPECT_EQ(S(env.at("container")), want[i].container);
    EXPECT_EQ(S(env.at("partitionKey")), want[i].pk);
    EXPECT_EQ(S(env.at("id")), want[i].id);
    EXPECT_EQ(U(env.at("ts")), kT0 + i);
    EXPECT_EQ(env.at("before"), want[i].before);
    EXPECT_EQ(env.at("after"), want[i].after);
  }
  EXPECT_EQ(ChangeOpName(ChangeOp::kCreate), "create");
  EXPECT_EQ(ChangeOpName(ChangeOp::kReplace), "replace");
  EXPECT_EQ(ChangeOpName(ChangeOp::kDelete), "delete");
}

TEST_F(StoreTest, ReadFeedHonoursFromLimitContainerAndNext) {
  // LSNs 1..10: odd ones users, even ones posts.
  for (int i = 1; i <= 10; ++i) {
    std::string n = std::to_string(i);
    WriteResult w = i % 2 == 1
                        ? Create("users", R"({"id":"u)" + n + R"(","userId":"u)" + n + R"("})")
                        : Create("posts", R"({"id":"p)" + n + R"(","postId":"p)" + n + R"("})");
    ASSERT_TRUE(IsOk(w.status));
  }
  auto read = [&](Lsn from, size_t limit, std::optional<std::string> container) {
    FeedReadSpec spec;
    spec.from = from;
    spec.limit = limit;
    spec.container = std::move(container);
    FeedPage page;
    Status s = store_->ReadFeed(spec, &page);
    EXPECT_TRUE(IsOk(s));
    return page;
  };

  FeedPage all = read(1, 100, std::nullopt);
  EXPECT_EQ(Lsns(all.records), (std::vector<Lsn>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  EXPECT_EQ(all.next, 11u);

  FeedPage posts = read(1, 100, "posts");
  EXPECT_EQ(Lsns(posts.records), (std::vector<Lsn>{2, 4, 6, 8, 10}));
  for (const ChangeRecord& r : posts.records) {
    EXPECT_EQ(r.container, "posts");
    EXPECT_EQ(S(Obj(r.envelope_json).at("container")), "posts");
  }
  EXPECT_EQ(posts.next, 11u);

  FeedPage users = read(4, 100, "users");
  EXPECT_EQ(Lsns(users.records), (std::vector<Lsn>{5, 7, 9}));
  EXPECT_GE(users.next, 10u);
  EXPECT_LE(users.next, 11u);

  FeedPage middle = read(3, 4, std::nullopt);
  EXPECT_EQ(Lsns(middle.records), (std::vector<Lsn>{3, 4, 5, 6}));
  EXPECT_EQ(middle.next, 7u);

  FeedPage last = read(10, 1, std::nullopt);
  EXPECT_EQ(Lsns(last.records), (std::vector<Lsn>{10}));
  EXPECT_EQ(last.next, 11u);

  FeedPage beyond = read(11, 100, std::nullopt);
  EXPECT_TRUE(beyond.records.empty());
  EXPECT_EQ(beyond.next, 11u);

  FeedPage two = read(1, 2, "posts");
  EXPECT_EQ(Lsns(two.records), (std::vector<Lsn>{2, 4}));
  EXPECT_GE(two.next, 5u);
  EXPECT_LE(two.next, 6u);
  EXPECT_EQ(Lsns(read(two.next, 2, "posts").records), (std::vector<Lsn>{6, 8}));

  EXPECT_TRUE(read(1, 100, "feed").records.empty());
  EXPECT_EQ(Lsns(Feed(1, "posts")), (std::vector<Lsn>{2, 4, 6, 8, 10}));
  EXPECT_EQ(Lsns(Feed(1, "users")), (std::vector<Lsn>{1, 3, 5, 7, 9}));
}

TEST_F(StoreTest, ReadFeedStopsAfterMaxScannedRecordsOfOtherContainers) {
  for (int i = 1; i <= 5; ++i) {
    std::string n = std::to_string(i);
    ASSERT_TRUE(IsOk(Create("users", R"({"id":"u)" + n + R"(","userId":"u)" + n + R"("})").status));
  }
  for (int i = 6; i <= 10; ++i) {
    std::string n = std::to_string(i);
    ASSERT_TRUE(IsOk(Create("posts", R"({"id":"p)" + n + R"(","postId":"p)" + n + R"("})").status));
  }
  FeedReadSpec spec;
  spec.from = 1;
  spec.container = "posts";
  spec.max_scanned = 3;
  FeedPage page;
  ASSERT_TRUE(IsOk(store_->ReadFeed(spec, &page)));
  EXPECT_TRUE(page.records.empty());
  EXPECT_GT(page.next, 1u) << "next must move past the skipped records";
  EXPECT_LE(page.next, 4u) << "only 3 records may be visited";

  // Walking with `next` reaches every posts record.
  std::vector<Lsn> seen;
  for (int guard = 0; spec.from <= store_->HeadLsn(); ++guard) {
    ASSERT_LT(guard, 100);
    FeedPage p;
    ASSERT_TRUE(IsOk(store_->ReadFeed(spec, &p)));
    EXPECT_LE(p.records.size(), 3u);
    for (const ChangeRecord& r : p.records) seen.push_back(r.lsn);
    ASSERT_GT(p.next, spec.from);
    spec.from = p.next;
  }
  EXPECT_EQ(seen, (std::vector<Lsn>{6, 7, 8, 9, 10}));
}

TEST_F(StoreTest, BeforeImagesCanBeDisabled) {
  StoreOptions o = Options();
  o.before_images = false;
  ASSERT_NO_FATAL_FAILURE(Reopen(o));
  ASSERT_TRUE(IsOk(Create("users", R"({"id":"u1","userId":"u1","v":1})").status));
  WriteResult up = Upsert("users", R"({"id":"u1","userId":"u1","v":2})");
  ASSERT_TRUE(IsOk(up.status));
  WriteResult patched = Patch("users", "u1", "u1", R"([{"op":"incr","path":"/v","value":1}])");
  ASSERT_TRUE(IsOk(patched.status));
  ASSERT_TRUE(IsOk(Delete("users", "u1", "u1").status));

  std::vector<ChangeRecord> records = Feed(1);
  ASSERT_EQ(records.size(), 4u);
  const std::vector<std::string> ops = {"create", "replace", "replace", "delete"};
  for (size_t i = 0; i < records.size(); ++i) {
    SCOPED_TRACE(i);
    json::object env = Obj(records[i].envelope_json);
    EXPECT_EQ(S(env.at("op")), ops[i]);
    ASSERT_NE(env.if_contains("before"), nullptr);
    EXPECT_TRUE(env.at("before").is_null()) << records[i].envelope_json;
  }
  EXPECT_EQ(Obj(records[1].envelope_json).at("after"), json::value(ResultItem(up)));
  EXPECT_EQ(Obj(records[2].envelope_json).at("after"), json::value(ResultItem(patched)));
  EXPECT_TRUE(Obj(records[3].envelope_json).at("after").is_null());
}

// ===================================================================
// Head watches
// ===================================================================

TEST_F(StoreTest, OnHeadReachedFiresRightAwayWhenAlreadyReached) {
  bool fired_at_zero = false;
  store_->OnHeadReached(0, [&] { fired_at_zero = true; });
  EXPECT_TRUE(fired_at_zero);

  ASSERT_TRUE(IsOk(Create("users", R"({"id":"u1","userId":"u1"})").status));
  ASSERT_TRUE(IsOk(Create("users", R"({"id":"u2","userId":"u2"})").status));
  for (Lsn lsn : {Lsn{1}, Lsn{2}}) {
    std::thread::id fired_on;
    int calls = 0;
    uint64_t token = store_->OnHeadReached(lsn, [&] {
      ++calls;
      fired_on = std::this_thread::get_id();
    });
    EXPECT_EQ(calls, 1) << "lsn " << lsn;
    EXPECT_EQ(fired_on, std::this_thread::get_id()) << "runs on the caller's thread";
    store_->CancelHeadWatch(token);  // harmless after it ran
    EXPECT_EQ(calls, 1);
  }
}

TEST_F(StoreTest, OnHeadReachedFiresWhenALaterWriteCommits) {
  ASSERT_TRUE(IsOk(Create("users", R"({"id":"u1","userId":"u1"})").status));
  auto promise = std::make_shared<std::promise<Lsn>>();
  std::future<Lsn> fired = promise->get_future();
  std::atomic<int> calls{0};
  store_->OnHeadReached(3, [this, promise, &calls] {
    if (calls.fetch_add(1) == 0) promise->set_value(store_->HeadLsn());
  });
  EXPECT_EQ(fired.wait_for(std::chrono::seconds(0)), std::future_status::timeout);

  ASSERT_TRUE(IsOk(Create("users", R"({"id":"u2","userId":"u2"})").status));  // LSN 2
  EXPECT_EQ(fired.wait_for(std::chrono::seconds(0)), std::future_status::timeout)
      << "fired before the head reached 3";

  ASSERT_TRUE(IsOk(Create("users", R"({"id":"u3","userId":"u3"})").status));  // LSN 3
  ASSERT_EQ(fired.wait_for(kLongWait), std::future_status::ready);
  EXPECT_GE(fired.get(), 3u);

  // Once fired, the record is readable.
  FeedReadSpec spec;
  spec.from = 3;
  FeedPage page;
  ASSERT_TRUE(IsOk(store_->ReadFeed(spec, &page)));
  EXPECT_EQ(Lsns(page.records), (std::vector<Lsn>{3}));

  // A watch satisfied by a batch that jumps past it fires too, and only once.
  auto p2 = std::make_shared<std::promise<void>>();
  std::future<void> f2 = p2->get_future();
  std::atomic<int> calls2{0};
  store_->OnHeadReached(5, [p2, &calls2] {
    if (calls2.fetch_add(1) == 0) p2->set_value();
  });
  std::vector<WriteOp> ops;
  for (int i = 0; i < 4; ++i) {
    ops.push_back(ItemOp(WriteOpKind::kCreate,
                         Item("feed", R"({"id":"b)" + std::to_string(i) + R"(","type":"t"})")));
  }
  ASSERT_TRUE(IsOk(Batch("feed", "t", std::move(ops)).status));  // LSNs 4..7
  ASSERT_EQ(f2.wait_for(kLongWait), std::future_status::ready);

  // A later watch on the same commit thread proves earlier ones are settled.
  auto p3 = std::make_shared<std::promise<void>>();
  std::future<void> f3 = p3->get_future();
  store_->OnHeadReached(8, [p3] { p3->set_value(); });
  ASSERT_TRUE(IsOk(Create("users", R"({"id":"u8","userId":"u8"})").status));
  ASSERT_EQ(f3.wait_for(kLongWait), std::future_status::ready);
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(calls2.load(), 1);
}

TEST_F(StoreTest, CancelledHeadWatchDoesNotFire) {
  std::atomic<int> cancelled_calls{0};
  uint64_t token = store_->OnHeadReached(2, [&] { cancelled_calls.fetch_add(1); });
  store_->CancelHeadWatch(token);

  auto promise = std::make_shared<std::promise<void>>();
  std::future<void> later = promise->get_future();
  store_->OnHeadReached(3, [promise] { promise->set_value(); });
  for (int i = 1; i <= 3; ++i) {
    std::string n = std::to_string(i);
    ASSERT_TRUE(IsOk(Create("users", R"({"id":"u)" + n + R"(","userId":"u)" + n + R"("})").status));
  }
  // Watches fire on the commit thread in commit order: once the watch for
  // LSN 3 ran, the one for LSN 2 would have run already.
  ASSERT_EQ(later.wait_for(kLongWait), std::future_status::ready);
  EXPECT_EQ(cancelled_calls.load(), 0);
}

// ===================================================================
// Persistence and configuration checks
// ===================================================================

TEST_F(StoreTest, ReopenKeepsItemsHeadFeedAndConsumers) {
  StoreOptions o = Options();
  o.sync = true;
  ASSERT_NO_FATAL_FAILURE(Reopen(o));

  ASSERT_TRUE(IsOk(Create("users", R"({"id":"u1","userId":"u1","name":"A"})").status));
  ASSERT_TRUE(IsOk(Create("posts", R"({"id":"p1","postId":"p1","userId":"u1"})").status));
  std::vector<WriteOp> ops;
  ops.push_back(ItemOp(WriteOpKind::kCreate, Item("feed", R"({"id":"a","type":"t"})")));
  ops.push_back(ItemOp(WriteOpKind::kCreate, Item("feed", R"({"id":"b","type":"t"})")));
  ASSERT_TRUE(IsOk(Batch("feed", "t", std::move(ops)).status));
  ASSERT_TRUE(IsOk(Create("posts", R"({"id":"p2","postId":"p2","userId":"u1"})").status));
  ASSERT_TRUE(IsOk(Delete("posts", "p1", "p1").status));
  ASSERT_TRUE(IsOk(Upsert("users", R"({"id":"u1","userId":"u1","name":"B"})").status));
  ASSERT_TRUE(IsOk(store_->RegisterConsumer("kafka", 3)));
  ASSERT_EQ(store_->HeadLsn(), 7u);

  const json::object u1 = MustRead("users", "u1", "u1");
  const json::object a = MustRead("feed", "t", "a");
  const json::object p2 = MustRead("posts", "p2", "p2");
  std::vector<std::string> envelopes;
  for (const ChangeRecord& r : Feed()) envelopes.push_back(r.envelope_json);
  ASSERT_EQ(envelopes.size(), 7u);

  clock_.Advance(1000);
  ASSERT_NO_FATAL_FAILURE(Reopen(o));

  EXPECT_TRUE(IsOk(store_->Health()));
  EXPECT_EQ(store_->HeadLsn(), 7u);
  EXPECT_EQ(store_->OldestRetainedLsn(), 1u);
  EXPECT_EQ(MustRead("users", "u1", "u1"), u1);
  EXPECT_EQ(MustRead("feed", "t", "a"), a);
  EXPECT_EQ(MustRead("posts", "p2", "p2"), p2);
  EXPECT_TRUE(HasCode(ReadStatus("posts", "p1", "p1"), ErrorCode::kNotFound));
  std::vector<std::string> envelopes_after;
  for (const ChangeRecord& r : Feed()) envelopes_after.push_back(r.envelope_json);
  EXPECT_EQ(envelopes_after, envelopes);

  std::vector<ConsumerWatermark> consumers = store_->Consumers();
  ASSERT_EQ(consumers.size(), 1u);
  EXPECT_EQ(consumers[0].name, "kafka");
  EXPECT_EQ(consumers[0].acked, 3u);

  // The index survived too.
  QuerySpec q;
  q.filters.push_back(Eq("/userId", "u1"));
  QueryResult r = MustQuery("posts", q);
  EXPECT_EQ(Keys("posts", r), (std::vector<std::string>{"p2/p2"}));
  EXPECT_EQ(r.cost.index_entries_read, 1u);

  // New LSNs continue after the old head.
  WriteResult next = Create("users", R"({"id":"u2","userId":"u2"})");
  ASSERT_TRUE(IsOk(next.status));
  EXPECT_EQ(next.results[0].lsn, 8u);
  EXPECT_EQ(U(ResultItem(next).at("_lsn")), 8u);
  EXPECT_EQ(U(ResultItem(next).at("_ts")), kT0 + 1000);
  EXPECT_NE(Etag(next), S(u1.at("_etag")));
  EXPECT_EQ(Lsns(Feed(7)), (std::vector<Lsn>{7, 8}));

  // Etags written before the restart still work as preconditions.
  WriteResult replaced =
      Replace("users", R"({"id":"u1","userId":"u1","name":"C"})", S(u1.at("_etag")));
  ASSERT_TRUE(IsOk(replaced.status));
  EXPECT_EQ(replaced.results[0].lsn, 9u);
}

TEST_F(StoreTest, ParkedChangesAreKeptPerConsumerInLsnOrderAcrossAReopen) {
  ASSERT_TRUE(IsOk(store_->RegisterConsumer("processor.a", 0)));
  ASSERT_TRUE(IsOk(store_->RegisterConsumer("processor.ab", 0)));
  auto parked = [](Lsn lsn, const std::string& id, const std::string& error) {
    ParkedRecord p;
    p.change.lsn = lsn;
    p.change.ts_ms = 1000 + lsn;
    p.change.op = ChangeOp::kReplace;
    p.change.container = "users";
    p.change.partition_key = std::string("u\0/1", 4);
    p.change.id = id;
    p.change.envelope_json = R"({"lsn":)" + std::to_string(lsn) + "}";
    p.error = error;
    return p;
  };
  ASSERT_TRUE(IsOk(store_->PutParked("processor.a", parked(5, "x5", ""))));
  ASSERT_TRUE(IsOk(store_->PutParked("processor.a", parked(2, "x2", "kind error"))));
  ASSERT_TRUE(IsOk(store_->PutParked("processor.ab", parked(3, "y3", "other"))));
  ASSERT_NO_FATAL_FAILURE(Reopen(Options()));

  auto a = store_->ListParked("processor.a");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_EQ(a->size(), 2u);
  const ParkedRecord& first = (*a)[0];
  EXPECT_EQ(first.change.lsn, 2u);
  EXPECT_EQ(first.change.ts_ms, 1002u);
  EXPECT_EQ(first.change.op, ChangeOp::kReplace);
  EXPECT_EQ(first.change.container, "users");
  EXPECT_EQ(first.change.partition_key, std::string("u\0/1", 4));
  EXPECT_EQ(first.change.id, "x2");
  EXPECT_EQ(first.change.envelope_json, R"({"lsn":2})");
  EXPECT_EQ(first.error, "kind error");
  EXPECT_EQ((*a)[1].change.lsn, 5u);
  EXPECT_EQ((*a)[1].error, "");

  ASSERT_TRUE(IsOk(store_->DeleteParked("processor.a", 2)));
  a = store_->ListParked("processor.a");
  ASSERT_TRUE(a.ok());
  ASSERT_EQ(a->size(), 1u);
  EXPECT_EQ((*a)[0].change.lsn, 5u);

  // Unregistering drops a consumer's parked changes, and only its own.
  ASSERT_TRUE(IsOk(store_->UnregisterConsumer("processor.a")));
  a = store_->ListParked("processor.a");
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->empty());
  auto ab = store_->ListParked("processor.ab");
  ASSERT_TRUE(ab.ok());
  ASSERT_EQ(ab->size(), 1u);
  EXPECT_EQ((*ab)[0].change.id, "y3");
}

TEST_F(StoreTest, OpenRejectsAChangedPartitionKeyPath) {
  ASSERT_TRUE(IsOk(Create("posts", R"({"id":"p1","postId":"p1","userId":"u1"})").status));
  CloseStore();

  StoreOptions changed = Options();
  for (ContainerSpec& c : changed.containers) {
    if (c.name == "posts") {
      c.partition_key_path = "/userId";
      c.index_paths = {"/postId"};
    }
  }
  Result<std::unique_ptr<DocumentStore>> r = DocumentStore::Open(changed);
  EXPECT_FALSE(r.ok()) << "opened with posts partitioned by /userId";
  if (r.ok()) r.value()->Close();

  // The failed open left the database usable.
  ASSERT_NO_FATAL_FAILURE(OpenStore(Options()));
  EXPECT_EQ(S(MustRead("posts", "p1", "p1").at("userId")), "u1");
  EXPECT_EQ(store_->HeadLsn(), 1u);
}

TEST_F(StoreTest, OpenRejectsDroppingAContainerThatHasData) {
  ASSERT_TRUE(IsOk(Create("orders", R"({"id":"o1","customer":{"id":"c1"}})").status));
  CloseStore();

  StoreOptions without = Options();
  without.containers = BlogContainers();
  Result<std::unique_ptr<DocumentStore>> r = DocumentStore::Open(without);
  EXPECT_FALSE(r.ok()) << "opened without the orders container";
  if (r.ok()) r.value()->Close();

  ASSERT_NO_FATAL_FAILURE(OpenStore(Options()));
  EXPECT_TRUE(IsOk(ReadStatus("orders", "c1", "o1")));
}

TEST_F(StoreTest, NewlyConfiguredIndexIsBuiltFromExistingItems) {
  ASSERT_TRUE(IsOk(Create("orders", R"({"id":"o1","customer":{"id":"c1"},"region":"eu"})").status));
  ASSERT_TRUE(IsOk(Create("orders", R"({"id":"o2","customer":{"id":"c2"},"region":"us"})").status));
  ASSERT_TRUE(IsOk(Create("orders", R"({"id":"o3","customer":{"id":"c3"},"region":"eu"})").status));

  StoreOptions o = Options();
  for (ContainerSpec& c : o.containers) {
    if (c.name == "orders") c.index_paths.push_back("/region");
  }
  ASSERT_NO_FATAL_FAILURE(Reopen(o));
  QuerySpec q;
  q.filters.push_back(Eq("/region", "eu"));
  QueryResult r = MustQuery("orders", q);
  EXPECT_EQ(Keys("orders", r), (std::vector<std::string>{"c1/o1", "c3/o3"}));
  EXPECT_EQ(r.cost.index_entries_read, 2u) << "the new index was not built";

  // And it is maintained from then on.
  ASSERT_TRUE(
      IsOk(Patch("orders", "c1", "o1", R"([{"op":"set","path":"/region","value":"us"}])").status));
  EXPECT_EQ(Keys("orders", MustQuery("orders", q)), (std::vector<std::string>{"c3/o3"}));
}

TEST_F(StoreTest, DroppedAndReaddedIndexHasNoStaleEntries) {
  ASSERT_TRUE(
      IsOk(Create("orders", R"({"id":"o1","customer":{"id":"c1"},"status":"open"})").status));
  ASSERT_TRUE(
      IsOk(Create("orders", R"({"id":"o2","customer":{"id":"c2"},"status":"open"})").status));

  StoreOptions no_status = Options();
  for (ContainerSpec& c : no_status.containers) {
    if (c.name == "orders") c.index_paths = {"/amount"};
  }
  ASSERT_NO_FATAL_FAILURE(Reopen(no_status));
  // Changes made while /status is not indexed.
  ASSERT_TRUE(
      IsOk(Upsert("orders", R"({"id":"o1","customer":{"id":"c1"},"status":"closed"})").status));
  ASSERT_TRUE(IsOk(Delete("orders", "c2", "o2").status));
  ASSERT_TRUE(
      IsOk(Create("orders", R"({"id":"o3","customer":{"id":"c3"},"status":"open"})").status));
  // Without the index the query is a full scan, and still correct.
  QuerySpec open;
  open.filters.push_back(Eq("/status", "open"));
  QueryResult scanned = MustQuery("orders", open);
  EXPECT_EQ(Keys("orders", scanned), (std::vector<std::string>{"c3/o3"}));
  EXPECT_EQ(scanned.cost.index_entries_read, 0u);

  ASSERT_NO_FATAL_FAILURE(Reopen(Options()));
  QueryResult r = MustQuery("orders", open);
  EXPECT_EQ(Keys("orders", r), (std::vector<std::string>{"c3/o3"}));
  EXPECT_EQ(r.cost.index_entries_read, 1u) << "stale entries from before the drop";
  QuerySpec closed;
  closed.filters.push_back(Eq("/status", "closed"));
  QueryResult rc = MustQuery("orders", closed);
  EXPECT_EQ(Keys("orders", rc), (std::vector<std::string>{"c1/o1"}));
  EXPECT_EQ(rc.cost.index_entries_read, 1u);
}

// ===================================================================
// Shutdown
// ===================================================================

TEST_F(StoreTest, WritesAfterCloseAreUnavailable) {
  ASSERT_TRUE(IsOk(Create("users", R"({"id":"u1","userId":"u1"})").status));
  PreparedItem u2 = Item("users", R"({"id":"u2","userId":"u2"})");
  PreparedItem u3 = Item("users", R"({"id":"u3","userId":"u3"})");
  store_->Close();
  EXPECT_FALSE(store_->Health().ok());

  WriteResult w = One("users", "u2", ItemOp(WriteOpKind::kCreate, u2));
  EXPECT_TRUE(HasCode(w.status, ErrorCode::kUnavailable));

  auto promise = std::make_shared<std::promise<Status>>();
  std::future<Status> done = promise->get_future();
  std::atomic<int> calls{0};
  WriteRequest request;
  request.container = "users";
  request.partition_key = "u3";
  request.ops.push_back(ItemOp(WriteOpKind::kCreate, u3));
  store_->Submit(std::move(request), [promise, &calls](WriteResult result) {
    if (calls.fetch_add(1) == 0) promise->set_value(result.status);
  });
  ASSERT_EQ(done.wait_for(kLongWait), std::future_status::ready);
  EXPECT_TRUE(HasCode(done.get(), ErrorCode::kUnavailable));

  store_->Close();  // idempotent
  EXPECT_EQ(calls.load(), 1);

  ASSERT_NO_FATAL_FAILURE(Reopen(Options()));
  EXPECT_EQ(store_->HeadLsn(), 1u);
  EXPECT_TRUE(HasCode(ReadStatus("users", "u2", "u2"), ErrorCode::kNotFound));
  EXPECT_TRUE(HasCode(ReadStatus("users", "u3", "u3"), ErrorCode::kNotFound));
}

TEST_F(StoreTest, CloseFinishesQueuedWrites) {
  constexpr int kWrites = 300;
  std::atomic<int> ok{0}, failed{0};
  for (int i = 0; i < kWrites; ++i) {
    WriteRequest request;
    request.container = "feed";
    request.partition_key = "q";
    request.ops.push_back(
        ItemOp(WriteOpKind::kCreate,
               Item("feed", R"({"id":"i)" + std::to_string(i) + R"(","type":"q"})")));
    store_->Submit(std::move(request),
                   [&](WriteResult r) { (r.status.ok() ? ok : failed).fetch_add(1); });
  }
  store_->Close();
  EXPECT_EQ(ok.load(), kWrites) << "every queued write is finished by Close()";
  EXPECT_EQ(failed.load(), 0);

  ASSERT_NO_FATAL_FAILURE(Reopen(Options()));
  EXPECT_EQ(store_->HeadLsn(), static_cast<Lsn>(kWrites));
  QuerySpec q;
  q.partition_key = "q";
  q.limit = kMaxQueryLimit;
  EXPECT_EQ(MustQuery("feed", q).items.size(), static_cast<size_t>(kWrites));
}

TEST_F(StoreTest, StatsCountCommittedWork) {
  ASSERT_TRUE(IsOk(Create("users", R"({"id":"u1","userId":"u1"})").status));
  ASSERT_TRUE(IsOk(Create("users", R"({"id":"u2","userId":"u2"})").status));
  std::vector<WriteOp> ops;
  ops.push_back(ItemOp(WriteOpKind::kCreate, Item("feed", R"({"id":"a","type":"t"})")));
  ops.push_back(ItemOp(WriteOpKind::kCreate, Item("feed", R"({"id":"b","type":"t"})")));
  ops.push_back(KeyOp(WriteOpKind::kRead, "a"));
  ASSERT_TRUE(IsOk(Batch("feed", "t", std::move(ops)).status));
  StoreStats s = store_->Stats();
  EXPECT_EQ(s.head_lsn, 4u);
  EXPECT_EQ(s.changes_committed, 4u);
  EXPECT_EQ(s.requests_committed, 3u);
  EXPECT_GE(s.groups_committed, 1u);
  EXPECT_LE(s.groups_committed, 3u);
  EXPECT_EQ(s.oldest_retained_lsn, 1u);
}

// ===================================================================
// Concurrency
// ===================================================================

TEST_F(StoreTest, ConcurrentWritersGetContiguousLsnsAndReadersSeeNoGap) {
  constexpr int kThreads = 8;
  constexpr int kPerThread = 500;
  constexpr Lsn kTotal = kThreads * kPerThread;

  // A reader follows the feed while the writers run: whenever HeadLsn() says
  // N, every record up to N must be readable, with no gap.
  std::string reader_error;
  Lsn reader_next = 1;
  std::thread reader([&] {
    Lsn next = 1;
    while (next <= kTotal) {
      auto reached = std::make_shared<std::promise<void>>();
      std::future<void> f = reached->get_future();
      store_->OnHeadReached(next, [reached] { reached->set_value(); });
      if (f.wait_for(kLongWait) != std::future_status::ready) {
        reader_error = "head never reached " + std::to_string(next);
        return;
      }
      const Lsn head = store_->HeadLsn();
      if (head < next) {
        reader_error =
            "OnHeadReached(" + std::to_string(next) + ") fired at head " + std::to_string(head);
        return;
      }
      while (next <= head) {
        FeedReadSpec spec;
        spec.from = next;
        spec.limit = 1000;
        FeedPage page;
        Status s = store_->ReadFeed(spec, &page);
        if (!s.ok()) {
          reader_error = "ReadFeed: " + s.ToString();
          return;
        }
        if (page.records.empty()) {
          reader_error = "head is " + std::to_string(head) + " but nothing is readable from " +
                         std::to_string(next);
          return;
        }
        for (const ChangeRecord& r : page.records) {
          if (r.lsn != next) {
            reader_error =
                "expected LSN " + std::to_string(next) + ", read " + std::to_string(r.lsn);
            return;
          }
          ++next;
        }
      }
    }
    reader_next = next;
  });

  struct Outcome {
    std::mutex mu;
    std::condition_variable cv;
    int callbacks = 0;
    std::vector<std::pair<std::string, Lsn>> written;  // id, LSN, in completion order
    std::vector<std::string> errors;
  };
  std::vector<std::shared_ptr<Outcome>> outcomes;
  for (int t = 0; t < kThreads; ++t) outcomes.push_back(std::make_shared<Outcome>());

  auto request = [this](int t, int i, std::string* id) {
    *id = "t" + std::to_string(t) + "-" + std::to_string(i);
    WriteRequest r;
    r.container = "posts";
    r.partition_key = *id;
    r.ops.push_back(ItemOp(WriteOpKind::kCreate,
                           Item("posts", R"({"id":")" + *id + R"(","postId":")" + *id +
                                             R"(","userId":"w)" + std::to_string(t) + R"("})")));
    return r;
  };

  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&, t] {
      std::shared_ptr<Outcome> out = outcomes[t];
      for (int i = 0; i < kPerThread; ++i) {
        std::string id;
        WriteRequest r = request(t, i, &id);
        if (t % 2 == 0) {  // Write(): blocking
          WriteResult w = store_->Write(std::move(r));
          std::lock_guard<std::mutex> lock(out->mu);
          if (w.status.ok() && w.results.size() == 1) {
            out->written.emplace_back(id, w.results[0].lsn);
          } else {
            out->errors.push_back(id + ": " + w.status.ToString());
          }
          ++out->callbacks;
        } else {  // Submit(): callback on the commit thread
          store_->Submit(std::move(r), [out, id](WriteResult w) {
            std::lock_guard<std::mutex> lock(out->mu);
            if (w.status.ok() && w.results.size() == 1) {
              out->written.emplace_back(id, w.results[0].lsn);
            } else {
              out->errors.push_back(id + ": " + w.status.ToString());
            }
            ++out->callbacks;
            out->cv.notify_all();
          });
        }
      }
      std::unique_lock<std::mutex> lock(out->mu);
      if (!out->cv.wait_for(lock, kLongWait, [&] { return out->callbacks == kPerThread; })) {
        out->errors.push_back("callbacks missing");
      }
    });
  }
  for (std::thread& w : writers) w.join();
  reader.join();

  std::vector<Lsn> all;
  std::map<std::string, Lsn> lsn_of;
  for (int t = 0; t < kThreads; ++t) {
    std::lock_guard<std::mutex> lock(outcomes[t]->mu);
    EXPECT_TRUE(outcomes[t]->errors.empty()) << "thread " << t << ": " << outcomes[t]->errors.size()
                                             << " errors, first " << outcomes[t]->errors.front();
    EXPECT_EQ(outcomes[t]->callbacks, kPerThread) << "thread " << t;
    Lsn previous = 0;
    for (const auto& [id, lsn] : outcomes[t]->written) {
      all.push_back(lsn);
      lsn_of[id] = lsn;
      if (t % 2 == 0) {
        EXPECT_GT(lsn, previous) << "sequential writes of one thread commit in order";
        previous = lsn;
      }
    }
  }
  std::sort(all.begin(), all.end());
  std::vector<Lsn> expected(kTotal);
  for (Lsn i = 0; i < kTotal; ++i) expected[i] = i + 1;
  EXPECT_EQ(all, expected) << "LSNs must be exactly 1..N, no gap and no duplicate";
  EXPECT_EQ(store_->HeadLsn(), kTotal);
  EXPECT_EQ(store_->Stats().changes_committed, kTotal);
  EXPECT_EQ(store_->Stats().requests_committed, kTotal);

  EXPECT_EQ(reader_error, "");
  EXPECT_EQ(reader_next, kTotal + 1);

  // Every item is readable and carries the LSN its write reported.
  ASSERT_EQ(lsn_of.size(), static_cast<size_t>(kTotal));
  for (const auto& [id, lsn] : lsn_of) {
    json::object item;
    Status s = ReadJson("posts", id, id, &item);
    ASSERT_TRUE(IsOk(s)) << id;
    EXPECT_EQ(U(item.at("_lsn")), lsn) << id;
  }
  // The feed has exactly those records.
  std::vector<ChangeRecord> records = Feed(1);
  ASSERT_EQ(records.size(), static_cast<size_t>(kTotal));
  for (size_t i = 0; i < records.size(); ++i) {
    ASSERT_EQ(records[i].lsn, i + 1);
    EXPECT_EQ(lsn_of[records[i].id], records[i].lsn) << records[i].id;
    EXPECT_EQ(ChangeOpName(records[i].op), "create");
  }
  // And the index has every entry.
  QuerySpec q;
  q.filters.push_back(Eq("/userId", "w3"));
  q.limit = kMaxQueryLimit;
  EXPECT_EQ(MustQuery("posts", q).items.size(), static_cast<size_t>(kPerThread));
}

// ChurnFlush (storage/churn_flush.h): a small container whose items are
// deleted and created over and over gets its memtable flushed; a large one
// with the same number of overwrites does not.
TEST_F(StoreTest, AContainerRewrittenOverAndOverIsFlushedAndALargeOneIsNot) {
  auto item = [](const std::string& id, int round) {
    return R"({"id":")" + id + R"(","type":"post","round":)" + std::to_string(round) + "}";
  };
  for (int i = 0; i < 10; ++i)
    ASSERT_TRUE(IsOk(Create("feed", item("f" + std::to_string(i), 0)).status));
  const uint64_t at_start = store_->Stats().churn_flushes;
  for (int r = 1; r <= 600; ++r) {  // 1,200 dead entries against 10 items
    const std::string id = "f" + std::to_string(r % 10);
    ASSERT_TRUE(IsOk(Delete("feed", "post", id).status));
    ASSERT_TRUE(IsOk(Create("feed", item(id, r)).status));
  }
  const uint64_t after_feed = store_->Stats().churn_flushes;
  EXPECT_GE(after_feed, at_start + 1);
  for (int i = 0; i < 10; ++i) {
    EXPECT_TRUE(IsOk(ReadStatus("feed", "post", "f" + std::to_string(i)))) << i;
  }

  // `posts`: 3,000 items, then 1,100 replaces: fewer than twice its items.
  for (int b = 0; b < 30; ++b) {
    std::vector<WriteOp> ops;
    for (int i = 0; i < 100; ++i) {
      std::string id = "c" + std::to_string(b * 100 + i);
      ops.push_back(ItemOp(WriteOpKind::kCreate,
                           Item("posts", R"({"id":")" + id + R"(","postId":"p1","n":0})"),
                           std::nullopt));
    }
    ASSERT_TRUE(IsOk(Batch("posts", "p1", std::move(ops)).status));
  }
  for (int i = 0; i < 1100; ++i) {
    std::string id = "c" + std::to_string(i);
    ASSERT_TRUE(IsOk(Replace("posts", R"({"id":")" + id + R"(","postId":"p1","n":1})").status));
  }
  EXPECT_EQ(store_->Stats().churn_flushes, after_feed);
}

// The query cache (storage/query_cache.h). An answer it cannot keep
// current - unordered, with a filter: whether its page has a continuation
// depends on the items the filter rejects - is dropped by a write to its
// partition.
TEST_F(StoreTest, APartitionQueryIsServedFromTheCacheUntilThatPartitionIsWritten) {
  for (const char* id : {"a", "b"}) {
    ASSERT_TRUE(
        IsOk(Create("posts", std::string(R"({"id":")") + id + R"(","postId":"p1"})").status));
  }
  ASSERT_TRUE(IsOk(Create("posts", R"({"id":"x","postId":"p2"})").status));
  QuerySpec p1;
  p1.partition_key = "p1";
  p1.filters.push_back(Eq("/postId", "p1"));
  QueryResult first = MustQuery("posts", p1);
  EXPECT_FALSE(first.cached);
  QueryResult second = MustQuery("posts", p1);
  EXPECT_TRUE(second.cached);
  EXPECT_EQ(second.items, first.items);
  EXPECT_EQ(second.cost.items_read, first.cost.items_read);  // what computing it read

  // Another partition's write leaves it; a write to p1 (client or view) ends it.
  ASSERT_TRUE(IsOk(Create("posts", R"({"id":"y","postId":"p2"})").status));
  EXPECT_TRUE(MustQuery("posts", p1).cached);
  ASSERT_TRUE(IsOk(Create("posts", R"({"id":"c","postId":"p1"})").status));
  QueryResult after_write = MustQuery("posts", p1);
  EXPECT_FALSE(after_write.cached);
  EXPECT_EQ(Keys("posts", after_write), (std::vector<std::string>{"p1/a", "p1/b", "p1/c"}));
  EXPECT_TRUE(MustQuery("posts", p1).cached);
  ASSERT_TRUE(IsOk(store_->RegisterConsumer("processor.test", 0)));
  ASSERT_TRUE(
      IsOk(ViewWriteOne("posts", "p1", KeyOp(WriteOpKind::kDelete, "a", std::nullopt)).status));
  QueryResult after_view = MustQuery("posts", p1);
  EXPECT_FALSE(after_view.cached);
  EXPECT_EQ(Keys("posts", after_view), (std::vector<std::string>{"p1/b", "p1/c"}));

  // Different queries of one partition are kept apart; cross-partition ones never.
  QuerySpec limited = p1;
  limited.limit = 1;
  EXPECT_FALSE(MustQuery("posts", limited).cached);
  EXPECT_EQ(MustQuery("posts", limited).items.size(), 1u);
  QuerySpec cross;
  cross.filters.push_back(Eq("/postId", "p1"));
  MustQuery("posts", cross);
  EXPECT_FALSE(MustQuery("posts", cross).cached);
  const StoreStats stats = store_->Stats();
  EXPECT_GE(stats.query_cache_hits, 4u);
  EXPECT_GT(stats.query_cache_bytes, 0u);
  EXPECT_EQ(stats.query_cache_updates, 0u);
}

// An answer that holds every item its query selects stays in the cache
// through the writes of its partition, taking each in, and is what the
// query computed afresh answers: items, order and continuation.
TEST_F(StoreTest, AnAnswerKeptCurrentTakesInTheChangesOfItsPartition) {
  for (const auto& [id, n] : {std::pair{"a", 3}, {"b", 1}, {"c", 2}}) {
    ASSERT_TRUE(IsOk(Create("posts", std::string(R"({"id":")") + id + R"(","postId":"p1","n":)" +
                                         std::to_string(n) + "}")
                         .status));
  }
  QuerySpec q;
  q.partition_key = "p1";
  q.order_by = Ptr("/n");
  q.descending = true;
  q.limit = 3;
  EXPECT_FALSE(MustQuery("posts", q).cached);
  ASSERT_TRUE(MustQuery("posts", q).cached);
  size_t fresh_queries = 0;
  // The same query under another cache key (its page bytes), computed now.
  auto expect_as_computed = [&](const std::vector<std::string>& keys, bool continued) {
    const QueryResult kept = MustQuery("posts", q);
    EXPECT_TRUE(kept.cached);
    EXPECT_EQ(Keys("posts", kept), keys);
    EXPECT_EQ(kept.continuation.has_value(), continued);
    QuerySpec fresh_spec = q;
    fresh_spec.limits.max_page_bytes = (1u << 30) + fresh_queries++;
    const QueryResult fresh = MustQuery("posts", fresh_spec);
    EXPECT_FALSE(fresh.cached);
    EXPECT_EQ(kept.items, fresh.items);
    EXPECT_EQ(kept.continuation, fresh.continuation);
    return kept;
  };

  ASSERT_TRUE(IsOk(Create("posts", R"({"id":"d","postId":"p1","n":5})").status));
  const QueryResult four = expect_as_computed({"p1/d", "p1/a", "p1/c"}, true);
  QuerySpec next = q;
  next.continuation = *four.continuation;
  EXPECT_EQ(Keys("posts", MustQuery("posts", next)), (std::vector<std::string>{"p1/b"}));

  ASSERT_TRUE(IsOk(Replace("posts", R"({"id":"a","postId":"p1","n":0})").status));
  expect_as_computed({"p1/d", "p1/c", "p1/b"}, true);
  ASSERT_TRUE(IsOk(Delete("posts", "p1", "d").status));
  expect_as_computed({"p1/c", "p1/b", "p1/a"}, false);
  ASSERT_TRUE(
      IsOk(Patch("posts", "p1", "b", R"([{"op":"replace","path":"/n","value":9}])").status));
  expect_as_computed({"p1/b", "p1/c", "p1/a"}, false);
  ASSERT_TRUE(IsOk(Create("posts", R"({"id":"y","postId":"p2","n":7})").status));
  expect_as_computed({"p1/b", "p1/c", "p1/a"}, false);

  // A processor's view write is taken in like a client's.
  ASSERT_TRUE(IsOk(store_->RegisterConsumer("processor.test", 0)));
  ASSERT_TRUE(
      IsOk(ViewWriteOne("posts", "p1", KeyOp(WriteOpKind::kDelete, "c", std::nullopt)).status));
  expect_as_computed({"p1/b", "p1/a"}, false);
  // Five changes of p1, each taken into the kept answer (and into the
  // fresh ones kept by then).
  EXPECT_GE(store_->Stats().query_cache_updates, 5u);
}

// Whatever the changes - creates, replaces that move an item or take it out
// of a filter, deletes, several changes of one item in one batch - every
// kept answer is the answer computed afresh.
TEST_F(StoreTest, AKeptAnswerIsAlwaysTheAnswerComputedAfresh) {
  std::vector<QuerySpec> specs;
  auto add = [&](std::optional<std::string> order, bool descending, size_t limit,
                 std::optional<std::string> k) {
    QuerySpec q;
    q.partition_key = "p1";
    if (order) q.order_by = Ptr(*order);
    q.descending = descending;
    q.limit = limit;
    if (k) q.filters.push_back(Eq("/k", json::value(*k)));
    specs.push_back(std::move(q));
  };
  add("/n", false, 4, std::nullopt);
  add("/n", true, 4, std::nullopt);
  add("/n", true, 1000, std::nullopt);
  add("/n", true, 3, "a");
  add("/absent", false, 5, std::nullopt);  // every sort value missing: row-key order
  add(std::nullopt, false, 4, std::nullopt);
  add(std::nullopt, false, 1000, std::nullopt);
  add(std::nullopt, true, 1000, std::nullopt);  // `descending` means nothing unordered
  add(std::nullopt, false, 3, "b");             // not kept: dropped at each write

  std::mt19937 rng(20261129);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  auto body = [&](const std::string& id) {
    std::string n;
    switch (pick(4)) {
      case 0:
        n = R"(,"n":")" + std::to_string(pick(3)) + R"(")";
        break;  // a string
      case 1:
        break;  // missing
      default:
        n = R"(,"n":)" + std::to_string(pick(6));
        break;  // ties often
    }
    return R"({"id":")" + id + R"(","postId":"p1","k":")" + (pick(2) ? "a" : "b") + "\"" + n + "}";
  };
  uint64_t fresh_queries = 0;
  for (int step = 0; step < 300; ++step) {
    const std::string id = "i" + std::to_string(pick(12));
    switch (pick(5)) {
      case 0:
        (void)Delete("posts", "p1", id);  // not_found at times
        break;
      case 1: {  // one item changed twice and another deleted, in one batch
        std::vector<WriteOp> ops;
        ops.push_back(ItemOp(WriteOpKind::kUpsert, Item("posts", body(id)), std::nullopt));
        ops.push_back(ItemOp(WriteOpKind::kUpsert, Item("posts", body(id)), std::nullopt));
        const std::string other = "i" + std::to_string(12 + pick(3));
        ops.push_back(ItemOp(WriteOpKind::kUpsert, Item("posts", body(other)), std::nullopt));
        ops.push_back(KeyOp(WriteOpKind::kDelete, other, std::nullopt));
        ASSERT_TRUE(IsOk(Batch("posts", "p1", std::move(ops)).status));
        break;
      }
      default:
        ASSERT_TRUE(IsOk(Upsert("posts", body(id)).status));
    }
    for (size_t s = 0; s < specs.size(); ++s) {
      const QueryResult kept = MustQuery("posts", specs[s]);
      QuerySpec fresh_spec = specs[s];
      fresh_spec.limits.max_page_bytes = (1u << 30) + fresh_queries++;
      const QueryResult fresh = MustQuery("posts", fresh_spec);
      ASSERT_FALSE(fresh.cached);
      ASSERT_EQ(kept.items, fresh.items) << "step " << step << ", spec " << s;
      ASSERT_EQ(kept.continuation, fresh.continuation) << "step " << step << ", spec " << s;
    }
  }
  EXPECT_GT(store_->Stats().query_cache_updates, 300u);  // kept answers took changes in
}

TEST_F(StoreTest, WithTheQueryCacheOffNothingIsCached) {
  StoreOptions o = Options();
  o.query_cache_bytes = 0;
  Reopen(o);
  ASSERT_TRUE(IsOk(Create("posts", R"({"id":"a","postId":"p1"})").status));
  QuerySpec p1;
  p1.partition_key = "p1";
  MustQuery("posts", p1);
  EXPECT_FALSE(MustQuery("posts", p1).cached);
  EXPECT_EQ(store_->Stats().query_cache_hits, 0u);
}

// A writer that knows how many changes it made can tell from the partition
// generation whether anyone else changed the partition: it grows by one per
// change, batches included, and not for an op that changes nothing.
TEST_F(StoreTest, APartitionGenerationCountsTheChangesToThePartition) {
  auto generation = [&](std::string_view pk) {
    std::optional<uint64_t> g = store_->PartitionGeneration("posts", pk);
    EXPECT_TRUE(g.has_value());
    return g.value_or(0);
  };
  EXPECT_FALSE(store_->PartitionGeneration("nope", "p1").has_value());
  const uint64_t p1 = generation("p1");
  std::vector<WriteOp> ops;
  for (const char* body : {R"({"id":"a","postId":"p1"})", R"({"id":"b","postId":"p1"})",
                           R"({"id":"c","postId":"p1"})"}) {
    ops.push_back(ItemOp(WriteOpKind::kCreate, Item("posts", body)));
  }
  ASSERT_TRUE(IsOk(Batch("posts", "p1", std::move(ops)).status));
  EXPECT_EQ(generation("p1"), p1 + 3);
  ASSERT_TRUE(IsOk(Delete("posts", "p1", "b").status));
  EXPECT_EQ(generation("p1"), p1 + 4);
  Delete("posts", "p1", "never-written");  // not found: no change
  EXPECT_EQ(generation("p1"), p1 + 4);
  // Another partition's changes move another counter (these two do not
  // share one).
  ASSERT_TRUE(IsOk(Create("posts", R"({"id":"a","postId":"p2"})").status));
  EXPECT_EQ(generation("p1"), p1 + 4);
}

// An item's generation grows by one per change to the item, from the moment
// the write returns, and not with the changes of other items of its
// partition (these do not share a counter).
TEST_F(StoreTest, AnItemGenerationCountsTheChangesToTheItemOnly) {
  auto generation = [&](std::string_view id) {
    std::optional<uint64_t> g = store_->ItemGeneration("posts", "p1", id);
    EXPECT_TRUE(g.has_value());
    return g.value_or(0);
  };
  EXPECT_FALSE(store_->ItemGeneration("nope", "p1", "a").has_value());
  const uint64_t a = generation("a"), b = generation("b");
  ASSERT_TRUE(IsOk(Create("posts", R"({"id":"a","postId":"p1"})").status));
  EXPECT_EQ(generation("a"), a + 1);
  std::vector<WriteOp> ops;
  ops.push_back(ItemOp(WriteOpKind::kCreate, Item("posts", R"({"id":"b","postId":"p1"})")));
  ops.push_back(ItemOp(WriteOpKind::kReplace, Item("posts", R"({"id":"b","postId":"p1","n":1})")));
  ASSERT_TRUE(IsOk(Batch("posts", "p1", std::move(ops)).status));
  EXPECT_EQ(generation("b"), b + 2);
  EXPECT_EQ(generation("a"), a + 1);
  ASSERT_TRUE(IsOk(Delete("posts", "p1", "a").status));
  EXPECT_EQ(generation("a"), a + 2);
  Delete("posts", "p1", "a");  // not found: no change
  EXPECT_EQ(generation("a"), a + 2);
  EXPECT_EQ(generation("b"), b + 2);
}

// The records handed to commit listeners carry each item's generation right
// after the change: a later change of the item in the same group has the
// next one, and the last is the item's generation once the write returned.
// Records read back from the feed do not know it.
TEST_F(StoreTest, CommittedRecordsCarryTheirItemsGenerationAfterEachChange) {
  HandedRecords listener(store_.get());
  std::vector<WriteOp> ops;
  ops.push_back(ItemOp(WriteOpKind::kCreate, Item("posts", R"({"id":"a","postId":"p1"})")));
  ops.push_back(ItemOp(WriteOpKind::kReplace, Item("posts", R"({"id":"a","postId":"p1","n":1})")));
  ops.push_back(ItemOp(WriteOpKind::kCreate, Item("posts", R"({"id":"b","postId":"p1"})")));
  ASSERT_TRUE(IsOk(Batch("posts", "p1", std::move(ops)).status));
  const std::vector<ChangeRecord> handed = listener.Stop();
  ASSERT_EQ(handed.size(), 3u);
  EXPECT_EQ(handed[1].item_generation, handed[0].item_generation + 1);
  EXPECT_EQ(handed[1].item_generation, store_->ItemGeneration("posts", "p1", "a").value_or(0));
  EXPECT_EQ(handed[2].item_generation, store_->ItemGeneration("posts", "p1", "b").value_or(0));
  EXPECT_NE(handed[2].item_generation, 0u);
  FeedReadSpec spec;
  spec.from = handed[0].lsn;
  FeedPage page;
  ASSERT_TRUE(IsOk(store_->ReadFeed(spec, &page)));
  ASSERT_EQ(page.records.size(), 3u);
  for (const ChangeRecord& record : page.records) EXPECT_EQ(record.item_generation, 0u);
}

// The records handed to commit listeners know where their after-image is
// (ChangeRecord::KnownAfterImage): exactly the envelope's "after" member,
// for a create, a replace, a patch and a delete ("null"). Records read
// back from the feed do not, and are scanned instead.
TEST_F(StoreTest, CommittedRecordsKnowWhereTheirAfterImageIs) {
  HandedRecords listener(store_.get());
  // A before-image with an "after" member of its own comes first in the
  // envelope: the offset, not a search for the name, finds the right one.
  ASSERT_TRUE(IsOk(Create("posts", R"({"id":"a","postId":"p\"1","after":{"after":1}})").status));
  ASSERT_TRUE(IsOk(Upsert("posts", R"({"id":"a","postId":"p\"1","after":2})").status));
  ASSERT_TRUE(
      IsOk(Patch("posts", "p\"1", "a", R"([{"op":"incr","path":"/after","value":1}])").status));
  ASSERT_TRUE(IsOk(Delete("posts", "p\"1", "a").status));
  const std::vector<ChangeRecord> handed = listener.Stop();
  ASSERT_EQ(handed.size(), 4u);
  for (const ChangeRecord& record : handed) {
    SCOPED_TRACE(record.envelope_json);
    std::string_view scanned;
    ASSERT_EQ(FindJsonValue(record.envelope_json, {"after"}, &scanned), JsonScan::kFound);
    ASSERT_TRUE(record.KnownAfterImage().has_value());
    EXPECT_EQ(*record.KnownAfterImage(), scanned);
  }
  EXPECT_EQ(*handed[3].KnownAfterImage(), "null");
  for (const ChangeRecord& record : Feed(1)) EXPECT_FALSE(record.KnownAfterImage().has_value());
}

// An offset is trusted only where it still stands right after `,"after":`
// at the end of the envelope: a record whose envelope was replaced, or
// whose offset is unknown, reads nothing from it.
TEST(ChangeRecordTest, AnAfterOffsetThatDoesNotFitItsEnvelopeIsNotTrusted) {
  ChangeRecord record;
  record.envelope_json = R"({"lsn":1,"before":{"after":7},"after":{"id":"a"}})";
  EXPECT_FALSE(record.KnownAfterImage().has_value());  // unknown: 0
  record.after_offset = record.envelope_json.rfind(R"("after":)") + 8;
  ASSERT_TRUE(record.KnownAfterImage().has_value());
  EXPECT_EQ(*record.KnownAfterImage(), R"({"id":"a"})");
  record.after_offset = record.envelope_json.find(R"("after":)") + 8;  // inside the before-image
  EXPECT_FALSE(record.KnownAfterImage().has_value());
  record.after_offset = record.envelope_json.size();  // past the end
  EXPECT_FALSE(record.KnownAfterImage().has_value());
  record.after_offset = record.envelope_json.rfind(R"("after":)") + 8;
  record.envelope_json = R"({"lsn":1,"after":null})";  // another envelope
  EXPECT_FALSE(record.KnownAfterImage().has_value());
}

// A replace's before-image is stored as its difference from the after-image
// (docs/storage-format.md): what the durable feed hands out, after a reopen
// too, is what the commit path handed its listeners, byte for byte.
TEST_F(StoreTest, TheDurableFeedRebuildsEveryEnvelopeTheCommitPathHandedOut) {
  HandedRecords listener(store_.get());
  const std::string content(500, 'c');
  auto post = [&](int comments) {
    return R"({"id":"p1","postId":"p1","content":")" + content + R"(","commentCount":)" +
           std::to_string(comments) + "}";
  };
  ASSERT_TRUE(IsOk(Create("posts", post(0)).status));
  for (int i = 1; i <= 3; ++i) ASSERT_TRUE(IsOk(Upsert("posts", post(i)).status));
  ASSERT_TRUE(IsOk(
      Patch("posts", "p1", "p1", R"([{"op":"incr","path":"/commentCount","value":1}])").status));
  ASSERT_TRUE(IsOk(Upsert("posts", R"({"id":"p1","postId":"p1","short":true})").status));
  ASSERT_TRUE(IsOk(Delete("posts", "p1", "p1").status));
  const std::vector<ChangeRecord> handed = listener.Stop();
  ASSERT_EQ(handed.size(), 7u);
  auto same_as_handed = [&](const std::vector<ChangeRecord>& read) {
    ASSERT_EQ(read.size(), handed.size());
    for (size_t i = 0; i < read.size(); ++i) {
      EXPECT_EQ(read[i].envelope_json, handed[i].envelope_json) << "LSN " << read[i].lsn;
      EXPECT_EQ(read[i].op, handed[i].op);
    }
  };
  same_as_handed(Feed(1));
  CloseStore();
  {
    // The four replaces that kept the content are stored as differences.
    Result<std::unique_ptr<RocksDatabase>> db = RocksDatabase::Open(Options());
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    size_t stored_bytes = 0, envelope_bytes = 0;
    for (Lsn lsn = 2; lsn <= 5; ++lsn) {
      std::string value;
      ASSERT_TRUE((*db)
                      ->db()
                      ->Get(rocksdb::ReadOptions(), (*db)->feed(), key_format::FeedKey(lsn), &value)
                      .ok());
      stored_bytes += value.size();
      envelope_bytes += handed[lsn - 1].envelope_json.size();
    }
    EXPECT_LT(stored_bytes, envelope_bytes - 4 * content.size());
  }
  ASSERT_NO_FATAL_FAILURE(OpenStore(Options()));
  same_as_handed(Feed(1));
}

// A change stored before format 2 (its before-image whole) reads as written.
TEST_F(StoreTest, AFormatOneRecordReadsAsItWasWritten) {
  ASSERT_TRUE(IsOk(Create("users", R"({"id":"u1","userId":"u1","name":"A"})").status));
  const std::vector<ChangeRecord> written = Feed(1);
  ASSERT_EQ(written.size(), 1u);
  CloseStore();
  const std::string envelope =
      R"({"lsn":2,"op":"replace","container":"users","partitionKey":"u1","id":"u1","ts":5,)"
      R"("before":{"id":"u1","userId":"u1","name":"A long name that both images share"},)"
      R"("after":{"id":"u1","userId":"u1","name":"A long name that both images share!"}})";
  {
    Result<std::unique_ptr<RocksDatabase>> db = RocksDatabase::Open(Options());
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    rocksdb::WriteBatch batch;
    batch.Put((*db)->feed(), key_format::FeedKey(2),
              key_format::FeedValue(5, ChangeOp::kReplace, "users", "u1", "u1", envelope));
    batch.Put((*db)->meta(), key_format::kMetaHeadLsn, key_format::EncodeU64(2));
    ASSERT_TRUE((*db)->db()->Write(rocksdb::WriteOptions(), &batch).ok());
  }
  ASSERT_NO_FATAL_FAILURE(OpenStore(Options()));
  const std::vector<ChangeRecord> read = Feed(1);
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(read[0].envelope_json, written[0].envelope_json);
  EXPECT_EQ(read[1].envelope_json, envelope);
}

TEST_F(StoreTest, OpenRefusesADatabaseOfANewerFormat) {
  ASSERT_TRUE(IsOk(Create("posts", R"({"id":"p1","postId":"p1"})").status));
  CloseStore();
  // Through RocksDB itself: RocksDatabase::Open refuses what this writes.
  auto set_version = [&](std::string_view version) {
    const std::string dir = Options().data_dir;
    std::vector<std::string> names;
    ASSERT_TRUE(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), dir, &names).ok());
    std::vector<rocksdb::ColumnFamilyDescriptor> families;
    for (const std::string& name : names)
      families.emplace_back(name, rocksdb::ColumnFamilyOptions());
    std::vector<rocksdb::ColumnFamilyHandle*> handles;
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(rocksdb::DBOptions(), dir, families, &handles, &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    const rocksdb::Status put =
        db->Put(rocksdb::WriteOptions(), key_format::kMetaFormatVersion, std::string(version));
    for (rocksdb::ColumnFamilyHandle* handle : handles) db->DestroyColumnFamilyHandle(handle);
    ASSERT_TRUE(put.ok()) << put.ToString();
  };
  for (std::string_view version : {"3", "x", "2x"}) {
    SCOPED_TRACE(version);
    ASSERT_NO_FATAL_FAILURE(set_version(version));
    Result<std::unique_ptr<DocumentStore>> r = DocumentStore::Open(Options());
    ASSERT_FALSE(r.ok()) << "opened a database of format " << version;
    EXPECT_NE(r.status().message().find("storage format '" + std::string(version) + "'"),
              std::string::npos)
        << r.status().ToString();
  }
  // Format 1 opens, and is marked 2.
  ASSERT_NO_FATAL_FAILURE(set_version("1"));
  ASSERT_NO_FATAL_FAILURE(OpenStore(Options()));
  EXPECT_EQ(S(MustRead("posts", "p1", "p1").at("id")), "p1");
  CloseStore();
  Result<std::unique_ptr<RocksDatabase>> db = RocksDatabase::Open(Options());
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  std::string stored;
  ASSERT_TRUE(
      (*db)
          ->db()
          ->Get(rocksdb::ReadOptions(), (*db)->meta(), key_format::kMetaFormatVersion, &stored)
          .ok());
  EXPECT_EQ(stored, "2");
}

// Whatever the interleaving, a query started after a write was acknowledged
// sees it: a kept answer is never older than an acknowledged write.
TEST_F(StoreTest, ACachedAnswerNeverMissesAnAcknowledgedWrite) {
  constexpr int kWrites = 600;
  std::atomic<int> acked{0};
  std::atomic<bool> failed{false};
  std::atomic<int> checks{0}, hits{0};
  std::thread writer([&] {
    for (int i = 1; i <= kWrites && !failed; ++i) {
      // Paced so that the readers interleave with the writes however slow
      // their queries are (sanitizer builds): a query per four writes at
      // least, and halfway a pause until the cache has answered one.
      while (!failed && checks < i / 4) std::this_thread::yield();
      while (!failed && i == kWrites / 2 && hits == 0) std::this_thread::yield();
      char body[80];
      std::snprintf(body, sizeof body, R"({"id":"i%04d","postId":"hot"})", i);
      if (!Create("posts", body).status.ok()) failed = true;
      acked = i;
    }
  });
  std::vector<std::thread> readers;
  for (int t = 0; t < 2; ++t) {
    readers.emplace_back([&] {
      QuerySpec q;
      q.partition_key = "hot";
      q.limit = kMaxQueryLimit;
      while (acked < kWrites && !failed) {
        const int seen_acked = acked;
        Result<QueryResult> r = store_->Query("posts", q);
        if (!r.ok() || r->items.size() < static_cast<size_t>(seen_acked)) {
          failed = true;
          ADD_FAILURE() << "a query after " << seen_acked << " acknowledged writes saw "
                        << (r.ok() ? r->items.size() : 0) << " items";
          return;
        }
        ++checks;
        if (r->cached) ++hits;
      }
    });
  }
  writer.join();
  for (auto& r : readers) r.join();
  EXPECT_FALSE(failed);
  EXPECT_GT(checks, 100);
  EXPECT_GT(hits, 0);  // the cache was exercised, not bypassed
}

TEST_F(StoreTest, ConcurrentUpdatesOfOnePartitionLoseNothingAndKeepOrder) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 100;
  ASSERT_TRUE(IsOk(Create("feed", R"({"id":"counter","type":"hot","n":0})").status));

  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        if (!Patch("feed", "hot", "counter", R"([{"op":"incr","path":"/n","value":1}])")
                 .status.ok()) {
          failures.fetch_add(1);
        }
        const std::string body = R"({"id":"own)" + std::to_string(t) + R"(","type":"hot","seq":)" +
                                 std::to_string(i) + "}";
        if (!Upsert("feed", body).status.ok()) failures.fetch_add(1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  ASSERT_EQ(failures.load(), 0);

  EXPECT_EQ(MustRead("feed", "hot", "counter").at("n").to_number<int64_t>(), kThreads * kPerThread)
      << "concurrent incr patches lost updates";
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(MustRead("feed", "hot", "own" + std::to_string(t)).at("seq").to_number<int64_t>(),
              kPerThread - 1);
  }

  // In LSN order, each item's versions follow each other, and every
  // before-image is the previous after-image.
  std::map<std::string, json::value> last_after;
  std::map<std::string, int64_t> last_value;
  int counter_records = 0;
  for (const ChangeRecord& r : Feed(1)) {
    json::object env = Obj(r.envelope_json);
    const json::value& after = env.at("after");
    const json::value& before = env.at("before");
    auto it = last_after.find(r.id);
    if (it == last_after.end()) {
      EXPECT_EQ(ChangeOpName(r.op), "create") << r.id;
      EXPECT_TRUE(before.is_null());
    } else {
      EXPECT_EQ(ChangeOpName(r.op), "replace") << r.id;
      EXPECT_EQ(before, it->second) << "before-image of LSN " << r.lsn;
    }
    const int64_t value = after.at(r.id == "counter" ? "n" : "seq").to_number<int64_t>();
    if (last_value.count(r.id) != 0) {
      EXPECT_EQ(value, last_value[r.id] + 1) << r.id << " at LSN " << r.lsn;
    }
    last_value[r.id] = value;
    last_after[r.id] = after;
    if (r.id == "counter") ++counter_records;
  }
  EXPECT_EQ(counter_records, 1 + kThreads * kPerThread);
}

// ===================================================================
// Query and change-feed limits
// ===================================================================

TEST_F(StoreTest, AQueryWithMoreFiltersThanAllowedIsRefusedBeforeReading) {
  ASSERT_TRUE(IsOk(Create("feed", R"({"id":"a","type":"post","f0":0,"f1":1,"f2":2})").status));
  QuerySpec q;
  q.partition_key = "post";
  for (int i = 0; i < 3; ++i) q.filters.push_back(Eq("/f" + std::to_string(i), json::value(i)));
  q.limits.max_filters = 3;
  EXPECT_EQ(MustQuery("feed", q).items.size(), 1u) << "exactly max_filters is allowed";

  q.filters.push_back(Eq("/f3", json::value(3)));
  QueryCost spent;
  spent.items_read = 99;
  Result<QueryResult> r = store_->Query("feed", q, &spent);
  EXPECT_TRUE(HasCode(r.status(), ErrorCode::kQueryTooExpensive)) << r.status().ToString();
  EXPECT_EQ(spent.items_read, 0u);
  EXPECT_EQ(spent.bytes_read, 0u);
  EXPECT_EQ(store_->Stats().queries_too_many_filters, 1u);

  q.limits.max_filters = 0;  // unbounded
  EXPECT_TRUE(store_->Query("feed", q).ok());
}

TEST_F(StoreTest, AQueryPastItsItemsOrBytesBudgetStopsWithItsCost) {
  for (int i = 0; i < 20; ++i) {
    std::string n = std::to_string(i);
    ASSERT_TRUE(
        IsOk(Create("posts", R"({"id":"p)" + n + R"(","postId":"p)" + n +
                                 R"(","userId":"u1","type":"draft","creationDate":)" + n + "}")
                 .status));
  }
  for (bool ordered : {false, true}) {
    SCOPED_TRACE(ordered ? "ordered" : "unordered");
    QuerySpec q;  // a full scan that matches nothing: it reads every item
    q.filters.push_back(Eq("/type", "post"));
    if (ordered) q.order_by = Ptr("/creationDate");
    q.limits.max_items_read = 20;
    QueryResult within = MustQuery("posts", q);
    EXPECT_TRUE(within.items.empty());
    EXPECT_EQ(within.cost.items_read, 20u);

    q.limits.max_items_read = 5;
    QueryCost spent;
    Result<QueryResult> r = store_->Query("posts", q, &spent);
    EXPECT_TRUE(HasCode(r.status(), ErrorCode::kQueryTooExpensive)) << r.status().ToString();
    EXPECT_EQ(spent.items_read, 6u) << "it stops at the first item past the budget";
    EXPECT_EQ(spent.partitions_scanned, 6u);
    EXPECT_GT(spent.bytes_read, 0u);

    q.limits.max_items_read = 0;
    q.limits.max_bytes_read = within.cost.bytes_read / 2;
    r = store_->Query("posts", q, &spent);
    EXPECT_TRUE(HasCode(r.status(), ErrorCode::kQueryTooExpensive)) << r.status().ToString();
    EXPECT_GT(spent.bytes_read, q.limits.max_bytes_read);
    EXPECT_LT(spent.items_read, 20u);
  }
  EXPECT_EQ(store_->Stats().queries_over_budget, 4u);

  // Index entries count against the items budget too.
  QuerySpec by_user;
  by_user.filters.push_back(Eq("/userId", "u1"));
  by_user.filters.push_back(Eq("/type", "post"));
  by_user.limits.max_items_read = 3;
  QueryCost spent;
  Result<QueryResult> r = store_->Query("posts", by_user, &spent);
  EXPECT_TRUE(HasCode(r.status(), ErrorCode::kQueryTooExpensive)) << r.status().ToString();
  EXPECT_EQ(spent.index_entries_read + spent.items_read, 4u);
  EXPECT_GT(spent.index_entries_read, 0u);
}

TEST_F(StoreTest, AQueryPageEndsAtMaxPageBytesAndTheContinuationDeliversTheRest) {
  // Items of different sizes: 30 of them, 100 to ~3,000 bytes.
  for (int i = 0; i < 30; ++i) {
    char id[8];
    std::snprintf(id, sizeof id, "i%02d", i);
    std::string pad(100 + (i * 397) % 2900, 'x');
    ASSERT_TRUE(IsOk(Create("feed", std::string(R"({"id":")") + id + R"(","type":"post","rank":)" +
                                        std::to_string(i % 7) + R"(,"pad":")" + pad + R"("})")
                         .status));
  }
  const uint64_t kCap = 8000;
  for (int order = 0; order < 3; ++order) {
    SCOPED_TRACE("order " + std::to_string(order));
    QuerySpec q;
    q.partition_key = "post";
    if (order > 0) q.order_by = Ptr("/rank");
    q.descending = order == 2;
    q.limit = kMaxQueryLimit;
    const std::vector<std::string> want = Keys("feed", MustQuery("feed", q));
    ASSERT_EQ(want.size(), 30u);

    q.limits.max_page_bytes = kCap;
    std::vector<std::string> got;
    size_t pages = 0;
    for (;;) {
      ASSERT_LT(++pages, 40u);
      QueryResult r = MustQuery("feed", q);
      ASSERT_FALSE(r.items.empty());
      if (r.items.size() > 1) {
        EXPECT_LE(TotalSize(r.items), kCap);
      }
      for (const std::string& k : Keys("feed", r)) got.push_back(k);
      if (!r.continuation) break;
      q.continuation = *r.continuation;
    }
    EXPECT_EQ(got, want);
    EXPECT_GE(pages, 5u) << "~45 KB of items in pages of at most 8 KB";
  }
  EXPECT_GE(store_->Stats().query_pages_cut, 12u);

  // An item larger than the cap still comes, alone on its page.
  QuerySpec tiny;
  tiny.partition_key = "post";
  tiny.limits.max_page_bytes = 10;
  QueryResult r = MustQuery("feed", tiny);
  EXPECT_EQ(r.items.size(), 1u);
  EXPECT_TRUE(r.continuation.has_value());
}

TEST_F(StoreTest, AFeedPageEndsAtMaxBytesAndNextContinuesAfterIt) {
  for (int i = 0; i < 20; ++i) {
    std::string n = std::to_string(i);
    std::string pad(200 + (i * 331) % 1500, 'y');
    ASSERT_TRUE(IsOk(
        Create("users", R"({"id":"u)" + n + R"(","userId":"u)" + n + R"(","pad":")" + pad + R"("})")
            .status));
  }
  const std::vector<Lsn> want = Lsns(Feed());
  ASSERT_EQ(want.size(), 20u);
  const uint64_t kCap = 4000;
  FeedReadSpec spec;
  spec.from = 1;
  spec.limit = 1000;
  spec.max_bytes = kCap;
  std::vector<Lsn> got;
  size_t pages = 0;
  while (spec.from <= store_->HeadLsn()) {
    ASSERT_LT(++pages, 30u);
    FeedPage page;
    ASSERT_TRUE(IsOk(store_->ReadFeed(spec, &page)));
    ASSERT_FALSE(page.records.empty());
    uint64_t bytes = 0;
    for (const ChangeRecord& r : page.records) bytes += r.envelope_json.size();
    if (page.records.size() > 1) {
      EXPECT_LE(bytes, kCap);
    }
    for (const ChangeRecord& r : page.records) got.push_back(r.lsn);
    ASSERT_GT(page.next, spec.from);
    spec.from = page.next;
  }
  EXPECT_EQ(got, want);
  EXPECT_GE(pages, 5u);
  EXPECT_GE(store_->Stats().feed_pages_cut, 4u);

  // A change larger than the cap still comes, alone on its page.
  spec.from = 1;
  spec.max_bytes = 10;
  FeedPage page;
  ASSERT_TRUE(IsOk(store_->ReadFeed(spec, &page)));
  ASSERT_EQ(page.records.size(), 1u);
  EXPECT_EQ(page.next, 2u);
}

// ===================================================================
// Retention
// ===================================================================

class RetentionTest : public StoreTest {
 protected:
  static constexpr uint64_t kRetentionMs = 60 * 1000;
  void SetUp() override {
    StoreTest::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_NO_FATAL_FAILURE(Reopen(RetentionOptions()));
  }
  StoreOptions RetentionOptions() {
    StoreOptions o = Options();
    o.retention_ms = kRetentionMs;
    o.retention_bytes = 0;
    return o;
  }
  void CreateUsers(int first, int last) {
    for (int i = first; i <= last; ++i) {
      std::string n = std::to_string(i);
      WriteResult w = Create("users", R"({"id":"u)" + n + R"(","userId":"u)" + n + R"("})");
      ASSERT_TRUE(IsOk(w.status));
      ASSERT_EQ(w.last_lsn, static_cast<Lsn>(i));
    }
  }
  Status ReadFrom(Lsn from, FeedPage* page) {
    FeedReadSpec spec;
    spec.from = from;
    spec.limit = 1000;
    return store_->ReadFeed(spec, page);
  }
};

TEST_F(RetentionTest, DropsRecordsOlderThanRetentionMs) {
  ASSERT_NO_FATAL_FAILURE(CreateUsers(1, 3));  // at kT0
  ASSERT_TRUE(IsOk(store_->EnforceRetention()));
  EXPECT_EQ(store_->OldestRetainedLsn(), 1u) << "nothing is old yet";

  clock_.Advance(2 * kRetentionMs);
  ASSERT_NO_FATAL_FAILURE(CreateUsers(4, 5));  // young
  EXPECT_EQ(store_->OldestRetainedLsn(), 1u) << "retention only runs when asked (or on its timer)";
  ASSERT_TRUE(IsOk(store_->EnforceRetention()));
  EXPECT_EQ(store_->OldestRetainedLsn(), 4u);
  EXPECT_EQ(store_->Stats().oldest_retained_lsn, 4u);
  EXPECT_EQ(store_->HeadLsn(), 5u);

  FeedPage page;
  EXPECT_TRUE(HasCode(ReadFrom(1, &page), ErrorCode::kLsnNotRetained));
  EXPECT_TRUE(HasCode(ReadFrom(3, &page), ErrorCode::kLsnNotRetained));
  EXPECT_EQ(ErrorCodeHttpStatus(ErrorCode::kLsnNotRetained), 410);
  FeedPage kept;
  ASSERT_TRUE(IsOk(ReadFrom(4, &kept)));
  EXPECT_EQ(Lsns(kept.records), (std::vector<Lsn>{4, 5}));

  // Items are not touched by feed retention.
  for (int i = 1; i <= 5; ++i) {
    std::string id = "u" + std::to_string(i);
    EXPECT_TRUE(IsOk(ReadStatus("users", id, id))) << id;
  }

  // A second pass with no time passing changes nothing.
  ASSERT_TRUE(IsOk(store_->EnforceRetention()));
  EXPECT_EQ(store_->OldestRetainedLsn(), 4u);

  // Everything old: the feed is empty, oldest = head + 1.
  clock_.Advance(2 * kRetentionMs);
  ASSERT_TRUE(IsOk(store_->EnforceRetention()));
  EXPECT_EQ(store_->OldestRetainedLsn(), 6u);
  EXPECT_EQ(store_->HeadLsn(), 5u);
  FeedPage empty;
  ASSERT_TRUE(IsOk(ReadFrom(6, &empty)));
  EXPECT_TRUE(empty.records.empty());
  EXPECT_EQ(empty.next, 6u);
  EXPECT_TRUE(HasCode(ReadFrom(5, &page), ErrorCode::kLsnNotRetained));

  WriteResult next = Create("users", R"({"id":"u6","userId":"u6"})");
  ASSERT_TRUE(IsOk(next.status));
  EXPECT_EQ(next.last_lsn, 6u);
  FeedPage six;
  ASSERT_TRUE(IsOk(ReadFrom(6, &six)));
  EXPECT_EQ(Lsns(six.records), (std::vector<Lsn>{6}));
}

TEST_F(RetentionTest, RetentionAndLsnsSurviveReopen) {
  ASSERT_NO_FATAL_FAILURE(CreateUsers(1, 3));
  clock_.Advance(2 * kRetentionMs);
  ASSERT_TRUE(IsOk(store_->EnforceRetention()));
  ASSERT_EQ(store_->OldestRetainedLsn(), 4u);

  ASSERT_NO_FATAL_FAILURE(Reopen(RetentionOptions()));
  EXPECT_EQ(store_->HeadLsn(), 3u) << "the head survives even when the feed is empty";
  EXPECT_EQ(store_->OldestRetainedLsn(), 4u);
  FeedPage page;
  EXPECT_TRUE(HasCode(ReadFrom(1, &page), ErrorCode::kLsnNotRetained));

  WriteResult next = Create("users", R"({"id":"u4","userId":"u4"})");
  ASSERT_TRUE(IsOk(next.status));
  EXPECT_EQ(next.last_lsn, 4u) << "LSNs are never reused";
  EXPECT_EQ(U(ResultItem(next).at("_lsn")), 4u);
}

TEST_F(RetentionTest, ConsumerKeepsWhatItHasNotAcknowledged) {
  ASSERT_TRUE(IsOk(store_->RegisterConsumer("slow", 1)));
  ASSERT_NO_FATAL_FAILURE(CreateUsers(1, 5));  // old
  clock_.Advance(2 * kRetentionMs);
  ASSERT_NO_FATAL_FAILURE(CreateUsers(6, 6));  // young

  ASSERT_TRUE(IsOk(store_->EnforceRetention()));
  EXPECT_EQ(store_->OldestRetainedLsn(), 2u) << "LSN 1 is acked and old; 2..5 are not acked";
  FeedPage page;
  EXPECT_TRUE(HasCode(ReadFrom(1, &page), ErrorCode::kLsnNotRetained));
  ASSERT_TRUE(IsOk(ReadFrom(2, &page)));
  EXPECT_EQ(Lsns(page.records), (std::vector<Lsn>{2, 3, 4, 5, 6}));

  std::vector<ConsumerWatermark> consumers = store_->Consumers();
  ASSERT_EQ(consumers.size(), 1u);
  EXPECT_EQ(consumers[0].name, "slow");
  EXPECT_EQ(consumers[0].acked, 1u);

  ASSERT_TRUE(IsOk(store_->AckConsumer("slow", 4)));
  ASSERT_EQ(store_->Consumers().size(), 1u);
  EXPECT_EQ(store_->Consumers()[0].acked, 4u);
  ASSERT_TRUE(IsOk(store_->EnforceRetention()));
  EXPECT_EQ(store_->OldestRetainedLsn(), 5u);

  // Acking everything drops only what is also old.
  ASSERT_TRUE(IsOk(store_->AckConsumer("slow", 6)));
  ASSERT_TRUE(IsOk(store_->EnforceRetention()));
  EXPECT_EQ(store_->OldestRetainedLsn(), 6u);
  ASSERT_TRUE(IsOk(ReadFrom(6, &page)));
  EXPECT_EQ(Lsns(page.records), (std::vector<Lsn>{6}));

  ASSERT_TRUE(IsOk(store_->UnregisterConsumer("slow")));
  EXPECT_TRUE(store_->Consumers().empty());
}

TEST_F(RetentionTest, TheLowestAckWinsAndUnregisterReleases) {
  ASSERT_TRUE(IsOk(store_->RegisterConsumer("a", 0)));
  ASSERT_TRUE(IsOk(store_->RegisterConsumer("b", 3)));
  ASSERT_NO_FATAL_FAILURE(CreateUsers(1, 5));
  clock_.Advance(2 * kRetentionMs);
  ASSERT_NO_FATAL_FAILURE(CreateUsers(6, 6));

  ASSERT_TRUE(IsOk(store_->EnforceRetention()));
  EXPECT_EQ(store_->OldestRetainedLsn(), 1u) << "consumer a has acked nothing";

  ASSERT_TRUE(IsOk(store_->AckConsumer("a", 4)));
  ASSERT_TRUE(IsOk(store_->EnforceRetention()));
  EXPECT_EQ(store_->OldestRetainedLsn(), 4u) << "consumer b has acked only up to 3";

  ASSERT_TRUE(IsOk(store_->AckConsumer("b", 5)));
  ASSERT_TRUE(IsOk(store_->EnforceRetention()));
  EXPECT_EQ(store_->OldestRetainedLsn(), 5u) << "consumer a has acked only up to 4";

  ASSERT_TRUE(IsOk(store_->UnregisterConsumer("a")));
  ASSERT_TRUE(IsOk(store_->EnforceRetention()));
  EXPECT_EQ(store_->OldestRetainedLsn(), 6u);

  std::vector<ConsumerWatermark> consumers = store_->Consumers();
  ASSERT_EQ(consumers.size(), 1u);
  EXPECT_EQ(consumers[0].name, "b");
  EXPECT_EQ(consumers[0].acked, 5u);

  // Acks are durable.
  ASSERT_NO_FATAL_FAILURE(Reopen(RetentionOptions()));
  consumers = store_->Consumers();
  ASSERT_EQ(consumers.size(), 1u);
  EXPECT_EQ(consumers[0].name, "b");
  EXPECT_EQ(consumers[0].acked, 5u);
}

TEST_F(RetentionTest, RetentionByBytes) {
  StoreOptions o = Options();
  o.retention_ms = 0;  // age limit off
  o.retention_bytes = 4096;
  ASSERT_NO_FATAL_FAILURE(Reopen(o));
  ASSERT_TRUE(IsOk(store_->RegisterConsumer("hold", 0)));

  const std::string pad(200, 'x');
  for (int i = 1; i <= 100; ++i) {
    std::string n = std::to_string(i);
    ASSERT_TRUE(IsOk(
        Create("users", R"({"id":"u)" + n + R"(","userId":"u)" + n + R"(","pad":")" + pad + R"("})")
            .status));
  }
  ASSERT_TRUE(IsOk(store_->EnforceRetention()));
  EXPECT_EQ(store_->OldestRetainedLsn(), 1u) << "the consumer holds everything";

  ASSERT_TRUE(IsOk(store_->UnregisterConsumer("hold")));
  ASSERT_TRUE(IsOk(store_->EnforceRetention()));
  const Lsn oldest = store_->OldestRetainedLsn();
  EXPECT_GT(oldest, 1u) << "100 records of ~500 bytes exceed 4096 bytes";
  EXPECT_LE(oldest, 100u) << "the newest record fits in 4096 bytes and is kept";

  FeedPage page;
  EXPECT_TRUE(HasCode(ReadFrom(1, &page), ErrorCode::kLsnNotRetained));
  ASSERT_TRUE(IsOk(ReadFrom(oldest, &page)));
  ASSERT_FALSE(page.records.empty());
  EXPECT_EQ(page.records.front().lsn, oldest);
  EXPECT_EQ(page.records.back().lsn, 100u);
  uint64_t kept_bytes = 0;
  for (const ChangeRecord& r : page.records) kept_bytes += r.envelope_json.size();
  const uint64_t one_record = page.records.back().envelope_json.size();
  EXPECT_LE(kept_bytes, 4096u + one_record) << "kept " << page.records.size() << " records";
}

}  // namespace
}  // namespace feedd
