// Unit tests of ProcessorWorker (processors/processor_worker.h) on a
// FakePartitionedChangeSource: what `feedd worker` guarantees about its
// consumer - changes of a key applied in offset order, offsets committed
// only up to the first change not applied, a rebalance that commits what was
// applied and is resumed from there by the next owner, messages that are no
// change passed over - without a broker. (tests/integration/test_worker.py
// runs the same against Kafka and a daemon.)
//
// The kind records what it applies and writes nothing, so the worker's
// HTTP clients are never used.
#include "processors/processor_worker.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/processors/fake_partitioned_change_source.h"

namespace feedd {
namespace {

constexpr auto kTimeout = std::chrono::seconds(20);

// What the kinds of a test applied, in order; changes whose id is held
// wait in Apply() until released.
struct Applications {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<Change> applied;
  std::set<std::string> held, waiting;  // ids

  void Release(const std::string& id) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      held.erase(id);
    }
    changed.notify_all();
  }
  bool WaitFor(const std::function<bool()>& done) {
    std::unique_lock<std::mutex> lock(mutex);
    return changed.wait_for(lock, kTimeout, done);
  }
  std::map<Lsn, int> TimesApplied() {
    std::lock_guard<std::mutex> lock(mutex);
    std::map<Lsn, int> times;
    for (const Change& c : applied) ++times[c.lsn];
    return times;
  }
};

class RecordingKind final : public ProcessorKind {
 public:
  explicit RecordingKind(Applications* applications) : applications_(applications) {}
  std::vector<std::string> SourceContainers() const override { return {"posts"}; }
  std::vector<std::string> TargetContainers() const override { return {"feed"}; }
  std::string OrderingKey(const Change& c) const override { return c.partition_key; }
  Status Apply(const Change& change, ViewContext&) const override {
    std::unique_lock<std::mutex> lock(applications_->mutex);
    applications_->waiting.insert(change.id);
    applications_->changed.notify_all();
    applications_->changed.wait(lock, [&] { return applications_->held.count(change.id) == 0; });
    applications_->waiting.erase(change.id);
    applications_->applied.push_back(change);
    applications_->changed.notify_all();
    return Status::Ok();
  }
  Status Rebuild(ViewContext&) const override { return Status::Ok(); }
  Status Verify(ViewContext&, std::vector<std::string>*) const override { return Status::Ok(); }

 private:
  Applications* const applications_;
};

const TopicPartition kP0{"feedd.posts", 0};
const TopicPartition kP1{"feedd.posts", 1};

// A message as feedd's publisher writes it: the native envelope of a
// change of "posts" with id "c<lsn>", and its headers.
ConsumedMessage ChangeMessage(const TopicPartition& at, Lsn lsn, const std::string& key) {
  Change change;
  change.lsn = lsn;
  change.container = "posts";
  change.partition_key = key;
  change.id = "c" + std::to_string(lsn);
  change.after =
      std::make_shared<const boost::json::object>(boost::json::object{{"id", change.id}});
  ConsumedMessage m;
  m.at = at;
  m.payload = ToChangeRecord(change).envelope_json;
  m.lsn = lsn;
  m.container = change.container;
  m.id = change.id;
  m.op = "create";
  m.partition_key = key;
  return m;
}

