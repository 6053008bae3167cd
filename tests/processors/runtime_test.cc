// ProcessorInstance on a real DocumentStore with the local change feed as
// its source: a test-only kind ("test_mirror", whose Apply fails on demand)
// and the scenario's kinds.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <future>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "fake_change_source.h"
#include "fake_view_context.h"
#include "processors/commit_change_source.h"
#include "processors/kinds/view_helpers.h"
#include "processors/processor_instance.h"
#include "processors/processor_kind.h"
#include "processors/processor_manager.h"
#include "processors/source_pump.h"
#include "processors/store_view_context.h"
#include "storage/document_store.h"
#include "storage/json_scan.h"
#include "storage/prepared_item.h"
#include "tests/blog_scenario.h"

namespace feedd::proctest {
namespace {

using boost::json::object;
using namespace std::chrono_literals;

constexpr auto kTimeout = 30s;

// ---------------------------------------------------------------- the test kind

// Knobs and records of every "test_mirror" instance (tests run one at a time).
struct MirrorLog {
  struct Entry {
    std::string tag, key, id;
    Lsn lsn;
  };
  std::mutex mutex;
  std::condition_variable released;
  std::set<std::string> failing;        // ids whose Apply fails
  std::set<std::string> blocking;       // ids whose Apply waits until Release()
  std::set<std::string> entered;        // blocking ids whose Apply has started
  std::map<std::string, int> attempts;  // Apply calls by id
  std::vector<Entry> applied;           // successful Apply calls, in order

  void Reset() {
    std::lock_guard<std::mutex> lock(mutex);
    failing.clear();
    attempts.clear();
    applied.clear();
    blocking.clear();
    entered.clear();
    released.notify_all();
  }
  void Block(const std::string& id) {
    std::lock_guard<std::mutex> lock(mutex);
    blocking.insert(id);
  }
  void Release(const std::string& id) {
    std::lock_guard<std::mutex> lock(mutex);
    blocking.erase(id);
    released.notify_all();
  }
  bool Entered(const std::string& id) {
    std::lock_guard<std::mutex> lock(mutex);
    return entered.count(id) != 0;
  }
  void SetFailing(std::set<std::string> ids) {
    std::lock_guard<std::mutex> lock(mutex);
    failing = std::move(ids);
  }
  int Attempts(const std::string& id) {
    std::lock_guard<std::mutex> lock(mutex);
    return attempts.count(id) ? attempts[id] : 0;
  }
  std::vector<Entry> Applied() {
    std::lock_guard<std::mutex> lock(mutex);
    return applied;
  }
};

MirrorLog& Log() {
  static MirrorLog log;
  return log;
}

// Mirrors every item of `source_container` into `target_container` as
// {id, pk: <source partition key>, value, _sourceLsn}; ordering key = the
// source's partition key. Settings: source_container, target_container, tag.
// Setting concern_filter (field=value): ConcernFilters(). Setting
// tell_applied=true: AppliedAlready() is true when the copy's value has the
// text of the after-image's value.
class MirrorKind : public ProcessorKind {
 public:
  std::string source, target, tag;
  std::vector<FieldFilter> concern;
  bool tell_applied = false;

  std::vector<std::string> SourceContainers() const override { return {source}; }
  std::vector<std::string> TargetContainers() const override { return {target}; }
  std::string OrderingKey(const Change& c) const override { return c.partition_key; }
  std::vector<FieldFilter> ConcernFilters(const std::string&) const override { return concern; }

  bool AppliedAlready(const ChangeRecord& record, ViewContext& ctx) const override {
    if (!tell_applied || record.op == ChangeOp::kDelete) return false;
    std::string_view value;
    if (FindJsonValue(record.envelope_json, {"after", "value"}, &value) != JsonScan::kFound) {
      return false;
    }
    auto copy = ctx.Read(target, record.partition_key, record.id);
    if (!copy.ok() || !*copy || !(*copy)->contains("value")) return false;
    return boost::json::serialize((*copy)->at("value")) == value;
  }

  Status Apply(const Change& c, ViewContext& ctx) const override {
    {
      MirrorLog& log = Log();
      std::unique_lock<std::mutex> lock(log.mutex);
      ++log.attempts[c.id];
      if (log.blocking.count(c.id) != 0) {
        log.entered.insert(c.id);
        // Bounded, so a failing test cannot hang; Reset() releases too.
        log.released.wait_for(lock, std::chrono::seconds(60),
                              [&] { return log.blocking.count(c.id) == 0; });
      }
      if (log.failing.count(c.id) != 0) {
        return Status(ErrorCode::kStorageError, "injected failure for " + c.id);
      }
    }
    auto item = ctx.Read(c.container, c.partition_key, c.id);
    if (!item.ok()) return item.status();
    Status s = *item ? ctx.Upsert(target, MirrorOf(**item, c.partition_key))
                     : ctx.Delete(target, c.partition_key, c.id);
    if (!s.ok()) return s;
    std::lock_guard<std::mutex> lock(Log().mutex);
    Log().applied.push_back({tag, c.partition_key, c.id, c.lsn});
    return Status::Ok();
  }

  Status Rebuild(ViewContext& ctx) const override {
    auto mirrors = QueryAll(ctx, target, QuerySpec());
    if (!mirrors.ok()) return mirrors.status();
    for (const auto& m : *mirrors) {
      if (Status s = ctx.Delete(target, S(m, "pk"), S(m, "id")); !s.ok()) return s;
    }
    if (Status s = ctx.Flush(); !s.ok()) return s;
    auto items = QueryAll(ctx, source, QuerySpec());
    if (!items.ok()) return items.status();
    const ContainerSpec* spec = ctx.Container(source);
    for (const auto& item : *items) {
      const boost::json::value* pk = Ptr(spec->partition_key_path).Find(item);
      if (pk == nullptr || !pk->is_string()) continue;
      Status s = ctx.Upsert(target, MirrorOf(item, std::string(pk->get_string())));
      if (!s.ok()) return s;
    }
    return Status::Ok();
  }

  Status Verify(ViewContext& ctx, std::vector<std::string>* differences) const override {
    return Status::Ok();  // the tests compare the containers themselves
  }

  static object MirrorOf(const object& item, const std::string& pk) {
    const auto* value = item.if_contains("value");
    return object{{"id", item.at("id")},
                  {"pk", pk},
                  {"value", value ? *value : boost::json::value(nullptr)},
                  {"_sourceLsn", item.at("_lsn")}};
  }
};

Result<std::unique_ptr<ProcessorKind>> MakeMirror(const ProcessorSettings& s,
                                                  const std::vector<ContainerSpec>& containers) {
  auto kind = std::make_unique<MirrorKind>();
  kind->source = s.Optional("source_container", "posts");
  kind->target = s.Optional("target_container", "mirror");
  kind->tag = s.Optional("tag", "");
  auto concern = views::ParseFilter(s, "concern_filter");
  if (!concern.ok()) return concern.status();
  kind->concern = std::move(*concern);
  kind->tell_applied = s.Optional("tell_applied", "false") == "true";
  return std::unique_ptr<ProcessorKind>(std::move(kind));
}

FEEDD_REGISTER_PROCESSOR_KIND("test_mirror", MakeMirror);

// ---------------------------------------------------------------- fixture

::testing::AssertionResult IsOk(const Status& s) {
  if (s.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "expected ok, got " << s.ToString();
}

std::string Joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += "\n  " + l;
  return out;
}

// Polls `pred` until it holds or the deadline passes.
template <typename Pred>
bool Eventually(Pred pred, std::chrono::milliseconds timeout = kTimeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return pred();
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

// True once `instance` has applied every change <= lsn (via OnApplied).
bool WaitApplied(ProcessorInstance& instance, Lsn lsn,
                 std::chrono::milliseconds timeout = kTimeout) {
  auto reached = std::make_shared<std::promise<void>>();
  std::future<void> done = reached->get_future();
  uint64_t token = instance.OnApplied(lsn, [reached] { reached->set_value(); });
  if (done.wait_for(timeout) == std::future_status::ready) return true;
  instance.CancelApplied(token);
  return false;
}

ProcessorSettings ScenarioSettings(const std::string& name,
                                   const std::map<std::string, std::string>& overrides = {}) {
  ProcessorSettings s;
  s.name = name;
  for (const auto& [key, value] : BlogProcessorSettings()) {
    if (key.rfind(name + ".", 0) != 0) continue;
    std::string k = key.substr(name.size() + 1);
    if (k != "kind") s.values[k] = value;
  }
  for (const auto& [k, v] : overrides) s.values[k] = v;
  return s;
}

std::string Text(size_t code_points) {
  static const char* const kCodePoints[] = {"a", "\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80"};
  std::string text;
  for (size_t i = 0; i < code_points; ++i) text += kCodePoints[(i + 3) % 4];
  return text;
}

std::string Date(int n) {
  char buf[32];
  snprintf(buf, sizeof(buf), "2024-01-01T%02d:%02d:%02dZ", n / 3600, (n / 60) % 60, n % 60);
  return buf;
}

object User(const std::string& id, const std::string& username) {
  return object{{"id", id}, {"userId", id}, {"type", "user"}, {"username", username}};
}

object Post(const std::string& id, const std::string& user, int date, size_t content_chars = 10,
            const std::string& title = "t") {
  return object{{"id", id},
                {"type", "post"},
                {"postId", id},
                {"userId", user},
                {"title", title},
                {"content", Text(content_chars)},
                {"creationDate", Date(date)},
                {"commentCount", 0},
                {"likeCount", 0}};
}

// An item of `posts` that only the mirror cares about.
object Note(const std::string& key, const std::string& id, const std::string& value) {
  return object{{"id", id}, {"postId", key}, {"type", "note"}, {"value", value}};
}

class RuntimeTest : public ::testing::Test {
 protected:
  // A mirror whose kind tells changes applied already (tell_applied), with
  // n1 = "a" written and mirrored.
  void StartTellingMirrorOfN1(ProcessorInstance** mirror) {
    ProcessorSettings s;
    s.values = {
        {"source_container", "posts"}, {"target_container", "mirror"}, {"tell_applied", "true"}};
    *mirror = Start("mirror", "test_mirror", s);
    ASSERT_NE(*mirror, nullptr);
    Upsert("posts", Note("k1", "n1", "a"));
    ASSERT_TRUE(Quiescent({*mirror}));
  }

  void SetUp() override {
    Log().Reset();
    char pattern[] = "/tmp/feedd-proc-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    OpenStore();
  }

  void TearDown() override {
    Log().Reset();  // releases blocked applies
    StopAll();
    CloseStore();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // retention_bytes: 0 keeps the whole feed.
  void OpenStore(uint64_t retention_bytes = 0) {
    StoreOptions options;
    options.data_dir = dir_;
    options.sync = false;
    options.retention_bytes = retention_bytes;
    options.clock = clock_;
    options.containers = BlogContainers();
    options.containers.push_back({"mirror", "/pk", {}});
    auto store = DocumentStore::Open(options);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(*store);
  }

  void CloseStore() {
    if (store_) store_->Close();
    store_.reset();
  }

  void StopAll() {
    for (auto& i : instances_) i->Stop();
    instances_.clear();
  }

  // A started instance fed in-process (the daemon's CommitChangeSource).
  // `source`: null for the daemon's.
  ProcessorInstance* Start(const std::string& name, const std::string& kind,
                           const ProcessorSettings& settings, size_t parallelism = 2,
                           int max_attempts = 3, std::unique_ptr<ChangeSource> source = nullptr) {
    return Start(Config(name, kind, settings, parallelism, max_attempts), std::move(source));
  }

  ProcessorConfig Config(const std::string& name, const std::string& kind,
                         const ProcessorSettings& settings, size_t parallelism = 2,
                         int max_attempts = 3) {
    ProcessorConfig config;
    config.name = name;
    config.kind = kind;
    config.parallelism = parallelism;
    config.max_attempts = max_attempts;
    config.retry_backoff = 1ms;
    config.settings = settings;
    config.clock = clock_;
    config.settings.name = name;
    return config;
  }

  ProcessorInstance* Start(ProcessorConfig config, std::unique_ptr<ChangeSource> source = nullptr) {
    const std::string name = config.name;
    auto made = ProcessorRegistry::Create(config.kind, config.settings, store_->containers());
    EXPECT_TRUE(made.ok()) << made.status().ToString();
    if (!made.ok()) return nullptr;
    if (!source) {
      source = std::make_unique<CommitChangeSource>(
          store_.get(), CommitChangeSource::Options{ProcessorInstance::ConsumerName(name)});
    }
    instances_.push_back(std::make_unique<ProcessorInstance>(
        store_.get(), &pump_, std::move(config), std::move(*made), std::move(source)));
    Status s = instances_.back()->Start();
    EXPECT_TRUE(IsOk(s)) << "starting " << name;
    return s.ok() ? instances_.back().get() : nullptr;
  }

  ProcessorInstance* StartMirror(const std::string& tag, size_t parallelism = 2,
                                 int max_attempts = 3,
                                 std::unique_ptr<ChangeSource> source = nullptr) {
    ProcessorSettings s;
    s.values = {{"source_container", "posts"}, {"target_container", "mirror"}, {"tag", tag}};
    return Start("mirror", "test_mirror", s, parallelism, max_attempts, std::move(source));
  }

  // The store's feed from `from` on.
  std::vector<ChangeRecord> FeedFrom(Lsn from) {
    FeedPage page;
    FeedReadSpec spec;
    spec.from = from;
    spec.limit = 100000;
    EXPECT_TRUE(IsOk(store_->ReadFeed(spec, &page)));
    return page.records;
  }

  ProcessorInstance* StartScenario(const std::string& name,
                                   const std::map<std::string, std::string>& overrides = {}) {
    return Start(name, BlogProcessorSettings().at(name + ".kind"),
                 ScenarioSettings(name, overrides));
  }

  // A replay has applied every change it took (parked changes count as
  // applied for the watermark, so Quiescent() does not wait for them).
  bool Replayed(ProcessorInstance* instance) {
    return Eventually(
        [&] { return !instance->OldestParked(std::numeric_limits<Lsn>::max()).has_value(); });
  }

  // Every instance has applied everything up to the head, and the head
  // stopped moving (their own writes are applied too).
  bool Quiescent(const std::vector<ProcessorInstance*>& instances) {
    auto deadline = std::chrono::steady_clock::now() + kTimeout;
    for (;;) {
      Lsn head = store_->HeadLsn();
      for (auto* i : instances) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0 || !WaitApplied(*i, head, left)) return false;
      }
      if (store_->HeadLsn() == head) return true;
    }
  }

  Lsn Upsert(const std::string& container, object item) {
    auto prepared = PrepareItem(*store_->FindContainer(container), std::move(item), std::nullopt,
                                std::nullopt, 1 << 20);
    EXPECT_TRUE(prepared.ok()) << prepared.status().ToString();
    if (!prepared.ok()) return 0;
    WriteOp op;
    op.kind = WriteOpKind::kUpsert;
    std::string pk = prepared->partition_key;
    op.item = std::move(*prepared);
    WriteResult r = store_->Write(WriteRequest{container, pk, {op}});
    EXPECT_TRUE(IsOk(r.status));
    return r.last_lsn;
  }

  // One request of upserts into one partition; the LSN of each.
  std::vector<Lsn> UpsertBatch(const std::string& container, const std::string& pk,
                               std::vector<object> items) {
    WriteRequest request{container, pk, {}};
    for (auto& item : items) {
      auto prepared = PrepareItem(*store_->FindContainer(container), std::move(item), pk,
                                  std::nullopt, 1 << 20);
      EXPECT_TRUE(prepared.ok()) << prepared.status().ToString();
      if (!prepared.ok()) return {};
      WriteOp op;
      op.kind = WriteOpKind::kUpsert;
      op.item = std::move(*prepared);
      request.ops.push_back(std::move(op));
    }
    WriteResult r = store_->Write(std::move(request));
    EXPECT_TRUE(IsOk(r.status));
    std::vector<Lsn> lsns;
    for (const auto& op : r.results) lsns.push_back(op.lsn);
    return lsns;
  }

  Lsn Delete(const std::string& container, const std::string& pk, const std::string& id,
             WriteOrigin origin = WriteOrigin::kClient) {
    WriteOp op;
    op.kind = WriteOpKind::kDelete;
    op.id = id;
    op.origin = origin;
    WriteResult r = store_->Write(WriteRequest{container, pk, {op}});
    EXPECT_TRUE(IsOk(r.status));
    return r.last_lsn;
  }

  std::optional<object> Get(const std::string& container, const std::string& pk,
                            const std::string& id) {
    std::string json;
    Status s = store_->Read(container, pk, id, &json);
    if (!s.ok()) return std::nullopt;
    return Obj(json);
  }

  std::vector<object> All(const std::string& container,
                          std::optional<std::string> pk = std::nullopt) {
    StoreViewContext ctx(store_.get(), "none", [] { return Lsn(0); });
    QuerySpec spec;
    spec.partition_key = std::move(pk);
    auto items = QueryAll(ctx, container, spec);
    EXPECT_TRUE(items.ok()) << items.status().ToString();
    return items.ok() ? *items : std::vector<object>();
  }

  Lsn Acked(const std::string& consumer) {
    for (const auto& c : store_->Consumers()) {
      if (c.name == consumer) return c.acked;
    }
    return 0;
  }

  // The mirror shows exactly the current items of `posts` that have a value.
  void ExpectMirrorMatchesSources() {
    std::map<std::string, std::string> expected, actual;
    for (const auto& item : All("posts")) {
      if (item.contains("value"))
        expected[S(item, "postId") + "/" + S(item, "id")] = S(item, "value");
    }
    for (const auto& m : All("mirror")) {
      if (!m.at("value").is_null()) actual[S(m, "pk") + "/" + S(m, "id")] = S(m, "value");
    }
    EXPECT_EQ(actual, expected);
  }

  // The store's and the instances' clock (OpenStore(), Start()).
  ManualClock manual_clock_{1'800'000'000'000};
  Clock* clock_ = Clock::System();
  std::string dir_;
  std::unique_ptr<DocumentStore> store_;
  SourcePump pump_{"test-source"};  // shared by the test's instances; outlives them
  std::vector<std::unique_ptr<ProcessorInstance>> instances_;
};

// ================================================================ tests

// What the view memo relies on (StagedReadsViewContext::Committed): the
// context counts the committed writes the store found nothing to do for.
TEST_F(RuntimeTest, AViewContextCountsTheWritesTheStoreSkipped) {
  ASSERT_TRUE(IsOk(store_->RegisterConsumer("processor.counting", 0)));
  StoreViewContext ctx(store_.get(), "processor.counting", [] { return Lsn(1); });
  ASSERT_TRUE(ctx.Upsert("mirror", object{{"id", "a"}, {"pk", "p"}, {"_sourceLsn", 5}}).ok());
  ASSERT_TRUE(ctx.Commit().ok());
  EXPECT_EQ(ctx.writes_without_effect(), 0u);
  ASSERT_TRUE(ctx.Delete("mirror", "p", "missing").ok());                  // nothing to delete
  ASSERT_TRUE(ctx.SetField("mirror", "p", "missing", Ptr("/v"), 1).ok());  // nothing to set
  ASSERT_TRUE(ctx.Upsert("mirror", object{{"id", "b"}, {"pk", "p"}, {"_sourceLsn", 6}}).ok());
  ASSERT_TRUE(ctx.Commit().ok());
  EXPECT_EQ(ctx.writes_without_effect(), 2u);
  EXPECT_EQ(ctx.writes_committed(), 4u);
}

// UpsertIfNewerSource() leaves both checks to the commit: a copy no newer
// than the stored one does nothing, a newer one is written, and one whose
// target holds an item of another source fails the commit as a collision.
TEST_F(RuntimeTest, AConditionalUpsertIsCheckedByTheStore) {
  ASSERT_TRUE(IsOk(store_->RegisterConsumer("processor.conditional", 0)));
  StoreViewContext ctx(store_.get(), "processor.conditional", [] { return Lsn(1); });
  const object source{{"container", "posts"}, {"partitionKey", "k"}, {"id", "a"}};
  auto copy = [&](uint64_t source_lsn, std::string value, object of) {
    return object{{"id", "a"},
                  {"pk", "p"},
                  {"value", std::move(value)},
                  {"_sourceLsn", source_lsn},
                  {"_source", std::move(of)}};
  };
  ASSERT_TRUE(ctx.UpsertIfNewerSource("mirror", copy(5, "five", source)).ok());
  ASSERT_TRUE(ctx.Commit().ok());
  ASSERT_TRUE(ctx.UpsertIfNewerSource("mirror", copy(4, "four", source)).ok());
  ASSERT_TRUE(ctx.UpsertIfNewerSource("mirror", copy(5, "five again", source)).ok());
  ASSERT_TRUE(ctx.Commit().ok());
  EXPECT_EQ(ctx.writes_without_effect(), 2u);
  ASSERT_EQ(All("mirror").size(), 1u);
  EXPECT_EQ(S(All("mirror")[0], "value"), "five");

  ASSERT_TRUE(ctx.UpsertIfNewerSource("mirror", copy(6, "six", source)).ok());
  ASSERT_TRUE(ctx.Commit().ok());
  EXPECT_EQ(S(All("mirror")[0], "value"), "six");

  object other = source;
  other["partitionKey"] = "elsewhere";
  ASSERT_TRUE(ctx.UpsertIfNewerSource("mirror", copy(7, "of another source", other)).ok());
  Status refused = ctx.Commit();
  EXPECT_TRUE(IsCollision(refused)) << refused.ToString();
  EXPECT_EQ(S(All("mirror")[0], "value"), "six");

  EXPECT_EQ(ctx.UpsertIfNewerSource("mirror", object{{"id", "b"}, {"pk", "p"}}).code(),
            ErrorCode::kInternal)
      << "a conditional upsert needs the _sourceLsn it is conditioned on";
}

// A replay of changes whose copies are current commits conditional upserts
// the store skips: they are not derived items written.
TEST_F(RuntimeTest, CopiesTheStoreSkipsAreNotCountedAsViewWrites) {
  ProcessorInstance* user_posts = StartScenario("user_posts");
  ASSERT_NE(user_posts, nullptr);
  Upsert("users", User("u1", "alice"));
  const Lsn first = Upsert("posts", Post("p1", "u1", 1, 50));
  Upsert("posts", Post("p2", "u1", 2, 50));
  ASSERT_TRUE(Quiescent({user_posts}));
  const uint64_t written = user_posts->GetStatus().view_writes;
  EXPECT_EQ(written, 2u);
  const Lsn head = store_->HeadLsn();

  // The replay applies the two posts again (the applied LSN does not move
  // back, so it is waited for by the count of applied changes).
  const uint64_t applied = user_posts->GetStatus().applied;
  ASSERT_TRUE(IsOk(user_posts->ResetTo(first - 1)));
  ASSERT_TRUE(Eventually([&] { return user_posts->GetStatus().applied >= applied + 2; }));
  ASSERT_TRUE(Quiescent({user_posts}));
  EXPECT_EQ(store_->HeadLsn(), head) << "a replay rewrote a current copy";
  EXPECT_EQ(user_posts->GetStatus().view_writes, written);
}

TEST_F(RuntimeTest, AppliesEveryChangeAndTheWatermarkReachesTheHead) {
  ProcessorInstance* mirror = StartMirror("one", /*parallelism=*/3);
  ASSERT_NE(mirror, nullptr);
  // Registered before anything was written: fires once LSN 1 is applied.
  auto first = std::make_shared<std::promise<void>>();
  std::future<void> first_applied = first->get_future();
  mirror->OnApplied(1, [first] { first->set_value(); });

  std::map<Lsn, std::string> source_lsns;  // LSN -> key
  for (int round = 0; round < 3; ++round) {
    for (int k = 0; k < 5; ++k) {
      for (int i = 0; i < 4; ++i) {
        std::string key = "k" + std::to_string(k), id = "n" + std::to_string(i);
        source_lsns[Upsert("posts", Note(key, id, "v" + std::to_string(round)))] = key;
      }
    }
  }
  source_lsns[Delete("posts", "k1", "n1")] = "k1";
  source_lsns[Delete("posts", "k3", "n0")] = "k3";

  ASSERT_EQ(first_applied.wait_for(kTimeout), std::future_status::ready);
  ASSERT_TRUE(Quiescent({mirror}));
  EXPECT_EQ(mirror->applied(), store_->HeadLsn());
  ProcessorStatus status = mirror->GetStatus();
  EXPECT_EQ(status.applied_lsn, store_->HeadLsn());
  EXPECT_EQ(status.lag_changes, 0u);
  EXPECT_EQ(status.parked, 0u);
  EXPECT_EQ(status.errors, 0u);
  EXPECT_EQ(status.state, ProcessorState::kRunning);
  // Started before the writes: every change came in-process, none from the
  // durable feed.
  EXPECT_EQ(status.from_commit_path, store_->HeadLsn());
  EXPECT_EQ(status.from_durable_feed, 0u);
  ExpectMirrorMatchesSources();
  EXPECT_FALSE(Get("mirror", "k1", "n1"));
  EXPECT_TRUE(Get("mirror", "k1", "n2"));

  // Every change was applied, and those of one key in LSN order.
  std::map<std::string, std::vector<Lsn>> by_key;
  std::set<Lsn> applied;
  for (const auto& e : Log().Applied()) {
    by_key[e.key].push_back(e.lsn);
    applied.insert(e.lsn);
  }
  for (const auto& [lsn, key] : source_lsns) EXPECT_EQ(applied.count(lsn), 1u) << "LSN " << lsn;
  for (const auto& [key, lsns] : by_key) {
    EXPECT_TRUE(std::is_sorted(lsns.begin(), lsns.end())) << "key " << key << " out of order";
  }
}

// Nothing committed after Pause() returns is taken until Resume(); then
// the instance goes on from where it stopped.
TEST_F(RuntimeTest, APausedInstanceTakesNoChangeUntilResumed) {
  ProcessorInstance* mirror = StartMirror("one");
  ASSERT_NE(mirror, nullptr);
  const Lsn first = Upsert("posts", Note("k1", "n1", "a"));
  ASSERT_TRUE(WaitApplied(*mirror, first));
  mirror->Pause();
  const Lsn second = Upsert("posts", Note("k1", "n2", "b"));
  EXPECT_EQ(mirror->GetStatus().state, ProcessorState::kPaused);
  auto verified = mirror->Verify(50ms);
  ASSERT_FALSE(verified.ok());
  EXPECT_EQ(verified.status().code(), ErrorCode::kLsnWaitTimeout);
  EXPECT_LT(mirror->applied(), second);
  EXPECT_FALSE(Get("mirror", "k1", "n2"));
  mirror->Resume();
  ASSERT_TRUE(WaitApplied(*mirror, second));
  EXPECT_TRUE(Get("mirror", "k1", "n2"));
  EXPECT_EQ(mirror->GetStatus().state, ProcessorState::kRunning);
}

// Two kinds under one name would make the configuration's meaning depend on
// the link order: the second registration stops the program.
TEST(ProcessorRegistryDeathTest, AKindRegisteredTwiceStopsTheProgram) {
  EXPECT_DEATH(
      {
        ProcessorRegistry::Register("twice", MakeMirror);
        ProcessorRegistry::Register("twice", MakeMirror);
      },
      "processor kind 'twice' is registered twice");
  EXPECT_EQ(
      ProcessorRegistry::Create("twice", ProcessorSettings{}, BlogContainers()).status().code(),
      ErrorCode::kInvalidRequest);  // the child's registrations stayed there
}

// In the daemon changes come in-process, in a worker from Kafka: `source`
// may only agree (an in-daemon `source = kafka`, and `kafka_grace_ms`, are
// accepted and ignored, so older configurations still start).
TEST(ProcessorSettingsTest, WhereChangesComeFromFollowsWhereTheInstanceRuns) {
  auto with = [](std::map<std::string, std::string> extra) {
    std::map<std::string, std::string> settings;
    for (const auto& [key, value] : BlogProcessorSettings()) {
      if (key.rfind("user_posts.", 0) == 0) settings[key] = value;
    }
    for (const auto& [key, value] : extra) settings["user_posts." + key] = value;
    return settings;
  };
  // Without feed, which only processors write and none of these fills.
  auto containers = BlogContainers();
  std::erase_if(containers, [](const ContainerSpec& c) { return c.name == "feed"; });
  auto validate = [&](std::map<std::string, std::string> extra, bool kafka = true) {
    return ProcessorManager::Validate(with(std::move(extra)), containers, kafka);
  };
  EXPECT_TRUE(IsOk(validate({})));
  EXPECT_TRUE(IsOk(validate({}, /*kafka=*/false)));
  EXPECT_TRUE(IsOk(validate({{"source", "local"}})));
  EXPECT_TRUE(IsOk(validate({{"source", "kafka"}})));
  EXPECT_TRUE(IsOk(validate({{"kafka_grace_ms", "2000"}})));
  EXPECT_TRUE(IsOk(validate({{"run", "worker"}})));
  EXPECT_TRUE(IsOk(validate({{"run", "worker"}, {"source", "kafka"}})));

  Status s = validate({{"run", "worker"}, {"source", "local"}});
  EXPECT_EQ(s.code(), ErrorCode::kInvalidRequest);
  EXPECT_NE(s.message().find("reads Kafka"), std::string::npos) << s.message();
  s = validate({{"run", "worker"}}, /*kafka=*/false);
  EXPECT_NE(s.message().find("kafka.brokers = none"), std::string::npos) << s.message();
  s = validate({{"source", "commit"}});
  EXPECT_NE(s.message().find("must be local or kafka"), std::string::npos) << s.message();
}

// A container only processors write (writers = processors) needs a declared
// processor that writes into it; declaring the blog's containers without
// its feed processor is an error that says so.
TEST(ProcessorSettingsTest, AContainerOnlyProcessorsWriteNeedsOne) {
  std::map<std::string, std::string> settings = BlogProcessorSettings();
  EXPECT_TRUE(IsOk(ProcessorManager::Validate(settings, BlogContainers(), true)));
  std::erase_if(settings, [](const auto& entry) { return entry.first.rfind("feed.", 0) == 0; });
  Status s = ProcessorManager::Validate(settings, BlogContainers(), true);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidRequest);
  EXPECT_NE(s.message().find("container feed is written by processors only"), std::string::npos)
      << s.message();
  s = ProcessorManager::Validate({}, BlogContainers(), true);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidRequest) << "no processor at all";
  std::vector<ContainerSpec> open = BlogContainers();
  for (ContainerSpec& c : open) c.writers = ContainerWriters::kAny;
  EXPECT_TRUE(IsOk(ProcessorManager::Validate({}, open, true)));
}