// Polls `done` until it holds or kTimeout passes.
bool Eventually(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + kTimeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

class ProcessorWorkerTest : public ::testing::Test {
 protected:
  // A started worker of the group, and its source.
  struct Member {
    std::unique_ptr<ProcessorWorker> worker;
    FakePartitionedChangeSource* source = nullptr;  // owned by the worker
  };

  Member Join(size_t parallelism = 4) {
    ProcessorConfig config;
    config.name = "recorded";
    config.kind = "recording";
    config.parallelism = parallelism;
    WorkerOptions options;
    options.api = "127.0.0.1:9";  // never reached: the kind writes nothing
    options.revoke_wait = kTimeout;
    auto source = std::make_unique<FakePartitionedChangeSource>(group_);
    Member member;
    member.source = source.get();
    auto worker = ProcessorWorker::Create(config, std::make_unique<RecordingKind>(&applications_),
                                          {}, options, std::move(source));
    EXPECT_TRUE(worker.ok()) << worker.status().ToString();
    if (!worker.ok()) return member;
    member.worker = std::move(*worker);
    Status started = member.worker->Start();
    EXPECT_TRUE(started.ok()) << started.ToString();
    return member;
  }

  // Waits until `source` has finished `n` rebalances.
  bool RebalancesDone(const FakePartitionedChangeSource* source, int n) {
    return group_->WaitFor([&] { return source->rebalances_done() >= n; });
  }

  // The group's committed position of `partition` reaches `offset`.
  bool CommittedReaches(const TopicPartition& partition, int64_t offset) {
    return group_->WaitFor([&] {
      auto it = group_->committed.find(partition);
      return it != group_->committed.end() && it->second.offset >= offset;
    });
  }

  std::shared_ptr<FakeGroup> group_ = std::make_shared<FakeGroup>();
  Applications applications_;
};

TEST_F(ProcessorWorkerTest, SubscribesToTheTopicsOfItsSources) {
  Member a = Join();
  std::lock_guard<std::mutex> lock(group_->mutex);
  EXPECT_EQ(a.source->subscribed(), std::set<std::string>{"feedd.posts"});
}

TEST_F(ProcessorWorkerTest, AppliesTheChangesOfAKeyInOffsetOrderAndCommitsThemAll) {
  // Three keys over two partitions, a key's changes in one partition (as
  // Kafka partitions by key); parallel threads may interleave keys.
  const std::vector<std::pair<TopicPartition, std::string>> keys = {
      {kP0, "a"}, {kP0, "b"}, {kP1, "c"}};
  std::map<std::string, std::vector<Lsn>> published;  // per key, in offset order
  Lsn lsn = 0;
  for (int i = 0; i < 300; ++i) {
    const auto& [at, key] = keys[(i * 7 + i / 5) % keys.size()];
    group_->Append(ChangeMessage(at, ++lsn, key));
    published[key].push_back(lsn);
  }
  Member a = Join();
  a.source->Assign({kP0, kP1});
  const int64_t p0_size = static_cast<int64_t>(group_->logs[kP0].size());
  const int64_t p1_size = static_cast<int64_t>(group_->logs[kP1].size());
  ASSERT_TRUE(CommittedReaches(kP0, p0_size));
  ASSERT_TRUE(CommittedReaches(kP1, p1_size));

  std::map<std::string, std::vector<Lsn>> applied;
  {
    std::lock_guard<std::mutex> lock(applications_.mutex);
    for (const Change& c : applications_.applied) applied[c.partition_key].push_back(c.lsn);
  }
  EXPECT_EQ(applied, published);
  // Each partition's position: after its last message, with that LSN.
  EXPECT_EQ(group_->Committed(kP0).offset, p0_size);
  EXPECT_EQ(group_->Committed(kP0).metadata, std::to_string(group_->logs[kP0].back().lsn));
  EXPECT_EQ(group_->Committed(kP1).metadata, std::to_string(group_->logs[kP1].back().lsn));
  WorkerStatus status = a.worker->GetStatus();
  EXPECT_EQ(status.applied, 300u);
  EXPECT_EQ(status.assigned_partitions, 2u);
  EXPECT_EQ(status.rebalances, 1u);
}

TEST_F(ProcessorWorkerTest, CommitsOnlyUpToTheFirstChangeNotApplied) {
  // p0: offset 1 (key "slow") is held while the later offsets (key "fast")
  // are applied; p1 has one change, revoked below to force a commit.
  group_->Append(ChangeMessage(kP0, 1, "fast"));
  group_->Append(ChangeMessage(kP0, 2, "slow"));
  for (Lsn lsn = 3; lsn <= 5; ++lsn) group_->Append(ChangeMessage(kP0, lsn, "fast"));
  group_->Append(ChangeMessage(kP1, 6, "other"));
  applications_.held.insert("c2");
  Member a = Join();
  a.source->Assign({kP0, kP1});
  ASSERT_TRUE(applications_.WaitFor([&] { return applications_.applied.size() == 5; }));
  ASSERT_TRUE(Eventually([&] { return a.worker->GetStatus().in_flight == 1; }));

  // Revoking p1 commits every partition's progress synchronously.
  a.source->Revoke({kP1});
  ASSERT_TRUE(RebalancesDone(a.source, 2));
  EXPECT_EQ(group_->Committed(kP1).offset, 1);
  const CommittedPosition p0 = group_->Committed(kP0);
  EXPECT_EQ(p0.offset, 1) << "offsets 2..4 are applied, but offset 1 is not";
  EXPECT_EQ(p0.metadata, "1");

  applications_.Release("c2");
  ASSERT_TRUE(CommittedReaches(kP0, 5));
  EXPECT_EQ(group_->Committed(kP0).metadata, "5");
  // Never past a change not applied, never backwards.
  std::lock_guard<std::mutex> lock(group_->mutex);
  int64_t last = 0;
  for (const CommittedPosition& c : group_->commits) {
    if (c.partition != kP0) continue;
    EXPECT_GE(c.offset, last);
    last = c.offset;
  }
}

TEST_F(ProcessorWorkerTest, ARebalanceCommitsWhatWasAppliedAndTheNextOwnerResumesThere) {
  for (Lsn lsn = 1; lsn <= 5; ++lsn) group_->Append(ChangeMessage(kP0, lsn, "k"));
  applications_.held.insert("c3");
  Member a = Join();
  Member b = Join();
  a.source->Assign({kP0});
  ASSERT_TRUE(applications_.WaitFor([&] { return applications_.waiting.count("c3") != 0; }));
  // All five taken (c3 held, c4 and c5 behind it on the same key) before
  // the revocation, or the hand-over point depends on the poll's timing.
  ASSERT_TRUE(Eventually([&] { return a.worker->GetStatus().in_flight == 3; }));

  // The revocation waits for the changes in flight before it commits.
  a.source->Revoke({kP0});
  ASSERT_TRUE(group_->WaitFor([&] { return a.source->rebalances_begun() == 2; }));
  applications_.Release("c3");
  ASSERT_TRUE(RebalancesDone(a.source, 2));
  EXPECT_EQ(group_->Committed(kP0).offset, 5);
  EXPECT_EQ(group_->Committed(kP0).metadata, "5");
  EXPECT_EQ(a.worker->GetStatus().assigned_partitions, 0u);

  for (Lsn lsn = 6; lsn <= 10; ++lsn) group_->Append(ChangeMessage(kP0, lsn, "k"));
  b.source->Assign({kP0});
  ASSERT_TRUE(CommittedReaches(kP0, 10));
  EXPECT_EQ(group_->Committed(kP0).metadata, "10");

  // Every change applied once, in order: nothing lost, nothing twice.
  std::vector<Lsn> order;
  {
    std::lock_guard<std::mutex> lock(applications_.mutex);
    for (const Change& c : applications_.applied) order.push_back(c.lsn);
  }
  EXPECT_EQ(order, (std::vector<Lsn>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  EXPECT_EQ(b.worker->GetStatus().applied, 5u);
  EXPECT_EQ(a.worker->GetStatus().applied, 5u);
}

TEST_F(ProcessorWorkerTest, StopCommitsWhatIsAppliedAndLeavesTheGroup) {
  for (Lsn lsn = 1; lsn <= 20; ++lsn)
    group_->Append(ChangeMessage(kP0, lsn, "k" + std::to_string(lsn % 3)));
  Member a = Join();
  a.source->Assign({kP0});
  ASSERT_TRUE(applications_.WaitFor([&] { return applications_.applied.size() == 20; }));
  a.worker->Stop();
  EXPECT_EQ(group_->Committed(kP0).offset, 20);
  EXPECT_EQ(group_->Committed(kP0).metadata, "20");
  std::lock_guard<std::mutex> lock(group_->mutex);
  EXPECT_TRUE(a.source->held().empty());
}

TEST_F(ProcessorWorkerTest, MessagesThatAreNoChangeArePassedOverAndTheirOffsetsCommitted) {
  group_->Append(ChangeMessage(kP0, 1, "k1"));
  ConsumedMessage marker;  // a resolved marker: no feedd-lsn header
  marker.at = kP0;
  marker.payload = R"({"resolved":1})";
  marker.resolved = 1;
  group_->Append(marker);
  ConsumedMessage tombstone = ChangeMessage(kP0, 2, "k1");
  tombstone.payload.reset();
  group_->Append(tombstone);
  // Undecodable, but its headers name a change of a source: applied from them.
  ConsumedMessage from_headers;
  from_headers.at = kP0;
  from_headers.payload = "not an envelope";
  from_headers.lsn = 3;
  from_headers.container = "posts";
  from_headers.id = "h3";
  from_headers.op = "delete";
  from_headers.partition_key = "k2";
  group_->Append(from_headers);
  // Undecodable, and no id: passed over.
  ConsumedMessage no_id = from_headers;
  no_id.lsn = 4;
  no_id.id.clear();
  group_->Append(no_id);
  // A change of a container the kind does not read.
  ConsumedMessage other = ChangeMessage(kP0, 5, "k1");
  other.payload =
      ToChangeRecord(Change{5, ChangeOp::kCreate, "users", "k1", "u5", 0, {}, {}}).envelope_json;
  other.container = "users";
  group_->Append(other);
  // An envelope of another LSN than its header: the headers win.
  ConsumedMessage mismatched = ChangeMessage(kP0, 99, "k3");
  mismatched.lsn = 6;
  mismatched.id = "m6";
  group_->Append(mismatched);
  group_->Append(ChangeMessage(kP0, 7, "k1"));

  Member a = Join();
  a.source->FailNextPoll(Status(ErrorCode::kUnavailable, "broker down"));
  a.source->Assign({kP0});
  ASSERT_TRUE(CommittedReaches(kP0, 8));
  EXPECT_EQ(group_->Committed(kP0).metadata, "7");

  std::vector<std::string> applied;
  {
    std::lock_guard<std::mutex> lock(applications_.mutex);
    for (const Change& c : applications_.applied) {
      applied.push_back(c.id + "@" + std::to_string(c.lsn) + "/" + c.partition_key);
    }
    ASSERT_EQ(applications_.applied.size(), 4u);
    for (const Change& c : applications_.applied) {
      EXPECT_EQ(c.op, c.id == "h3" ? ChangeOp::kDelete : ChangeOp::kCreate) << c.id;
    }
  }
  std::sort(applied.begin(), applied.end());
  EXPECT_EQ(applied, (std::vector<std::string>{"c1@1/k1", "c7@7/k1", "h3@3/k2", "m6@6/k3"}));
  WorkerStatus status = a.worker->GetStatus();
  EXPECT_EQ(status.resolved_lsn, 1u);
  EXPECT_EQ(status.applied, 4u);
  EXPECT_EQ(status.last_error, "kafka: broker down");
}

TEST_F(ProcessorWorkerTest, ACommitOfMarkersOnlyKeepsTheLsnOfThePartition) {
  // The group stands at offset 1, LSN 1; then only a resolved marker comes.
  group_->Append(ChangeMessage(kP0, 1, "k"));
  group_->committed[kP0] = {kP0, 1, "1"};
  ConsumedMessage marker;
  marker.at = kP0;
  marker.payload = R"({"resolved":1})";
  marker.resolved = 1;
  group_->Append(marker);
  Member a = Join();
  a.source->Assign({kP0});
  ASSERT_TRUE(CommittedReaches(kP0, 2));
  // The LSN a catch-up from the durable feed would start after.
  EXPECT_EQ(group_->Committed(kP0).metadata, "1");
}

TEST_F(ProcessorWorkerTest, ARefusedAssignmentIsCountedAndNotHeld) {
  Member a = Join();
  a.source->RefuseAssign({kP0});
  ASSERT_TRUE(RebalancesDone(a.source, 1));
  WorkerStatus status = a.worker->GetStatus();
  EXPECT_EQ(status.assignment_errors, 1u);
  EXPECT_EQ(status.rebalances, 1u);
  EXPECT_EQ(status.assigned_partitions, 0u);
  EXPECT_EQ(status.last_error, "assignment refused");
}

}  // namespace
}  // namespace feedd