// Lag is measured on the clock the instance is given, against the change's
// stamp from the store's clock: with a manual clock, exactly.
TEST_F(RuntimeTest, LagIsMeasuredOnTheGivenClock) {
  clock_ = &manual_clock_;
  CloseStore();
  OpenStore();
  ProcessorInstance* mirror = StartMirror("one");
  ASSERT_NE(mirror, nullptr);
  const Lsn first = Upsert("posts", Note("k1", "n1", "a"));
  ASSERT_TRUE(WaitApplied(*mirror, first));
  mirror->Pause();
  Upsert("posts", Note("k1", "n2", "b"));  // not applied while paused
  manual_clock_.Advance(5000);
  EXPECT_DOUBLE_EQ(mirror->GetStatus().lag_seconds, 5.0);
  manual_clock_.Advance(2500);
  EXPECT_DOUBLE_EQ(mirror->GetStatus().lag_seconds, 7.5);
}

// ---- what an instance does with its source (FakeChangeSource)

// Changes come from the source only, in its order; those of containers the
// kind does not read count as applied; W is acknowledged to the source, and
// made durable when the instance stops.
TEST_F(RuntimeTest, AnInstanceAppliesWhatItsSourceHandsItAndAcknowledgesW) {
  Upsert("posts", Note("k1", "n1", "a"));                              // LSN 1
  Upsert("users", User("u1", "alice"));                                // LSN 2: not the mirror's
  Upsert("posts", Note("k1", "n2", "b"));                              // LSN 3
  ASSERT_TRUE(IsOk(store_->RegisterConsumer("processor.mirror", 0)));  // no rebuild
  std::vector<ChangeRecord> written = FeedFrom(1);
  ASSERT_EQ(written.size(), 3u);

  auto feed = std::make_shared<FakeChangeSource::Feed>();
  feed->Append(written[0]);
  feed->Append(written[1]);
  ProcessorInstance* mirror = StartMirror("one", 2, 3, std::make_unique<FakeChangeSource>(feed));
  ASSERT_NE(mirror, nullptr);
  EXPECT_EQ(feed->seeks, std::vector<Lsn>{1});  // from the recorded W + 1
  ASSERT_TRUE(WaitApplied(*mirror, 2));
  EXPECT_TRUE(Get("mirror", "k1", "n1"));
  EXPECT_FALSE(Get("mirror", "k1", "n2"));  // in the store, not yet handed over
  EXPECT_EQ(mirror->applied(), 2u);

  feed->Append(written[2]);
  ASSERT_TRUE(WaitApplied(*mirror, 3));
  EXPECT_TRUE(Get("mirror", "k1", "n2"));
  {
    std::lock_guard<std::mutex> lock(Log().mutex);
    ASSERT_EQ(Log().applied.size(), 2u);  // not LSN 2
    EXPECT_EQ(Log().applied[0].lsn, 1u);
    EXPECT_EQ(Log().applied[1].lsn, 3u);
  }
  StopAll();
  EXPECT_EQ(feed->acknowledged, 3u);
  EXPECT_EQ(feed->synced, 3u);
}

// A change outside the kind's concern (ConcernFilters) never reaches an
// applier (no Apply, no view write), yet counts as applied and W moves
// past it; one that left the filter, or whose images are missing, does.
TEST_F(RuntimeTest, AChangeOutsideTheKindsConcernIsAppliedWithoutAnApply) {
  ProcessorSettings s;
  s.values = {{"source_container", "posts"},
              {"target_container", "mirror"},
              {"concern_filter", "type=note"}};
  ProcessorInstance* mirror = Start("mirror", "test_mirror", s);
  ASSERT_NE(mirror, nullptr);
  object other = Note("k1", "o1", "a");
  other["type"] = "other";
  Upsert("posts", Note("k1", "n1", "a"));
  Upsert("posts", other);                  // neither image a note
  Upsert("posts", Note("k1", "n2", "a"));  // a note, then
  object demoted = Note("k1", "n2", "b");
  demoted["type"] = "other";
  Upsert("posts", demoted);  // ... no longer
  ASSERT_TRUE(Quiescent({mirror}));
  EXPECT_EQ(mirror->applied(), store_->HeadLsn());  // past the mirror's own writes too
  EXPECT_EQ(mirror->GetStatus().applied, 4u);
  EXPECT_EQ(mirror->GetStatus().passed_over_outside_concern, 1u);
  EXPECT_EQ(mirror->GetStatus().passed_over_applied_already, 0u);
  std::lock_guard<std::mutex> lock(Log().mutex);
  EXPECT_EQ(Log().attempts.count("o1"), 0u);
  EXPECT_EQ(Log().attempts["n1"], 1);
  EXPECT_EQ(Log().attempts["n2"], 2);
}

// A change the kind tells is applied already (AppliedAlready(), on the
// source thread, reading the view) never reaches an applier, yet counts as
// applied and W moves past it; the next one that changes the copy does.
TEST_F(RuntimeTest, AChangeTheKindTellsIsAppliedAlreadyIsAppliedWithoutAnApply) {
  ProcessorInstance* mirror = nullptr;
  ASSERT_NO_FATAL_FAILURE(StartTellingMirrorOfN1(&mirror));
  object same = Note("k1", "n1", "a");
  same["note"] = "the value is the same";
  Upsert("posts", same);
  ASSERT_TRUE(Quiescent({mirror}));
  EXPECT_EQ(mirror->applied(), store_->HeadLsn());
  Upsert("posts", Note("k1", "n1", "b"));
  ASSERT_TRUE(Quiescent({mirror}));
  EXPECT_EQ(mirror->applied(), store_->HeadLsn());
  EXPECT_EQ(S(*Get("mirror", "k1", "n1"), "value"), "b");
  const ProcessorStatus status = mirror->GetStatus();
  EXPECT_EQ(status.applied, 3u);
  EXPECT_EQ(status.passed_over_applied_already, 1u);
  EXPECT_EQ(status.passed_over_outside_concern, 0u);
  std::lock_guard<std::mutex> lock(Log().mutex);
  EXPECT_EQ(Log().attempts["n1"], 2);
}

// AppliedAlready() is asked only while no earlier change is being applied:
// one in flight may have read its sources before the change was committed,
// and would write what it read after the check. Here n1 = "z" is held in
// its apply when n1 = "a", the copy's value, arrives: it goes to an applier
// too.
TEST_F(RuntimeTest, AppliedAlreadyIsNotAskedWhileAnEarlierChangeIsInFlight) {
  ProcessorInstance* mirror = nullptr;
  ASSERT_NO_FATAL_FAILURE(StartTellingMirrorOfN1(&mirror));
  Log().Block("n1");
  Upsert("posts", Note("k1", "n1", "z"));
  ASSERT_TRUE(Eventually([] { return Log().Entered("n1"); }));
  Upsert("posts", Note("k1", "n1", "a"));
  const Lsn head = store_->HeadLsn();
  // Both taken by the source thread, neither applied.
  ASSERT_TRUE(Eventually([&] { return mirror->GetStatus().pending == 2; }));
  Log().Release("n1");
  ASSERT_TRUE(Quiescent({mirror}));
  EXPECT_GE(mirror->applied(), head);
  EXPECT_EQ(mirror->GetStatus().passed_over_applied_already, 0u);
  EXPECT_EQ(S(*Get("mirror", "k1", "n1"), "value"), "a");
  std::lock_guard<std::mutex> lock(Log().mutex);
  EXPECT_EQ(Log().attempts["n1"], 3);
}

// Back-pressure counts the changes in flight: changes the kind passes over
// behind a blocked one hold memory for their LSN only, so the source goes
// on taking them, up to max_tracked, and later changes are applied.
TEST_F(RuntimeTest, ChangesPassedOverBehindABlockedOneDoNotStopTheSource) {
  ProcessorSettings s;
  s.values = {{"source_container", "posts"},
              {"target_container", "mirror"},
              {"concern_filter", "type=note"}};
  ProcessorConfig config = Config("mirror", "test_mirror", s, /*parallelism=*/8);
  config.max_in_flight = 10;
  config.max_tracked = 1000;
  ProcessorInstance* mirror = Start(std::move(config));
  ASSERT_NE(mirror, nullptr);
  Log().Block("n1");
  Upsert("posts", Note("k1", "n1", "a"));  // blocks its applier
  ASSERT_TRUE(Eventually([] { return Log().Entered("n1"); }));
  for (int i = 0; i < 20; ++i) {
    object other = Note("k1", "o" + std::to_string(i), "a");
    other["type"] = "other";
    Upsert("posts", other);
  }
  // Other keys: most go to other appliers than n1's.
  for (int k = 2; k < 10; ++k) Upsert("posts", Note("k" + std::to_string(k), "n", "b"));
  EXPECT_TRUE(Eventually([&] { return !All("mirror").empty(); }));
  EXPECT_EQ(mirror->applied(), 0u);  // W waits for n1
  Log().Release("n1");
  ASSERT_TRUE(Quiescent({mirror}));
  EXPECT_TRUE(Get("mirror", "k1", "n1"));
  EXPECT_EQ(mirror->GetStatus().applied, 29u);
}

// A record whose envelope cannot be read is parked, not skipped: W moves
// past it (it is kept in the store), and it is listed as parked.
TEST_F(RuntimeTest, ARecordTheInstanceCannotReadIsParkedNotSkipped) {
  Upsert("posts", Note("k1", "n1", "a"));  // LSN 1
  Upsert("posts", Note("k2", "n2", "b"));  // LSN 2
  ASSERT_TRUE(IsOk(store_->RegisterConsumer("processor.mirror", 0)));
  std::vector<ChangeRecord> written = FeedFrom(1);
  ASSERT_EQ(written.size(), 2u);
  written[0].envelope_json = "{\"lsn\":1,";  // cut short

  auto feed = std::make_shared<FakeChangeSource::Feed>();
  for (const ChangeRecord& r : written) feed->Append(r);
  ProcessorInstance* mirror = StartMirror("one", 2, 3, std::make_unique<FakeChangeSource>(feed));
  ASSERT_NE(mirror, nullptr);
  ASSERT_TRUE(WaitApplied(*mirror, 2));
  EXPECT_FALSE(Get("mirror", "k1", "n1"));
  EXPECT_TRUE(Get("mirror", "k2", "n2"));
  std::vector<ParkedChange> parked = mirror->Parked();
  ASSERT_EQ(parked.size(), 1u);
  EXPECT_EQ(parked[0].lsn, 1u);
  EXPECT_EQ(parked[0].id, "n1");
  EXPECT_EQ(mirror->GetStatus().state, ProcessorState::kDegraded);
}

// A rebuild derives the view from the data and positions the source after
// the head it rebuilt from.
TEST_F(RuntimeTest, ARebuildSeeksTheSourcePastTheHeadItRebuiltFrom) {
  Upsert("posts", Note("k1", "n1", "a"));
  ASSERT_TRUE(IsOk(store_->RegisterConsumer("processor.mirror", 0)));
  auto feed = std::make_shared<FakeChangeSource::Feed>();
  ProcessorInstance* mirror = StartMirror("one", 2, 3, std::make_unique<FakeChangeSource>(feed));
  ASSERT_NE(mirror, nullptr);
  Upsert("posts", Note("k1", "n2", "b"));
  ASSERT_TRUE(IsOk(mirror->Rebuild()));
  EXPECT_EQ(feed->seeks, (std::vector<Lsn>{1, 3}));
  EXPECT_EQ(mirror->applied(), 2u);
  EXPECT_TRUE(Get("mirror", "k1", "n1"));
  EXPECT_TRUE(Get("mirror", "k1", "n2"));
}

TEST_F(RuntimeTest, AFailingChangeIsRetriedThenParkedWithTheLaterChangesOfItsKey) {
  const int kMaxAttempts = 3;
  Log().SetFailing({"a2"});
  ProcessorInstance* mirror = StartMirror("one", /*parallelism=*/2, kMaxAttempts);
  ASSERT_NE(mirror, nullptr);

  Lsn a1 = Upsert("posts", Note("A", "a1", "x"));
  Upsert("posts", Note("B", "b1", "x"));
  Lsn a2 = Upsert("posts", Note("A", "a2", "x"));
  Upsert("posts", Note("B", "b2", "x"));
  Lsn a3 = Upsert("posts", Note("A", "a3", "first"));
  Upsert("posts", Note("B", "b3", "x"));
  Lsn a3b = Upsert("posts", Note("A", "a3", "second"));
  ASSERT_TRUE(a1 < a2 && a2 < a3 && a3 < a3b);

  ASSERT_TRUE(Eventually([&] { return mirror->Parked().size() == 3; }))
      << "parked: " << mirror->Parked().size();
  ASSERT_TRUE(Eventually([&] {
    return Get("mirror", "A", "a1") && Get("mirror", "B", "b1") && Get("mirror", "B", "b2") &&
           Get("mirror", "B", "b3");
  })) << "other changes did not flow";
  auto parked = mirror->Parked();
  ASSERT_EQ(parked.size(), 3u);
  EXPECT_EQ(parked[0].lsn, a2);
  EXPECT_EQ(parked[0].id, "a2");
  EXPECT_EQ(parked[0].key, "A");
  EXPECT_EQ(parked[0].container, "posts");
  EXPECT_NE(parked[0].error.find("injected failure for a2"), std::string::npos) << parked[0].error;
  EXPECT_EQ(parked[1].lsn, a3);
  EXPECT_EQ(parked[2].lsn, a3b);
  EXPECT_EQ(parked[1].key, "A");
  EXPECT_EQ(parked[2].key, "A");
  EXPECT_EQ(Log().Attempts("a2"), kMaxAttempts);
  EXPECT_EQ(Log().Attempts("a3"), 0) << "a change behind a parked one was attempted";
  EXPECT_FALSE(Get("mirror", "A", "a2"));
  EXPECT_FALSE(Get("mirror", "A", "a3"));
  // The parked changes are kept in the store; the watermark moves past them.
  ASSERT_TRUE(Quiescent({mirror}));
  EXPECT_EQ(mirror->applied(), store_->HeadLsn());
  ProcessorStatus status = mirror->GetStatus();
  EXPECT_EQ(status.state, ProcessorState::kDegraded);
  EXPECT_EQ(status.parked, 3u);
  EXPECT_GE(status.errors, static_cast<uint64_t>(kMaxAttempts));

  // Other keys keep flowing; later changes of A are parked behind a2.
  Upsert("posts", Note("B", "b4", "x"));
  Lsn a5 = Upsert("posts", Note("A", "a5", "x"));
  Upsert("posts", Note("C", "c1", "x"));
  EXPECT_TRUE(Eventually([&] { return Get("mirror", "B", "b4") && Get("mirror", "C", "c1"); }));
  ASSERT_TRUE(Eventually([&] { return mirror->Parked().size() == 4; }));
  EXPECT_EQ(mirror->Parked().back().lsn, a5);
  EXPECT_FALSE(Get("mirror", "A", "a5"));
  ASSERT_TRUE(Quiescent({mirror}));
  auto kept = store_->ListParked("processor.mirror");
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  ASSERT_EQ(kept->size(), 4u);
  EXPECT_EQ(kept->front().change.lsn, a2);
  EXPECT_EQ(kept->back().change.lsn, a5);

  // Fixed: the replay applies them in order and the watermark catches up.
  Log().SetFailing({});
  size_t before = Log().Applied().size();
  EXPECT_EQ(mirror->ReplayParked(), 4u);
  ASSERT_TRUE(Replayed(mirror));
  ASSERT_TRUE(Quiescent({mirror}));
  EXPECT_EQ(mirror->applied(), store_->HeadLsn());
  EXPECT_TRUE(mirror->Parked().empty());
  std::vector<Lsn> replayed;
  auto log = Log().Applied();
  for (size_t i = before; i < log.size(); ++i) {
    if (log[i].key == "A") replayed.push_back(log[i].lsn);
  }
  EXPECT_EQ(replayed, (std::vector<Lsn>{a2, a3, a3b, a5}));
  EXPECT_EQ(Log().Attempts("a2"), kMaxAttempts + 1);
  ASSERT_TRUE(Get("mirror", "A", "a3"));
  EXPECT_EQ(S(*Get("mirror", "A", "a3"), "value"), "second");
  ExpectMirrorMatchesSources();
  status = mirror->GetStatus();
  EXPECT_EQ(status.state, ProcessorState::kRunning);
  EXPECT_EQ(status.parked, 0u);
  kept = store_->ListParked("processor.mirror");
  ASSERT_TRUE(kept.ok());
  EXPECT_TRUE(kept->empty()) << "a replayed change is still kept as parked";
}

// One poison change must not hold the watermark (read-your-writes) nor the
// feed's retention for everything else.
TEST_F(RuntimeTest, AParkedChangeHoldsNeitherTheWatermarkNorRetention) {
  CloseStore();
  OpenStore(/*retention_bytes=*/1);  // keeps only what a consumer still needs
  Log().SetFailing({"a2"});
  ProcessorInstance* mirror = StartMirror("one", /*parallelism=*/2, /*max_attempts=*/2);
  ASSERT_NE(mirror, nullptr);
  Upsert("posts", Note("A", "a1", "x"));
  Lsn a2 = Upsert("posts", Note("A", "a2", "x"));
  Lsn b1 = Upsert("posts", Note("B", "b1", "x"));
  ASSERT_TRUE(Eventually([&] { return mirror->Parked().size() == 1; }));
  EXPECT_TRUE(WaitApplied(*mirror, b1, 10s)) << "applied " << mirror->applied();

  // Which reads depend on it: those at or above its LSN.
  EXPECT_FALSE(mirror->OldestParked(a2 - 1));
  auto oldest = mirror->OldestParked(b1);
  ASSERT_TRUE(oldest);
  EXPECT_EQ(oldest->lsn, a2);
  EXPECT_EQ(oldest->container, "posts");
  EXPECT_EQ(oldest->partition_key, "A");
  EXPECT_EQ(oldest->id, "a2");

  // The recorded watermark moves on, and retention frees the feed.
  ASSERT_TRUE(Eventually([&] { return Acked("processor.mirror") >= b1; }))
      << "acked " << Acked("processor.mirror");
  ASSERT_TRUE(IsOk(store_->EnforceRetention()));
  EXPECT_GT(store_->OldestRetainedLsn(), a2);
  EXPECT_EQ(mirror->GetStatus().state, ProcessorState::kDegraded);
}

TEST_F(RuntimeTest, ParkedChangesSurviveARestartWithoutTheFeedAndAReplayAppliesThem) {
  CloseStore();
  OpenStore(/*retention_bytes=*/1);
  Log().SetFailing({"a2"});
  ProcessorInstance* mirror = StartMirror("first", /*parallelism=*/2, /*max_attempts=*/2);
  ASSERT_NE(mirror, nullptr);
  Lsn a2 = Upsert("posts", Note("A", "a2", "v1"));
  Lsn a3 = Upsert("posts", Note("A", "a3", "v1"));
  Lsn b1 = Upsert("posts", Note("B", "b1", "x"));
  ASSERT_TRUE(Eventually([&] { return mirror->Parked().size() == 2; }));
  ASSERT_TRUE(WaitApplied(*mirror, b1, 10s));
  StopAll();
  CloseStore();
  OpenStore(/*retention_bytes=*/1);
  ASSERT_TRUE(IsOk(store_->EnforceRetention()));
  ASSERT_GT(store_->OldestRetainedLsn(), a3) << "the feed still holds the parked changes";

  // Parked again at once, with their errors, before anything is retried.
  mirror = StartMirror("second", /*parallelism=*/2, /*max_attempts=*/2);
  ASSERT_NE(mirror, nullptr);
  auto parked = mirror->Parked();
  ASSERT_EQ(parked.size(), 2u);
  EXPECT_EQ(parked[0].lsn, a2);
  EXPECT_EQ(parked[0].key, "A");
  EXPECT_NE(parked[0].error.find("injected failure for a2"), std::string::npos) << parked[0].error;
  EXPECT_EQ(parked[1].lsn, a3);
  EXPECT_EQ(mirror->GetStatus().state, ProcessorState::kDegraded);
  EXPECT_EQ(Log().Attempts("a3"), 0);
  // A later change of A waits behind them; other keys flow.
  Lsn a4 = Upsert("posts", Note("A", "a4", "v1"));
  Upsert("posts", Note("B", "b2", "x"));
  ASSERT_TRUE(Eventually([&] { return mirror->Parked().size() == 3; }));
  ASSERT_TRUE(Quiescent({mirror}));
  EXPECT_FALSE(Get("mirror", "A", "a4"));

  // Fixed: the replay applies them from their kept envelopes, in order.
  Log().SetFailing({});
  EXPECT_EQ(mirror->ReplayParked(), 3u);
  ASSERT_TRUE(Replayed(mirror));
  ASSERT_TRUE(Quiescent({mirror}));
  EXPECT_TRUE(mirror->Parked().empty());
  ExpectMirrorMatchesSources();
  std::vector<Lsn> order;
  for (const auto& e : Log().Applied()) {
    if (e.key == "A") order.push_back(e.lsn);
  }
  EXPECT_EQ(order, (std::vector<Lsn>{a2, a3, a4}));
  auto kept = store_->ListParked("processor.mirror");
  ASSERT_TRUE(kept.ok());
  EXPECT_TRUE(kept->empty());
  EXPECT_EQ(mirror->GetStatus().state, ProcessorState::kRunning);
}

TEST_F(RuntimeTest, ARebuildAndAnUnregisteredConsumerLeaveNothingParked) {
  Log().SetFailing({"a1"});
  ProcessorInstance* mirror = StartMirror("one", /*parallelism=*/1, /*max_attempts=*/1);
  ASSERT_NE(mirror, nullptr);
  Upsert("posts", Note("A", "a1", "x"));
  ASSERT_TRUE(Eventually([&] { return mirror->Parked().size() == 1; }));
  Log().SetFailing({});
  ASSERT_TRUE(IsOk(mirror->Rebuild()));
  EXPECT_TRUE(mirror->Parked().empty());
  EXPECT_TRUE(Get("mirror", "A", "a1"));
  auto kept = store_->ListParked("processor.mirror");
  ASSERT_TRUE(kept.ok());
  EXPECT_TRUE(kept->empty());

  Log().SetFailing({"a2"});
  Upsert("posts", Note("A", "a2", "x"));
  ASSERT_TRUE(Eventually([&] { return mirror->Parked().size() == 1; }));
  StopAll();
  ASSERT_TRUE(IsOk(store_->UnregisterConsumer("processor.mirror")));
  kept = store_->ListParked("processor.mirror");
  ASSERT_TRUE(kept.ok());
  EXPECT_TRUE(kept->empty());
}

// A rebuild run as a cancelled job (AdminRun::stop) commits nothing after the
// cancel, keeps its parked changes, and the instance goes on.
TEST_F(RuntimeTest, ACancelledRebuildCommitsNothingMoreAndKeepsItsParkedChanges) {
  Log().SetFailing({"a1"});
  ProcessorInstance* mirror = StartMirror("one", /*parallelism=*/1, /*max_attempts=*/1);
  ASSERT_NE(mirror, nullptr);
  Upsert("posts", Note("A", "a1", "x"));
  Lsn b1 = Upsert("posts", Note("B", "b1", "x"));
  ASSERT_TRUE(Eventually([&] { return mirror->Parked().size() == 1; }));
  ASSERT_TRUE(WaitApplied(*mirror, b1, 10s));
  ASSERT_TRUE(Get("mirror", "B", "b1"));
  Log().SetFailing({});
  const std::string last_error = mirror->GetStatus().last_error;

  // The kind deletes every mirror and flushes, then reads its sources: the
  // job is cancelled as the first source items are counted.
  std::stop_source stop;
  uint64_t counted = 0;
  Status s = mirror->Rebuild(AdminRun{stop.get_token(), [&](uint64_t n) {
                                        counted += n;
                                        stop.request_stop();
                                      }});
  EXPECT_EQ(s.code(), ErrorCode::kCancelled) << s.ToString();
  EXPECT_EQ(counted, 2u);
  EXPECT_FALSE(Get("mirror", "B", "b1")) << "the step before the cancel is committed";
  EXPECT_FALSE(Get("mirror", "A", "a1")) << "a write after the cancel was committed";
  EXPECT_EQ(mirror->Parked().size(), 1u);
  auto kept = store_->ListParked("processor.mirror");
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(kept->size(), 1u);
  EXPECT_EQ(mirror->GetStatus().last_error, last_error) << "a cancel is not an error";
  EXPECT_EQ(mirror->GetStatus().rebuilds, 1u) << "only the start-up rebuild finished";

  // It goes on: a later change is applied, and a whole rebuild repairs.
  Lsn c1 = Upsert("posts", Note("C", "c1", "x"));
  ASSERT_TRUE(WaitApplied(*mirror, c1, 10s));
  EXPECT_TRUE(Get("mirror", "C", "c1"));
  ASSERT_TRUE(IsOk(mirror->Rebuild()));
  EXPECT_TRUE(mirror->Parked().empty());
  ExpectMirrorMatchesSources();
}

// While a replayed change is being applied it is still parked: the list,
// the count and the state agree with X-Feedd-Parked (OldestParked), which
// must name it until its view write is committed.
TEST_F(RuntimeTest, AReplayedChangeStaysParkedUntilItIsApplied) {
  Log().SetFailing({"a2"});
  ProcessorInstance* mirror = StartMirror("one", /*parallelism=*/1, /*max_attempts=*/1);
  ASSERT_NE(mirror, nullptr);
  Lsn a2 = Upsert("posts", Note("A", "a2", "x"));
  ASSERT_TRUE(Eventually([&] { return mirror->Parked().size() == 1; }));

  Log().SetFailing({});
  Log().Block("a2");
  EXPECT_EQ(mirror->ReplayParked(), 1u);
  ASSERT_TRUE(Eventually([&] { return Log().Entered("a2"); }));
  ASSERT_TRUE(mirror->OldestParked(a2));
  std::vector<ParkedChange> parked = mirror->Parked();
  ASSERT_EQ(parked.size(), 1u) << "a replayed change left the list before it was applied";
  EXPECT_EQ(parked[0].lsn, a2);
  EXPECT_EQ(parked[0].key, "A");
  ProcessorStatus status = mirror->GetStatus();
  EXPECT_EQ(status.parked, 1u);
  EXPECT_EQ(status.state, ProcessorState::kDegraded);

  Log().Release("a2");
  ASSERT_TRUE(Eventually([&] { return mirror->Parked().empty(); }));
  EXPECT_FALSE(mirror->OldestParked(a2));
  EXPECT_TRUE(Get("mirror", "A", "a2"));
  EXPECT_EQ(mirror->GetStatus().state, ProcessorState::kRunning);
}

// A change of a parked key that is already queued when ReplayParked() runs
// must still be applied after the replayed (older) changes of its key.
TEST_F(RuntimeTest, AReplayKeepsLsnOrderWithChangesQueuedBehindIt) {
  Log().SetFailing({"a2"});
  ProcessorInstance* mirror = StartMirror("one", /*parallelism=*/1, /*max_attempts=*/2);
  ASSERT_NE(mirror, nullptr);
  Lsn a1 = Upsert("posts", Note("A", "a1", "x"));
  Lsn a2 = Upsert("posts", Note("A", "a2", "x"));
  ASSERT_TRUE(Eventually([&] { return mirror->Parked().size() == 1; }));

  // Hold the only worker in the apply of b1, and queue a3 behind it.
  Log().Block("b1");
  Upsert("posts", Note("B", "b1", "x"));
  ASSERT_TRUE(Eventually([&] { return Log().Entered("b1"); }));
  Lsn a3 = Upsert("posts", Note("A", "a3", "x"));
  Upsert("posts", Note("C", "c1", "x"));
  // b1 (in progress), a3 and c1 received: a3 is queued (a2 is parked, which
  // counts as done).
  ASSERT_TRUE(Eventually([&] { return mirror->GetStatus().pending == 3; }))
      << "pending " << mirror->GetStatus().pending;

  Log().SetFailing({});
  EXPECT_EQ(mirror->ReplayParked(), 1u);
  Log().Release("b1");
  ASSERT_TRUE(Replayed(mirror));
  ASSERT_TRUE(Quiescent({mirror}));

  std::vector<Lsn> order;
  for (const auto& e : Log().Applied()) {
    if (e.key == "A") order.push_back(e.lsn);
  }
  EXPECT_EQ(order, (std::vector<Lsn>{a1, a2, a3})) << "key A applied out of LSN order";
  EXPECT_EQ(mirror->applied(), store_->HeadLsn());
}

TEST_F(RuntimeTest, ARestartContinuesFromTheRecordedWatermark) {
  ProcessorInstance* mirror = StartMirror("first");
  ProcessorInstance* user_posts = StartScenario("user_posts");
  ASSERT_TRUE(mirror && user_posts);
  Upsert("users", User("u1", "alice"));
  Upsert("users", User("u2", "bob"));
  for (int i = 0; i < 6; ++i) {
    Upsert("posts", Post("p" + std::to_string(i), i % 2 ? "u1" : "u2", i, 250));
    Upsert("posts", Note("k" + std::to_string(i % 3), "n" + std::to_string(i), "v1"));
  }
  ASSERT_TRUE(Quiescent({mirror, user_posts}));
  Lsn head_at_stop = store_->HeadLsn();
  StopAll();
  EXPECT_EQ(Acked("processor.mirror"), head_at_stop);
  EXPECT_EQ(Acked("processor.user_posts"), head_at_stop);
  CloseStore();
  OpenStore();
  ASSERT_EQ(Acked("processor.mirror"), head_at_stop);

  // Changes made while no processor runs.
  std::set<Lsn> while_stopped;
  while_stopped.insert(Upsert("posts", Post("p1", "u1", 1, 300, "edited")));
  while_stopped.insert(Delete("posts", "p2", "p2"));
  while_stopped.insert(Upsert("posts", Post("p9", "u2", 9, 20)));
  while_stopped.insert(Upsert("posts", Note("k0", "n0", "v2")));
  while_stopped.insert(Delete("posts", "k1", "n1"));

  mirror = StartMirror("second");
  user_posts = StartScenario("user_posts");
  ASSERT_TRUE(mirror && user_posts);
  EXPECT_GE(mirror->applied(), head_at_stop);
  // More changes while running.
  while_stopped.insert(Upsert("posts", Note("k2", "n5", "v3")));
  ASSERT_TRUE(Quiescent({mirror, user_posts}));

  auto differences = user_posts->Verify(5s);
  ASSERT_TRUE(differences.ok()) << differences.status().ToString();
  EXPECT_TRUE(differences->empty()) << Joined(*differences);
  ASSERT_TRUE(Get("users", "u1", "p1"));
  EXPECT_EQ(S(*Get("users", "u1", "p1"), "title"), "edited");
  EXPECT_FALSE(Get("users", "u2", "p2"));
  EXPECT_TRUE(Get("users", "u2", "p9"));
  ExpectMirrorMatchesSources();

  // The new instance applied exactly the changes after the watermark, once.
  std::map<Lsn, int> first, second;
  for (const auto& e : Log().Applied()) ++(e.tag == "first" ? first : second)[e.lsn];
  for (const auto& [lsn, n] : second) {
    EXPECT_GT(lsn, head_at_stop) << "LSN " << lsn << " was applied again after the restart";
    EXPECT_EQ(n, 1) << "LSN " << lsn;
  }
  for (Lsn lsn : while_stopped) EXPECT_EQ(second.count(lsn), 1u) << "LSN " << lsn;
}

TEST_F(RuntimeTest, AStopWhileBusyLosesNothingAndRepeatsNothingBelowTheWatermark) {
  ProcessorInstance* mirror = StartMirror("first", /*parallelism=*/4);
  ASSERT_NE(mirror, nullptr);
  // 3000 changes in batches of 100, far faster than the processor applies
  // them (one view commit each), so the stop comes in the middle.
  std::set<Lsn> sources;
  for (int batch = 0; batch < 30; ++batch) {
    std::vector<object> items;
    for (int i = 0; i < 100; ++i) {
      items.push_back(Note("k" + std::to_string(batch % 7), "n" + std::to_string(i % 60),
                           "v" + std::to_string(batch * 100 + i)));
    }
    for (Lsn lsn : UpsertBatch("posts", "k" + std::to_string(batch % 7), std::move(items))) {
      sources.insert(lsn);
    }
  }
  ASSERT_EQ(sources.size(), 3000u);
  ASSERT_TRUE(WaitApplied(*mirror, 500));
  StopAll();  // without waiting for the rest
  Lsn acked = Acked("processor.mirror");
  EXPECT_GE(acked, 500u);
  CloseStore();
  OpenStore();
  mirror = StartMirror("second", /*parallelism=*/4);
  ASSERT_NE(mirror, nullptr);
  ASSERT_TRUE(Quiescent({mirror}));
  ExpectMirrorMatchesSources();

  std::set<Lsn> first, second;
  for (const auto& e : Log().Applied()) (e.tag == "first" ? first : second).insert(e.lsn);
  for (Lsn lsn : second) EXPECT_GT(lsn, acked) << "applied again below the watermark";
  for (Lsn lsn : sources) {
    EXPECT_TRUE(first.count(lsn) || second.count(lsn)) << "LSN " << lsn << " never applied";
    if (lsn <= acked) {
      EXPECT_TRUE(first.count(lsn)) << "LSN " << lsn << " acked, not applied";
    }
  }
}

TEST_F(RuntimeTest, AStartOnExistingDataDerivesTheViews) {
  Upsert("users", User("u1", "alice"));
  Upsert("users", User("u2", "bob"));
  for (int i = 0; i < 120; ++i) {
    std::string id = "p" + std::to_string(i);
    Upsert("posts", Post(id, i % 3 ? "u1" : "u2", (i * 37) % 1000, 150 + i));
  }
  Upsert("posts", Note("p1", "c1", "a comment-like item"));

  ProcessorInstance* user_posts = StartScenario("user_posts");
  ProcessorInstance* feed = StartScenario("feed");
  ASSERT_TRUE(user_posts && feed);
  // Start() derived the views before returning.
  size_t copies = 0;
  for (const auto& item : All("users")) {
    if (S(item, "type") != "post") continue;
    ++copies;
    auto post = Get("posts", S(item, "id"), S(item, "id"));
    ASSERT_TRUE(post) << S(item, "id");
    EXPECT_EQ(S(item, "userId"), S(*post, "userId"));
    EXPECT_EQ(S(item, "content"),
              Text(std::min<size_t>(200, CodePoints(S(*post, "content")).value_or(0))));
    EXPECT_EQ(U(item, "_sourceLsn"), U(*post, "_lsn"));
  }
  EXPECT_EQ(copies, 120u);
  EXPECT_EQ(All("feed", "post").size(), 100u);
  for (auto* instance : {user_posts, feed}) {
    auto differences = instance->Verify(5s);
    ASSERT_TRUE(differences.ok()) << differences.status().ToString();
    EXPECT_TRUE(differences->empty()) << instance->name() << Joined(*differences);
  }

  // A damaged view (written around the processor, as an operator's override
  // can) is reported, and rebuilt.
  Delete("users", "u1", "p1", WriteOrigin::kOverride);
  ASSERT_TRUE(Quiescent({user_posts, feed}));
  auto differences = user_posts->Verify(5s);
  ASSERT_TRUE(differences.ok());
  EXPECT_FALSE(differences->empty()) << "Verify() missed a deleted copy";
  ASSERT_TRUE(IsOk(user_posts->Rebuild()));
  differences = user_posts->Verify(5s);
  ASSERT_TRUE(differences.ok());
  EXPECT_TRUE(differences->empty()) << Joined(*differences);
  EXPECT_TRUE(Get("users", "u1", "p1"));

  // And the instances keep following the feed after the rebuild.
  Upsert("posts", Post("p500", "u2", 5000));
  ASSERT_TRUE(Quiescent({user_posts, feed}));
  EXPECT_TRUE(Get("users", "u2", "p500"));
  EXPECT_TRUE(Get("feed", "post", "p500"));
}

// A processor removed from the configuration (or moved to feedd worker)
// must not pin the change feed's retention with its old watermark.
TEST_F(RuntimeTest, TheManagerDropsTheWatermarksOfProcessorsItNoLongerRuns) {
  ASSERT_TRUE(IsOk(store_->RegisterConsumer("processor.usernames", 0)));
  ASSERT_TRUE(IsOk(store_->RegisterConsumer("kafka-publisher", 0)));
  std::map<std::string, std::string> settings;  // usernames is no longer declared
  for (const auto& [key, value] : BlogProcessorSettings()) {
    if (key.rfind("usernames.", 0) != 0) settings[key] = value;
  }
  auto manager = ProcessorManager::Create(store_.get(), settings, false, 2);
  ASSERT_TRUE(manager.ok()) << manager.status().ToString();
  ASSERT_EQ((*manager)->instances().size(), 2u);
  ASSERT_TRUE(IsOk((*manager)->Start()));
  std::set<std::string> names;
  for (const auto& c : store_->Consumers()) names.insert(c.name);
  EXPECT_EQ(names,
            (std::set<std::string>{"kafka-publisher", "processor.feed", "processor.user_posts"}));
  (*manager)->Stop();
}

TEST_F(RuntimeTest, TheScenarioViewsStayRightThroughTheManager) {
  auto manager = ProcessorManager::Create(store_.get(), BlogProcessorSettings(), false, 2);
  ASSERT_TRUE(manager.ok()) << manager.status().ToString();
  ASSERT_EQ((*manager)->instances().size(), 3u);
  ASSERT_TRUE(IsOk((*manager)->Start()));
  std::vector<ProcessorInstance*> all;
  for (const auto& i : (*manager)->instances()) all.push_back(i.get());

  Upsert("users", User("u1", "alice"));
  Upsert("users", User("u2", "bob"));
  for (int i = 0; i < 8; ++i) {
    std::string id = "p" + std::to_string(i);
    Upsert("posts", Post(id, i % 2 ? "u1" : "u2", i, 220));  // no userUsername
  }
  object comment{{"id", "c1"},     {"type", "comment"}, {"postId", "p0"},
                 {"userId", "u1"}, {"content", "hi"},   {"creationDate", Date(100)}};
  Upsert("posts", comment);
  object like{{"id", "l1"}, {"type", "like"}, {"postId", "p0"}, {"userId", "u1"}};
  Upsert("posts", like);
  Upsert("users", User("u1", "alicia"));
  ASSERT_TRUE(Quiescent(all));

  EXPECT_EQ(S(*Get("posts", "p0", "c1"), "userUsername"), "alicia");
  EXPECT_EQ(S(*Get("posts", "p0", "l1"), "userUsername"), "alicia");
  EXPECT_EQ(S(*Get("posts", "p1", "p1"), "userUsername"), "alicia");
  EXPECT_EQ(S(*Get("posts", "p0", "p0"), "userUsername"), "bob");
  ASSERT_TRUE(Get("users", "u1", "p1"));
  EXPECT_EQ(S(*Get("users", "u1", "p1"), "userUsername"), "alicia") << "stale user_posts copy";
  ASSERT_TRUE(Get("feed", "post", "p7"));
  EXPECT_EQ(S(*Get("feed", "post", "p7"), "userUsername"), "alicia") << "stale feed copy";
  for (auto* instance : all) {
    auto differences = instance->Verify(5s);
    ASSERT_TRUE(differences.ok()) << differences.status().ToString();
    EXPECT_TRUE(differences->empty()) << instance->name() << Joined(*differences);
  }
  (*manager)->Stop();
}

// `usernames` looks up the author of every comment in its item memo. The
// author's partition of `users` also holds `user_posts`' copies of their
// posts, rewritten with every comment count; those writes do not make the
// kept author stale, so each lookup after the first is a hit.
TEST_F(RuntimeTest, AKeptItemStaysKeptWhileOthersInItsPartitionChange) {
  auto manager = ProcessorManager::Create(store_.get(), BlogProcessorSettings(), false, 2);
  ASSERT_TRUE(manager.ok()) << manager.status().ToString();
  ASSERT_TRUE(IsOk((*manager)->Start()));
  std::vector<ProcessorInstance*> all;
  ProcessorInstance* usernames = nullptr;
  for (const auto& i : (*manager)->instances()) {
    all.push_back(i.get());
    if (i->name() == "usernames") usernames = i.get();
  }
  ASSERT_NE(usernames, nullptr);
  Upsert("users", User("u1", "alice"));
  object post = Post("p0", "u1", 0);
  post["userUsername"] = "alice";
  Upsert("posts", post);
  ASSERT_TRUE(Quiescent(all));
  const ProcessorStatus::MemoCounts before = usernames->GetStatus().view_item_memo;

  constexpr int kComments = 10;
  for (int i = 1; i <= kComments; ++i) {
    object comment{{"id", "c" + std::to_string(i)},
                   {"type", "comment"},
                   {"postId", "p0"},
                   {"userId", "u1"},
                   {"userUsername", "alice"},
                   {"content", "hi"},
                   {"creationDate", Date(i)}};
    Upsert("posts", comment);
    post["commentCount"] = i;  // user_posts rewrites users/u1/p0
    Upsert("posts", post);
    ASSERT_TRUE(Quiescent(all));
    ASSERT_TRUE(Get("users", "u1", "p0"));
    ASSERT_EQ(Get("users", "u1", "p0")->at("commentCount").to_number<int>(), i);
  }
  const ProcessorStatus::MemoCounts after = usernames->GetStatus().view_item_memo;
  EXPECT_LE(after.misses - before.misses, 1u);
  EXPECT_GE(after.hits - before.hits, static_cast<uint64_t>(kComments - 1));
  (*manager)->Stop();
}

}  // namespace
}  // namespace feedd::proctest
