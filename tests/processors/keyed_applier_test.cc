// Unit tests of KeyedApplier (processors/keyed_applier.h). Its batches: the
// changes queued at the front of a thread's queue, of any keys, go to the
// ApplyBatchFn in order, bounded by the kind's MaxBatch(); changes of a
// parked key join it instead; a failed batch is applied again one change at
// a time, so retries and parking stay per change; without an ApplyBatchFn or
// with MaxBatch() == 1 every change goes through the ApplyFn. Every parked
// change is reported through Options::on_parked, a restored one is not. Its
// routing: a run of changes dispatched to an idle applier is one batch on
// one thread, whatever their keys; a key stays on its thread while it has
// changes there, and other keys go to an idle thread meanwhile.
#include "processors/keyed_applier.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace feedd {
namespace {

using namespace std::chrono_literals;

class OneKeyKind : public ProcessorKind {
 public:
  explicit OneKeyKind(size_t max_batch) : max_batch_(max_batch) {}
  std::vector<std::string> SourceContainers() const override { return {"posts"}; }
  std::vector<std::string> TargetContainers() const override { return {"feed"}; }
  std::string OrderingKey(const Change& c) const override { return c.partition_key; }
  size_t MaxBatch() const override { return max_batch_; }
  Status Apply(const Change&, ViewContext&) const override { return Status::Ok(); }
  Status Rebuild(ViewContext&) const override { return Status::Ok(); }
  Status Verify(ViewContext&, std::vector<std::string>*) const override { return Status::Ok(); }

 private:
  const size_t max_batch_;
};

Change MakeChange(Lsn lsn, const std::string& key) {
  Change c;
  c.lsn = lsn;
  c.container = "posts";
  c.partition_key = key;
  c.id = "i" + std::to_string(lsn);
  return c;
}

// Records what the applier calls; the first single apply can be held until
// Release(), so that later changes queue up behind it (those of other
// threads are not held).
struct Recorder {
  std::mutex mutex;
  std::condition_variable cv;
  bool hold_first = true;
  bool first_entered = false;
  std::set<Lsn> failing;                // single applies of these LSNs fail
  bool fail_batches = false;            // every batch fails
  std::vector<std::vector<Lsn>> calls;  // each call: the LSNs it got
  std::vector<Lsn> done;
  std::vector<std::pair<Lsn, std::string>> parked;  // on_parked: LSN, error

  Status Single(const Change& c) {
    std::unique_lock<std::mutex> lock(mutex);
    if (hold_first && !first_entered) {
      first_entered = true;
      cv.notify_all();
      cv.wait_for(lock, 30s, [&] { return !hold_first; });
    }
    calls.push_back({c.lsn});
    if (failing.count(c.lsn) != 0) return Status(ErrorCode::kStorageError, "injected");
    return Status::Ok();
  }
  Status Batch(const std::vector<Change>& changes) {
    std::lock_guard<std::mutex> lock(mutex);
    std::vector<Lsn> lsns;
    for (const auto& c : changes) lsns.push_back(c.lsn);
    calls.push_back(lsns);
    if (fail_batches) return Status(ErrorCode::kStorageError, "injected batch failure");
    return Status::Ok();
  }
  void Parked(const Change& c, const std::string& error) {
    std::lock_guard<std::mutex> lock(mutex);
    parked.emplace_back(c.lsn, error);
  }
  void Done(const Change& c) {
    std::lock_guard<std::mutex> lock(mutex);
    done.push_back(c.lsn);
    cv.notify_all();
  }
  void WaitFirstEntered() {
    std::unique_lock<std::mutex> lock(mutex);
    ASSERT_TRUE(cv.wait_for(lock, 30s, [&] { return first_entered; }));
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mutex);
    hold_first = false;
    cv.notify_all();
  }
  bool WaitDone(size_t n) {
    std::unique_lock<std::mutex> lock(mutex);
    return cv.wait_for(lock, 30s, [&] { return done.size() >= n; });
  }
};

std::unique_ptr<KeyedApplier> MakeApplier(const ProcessorKind* kind, Recorder* r, bool batches,
                                          int max_attempts = 2, size_t threads = 1) {
  KeyedApplier::Options options{
      "test", threads, max_attempts, 1ms, {}, {}, [r](const Change& c, const std::string& error) {
        r->Parked(c, error);
      }};
  KeyedApplier::ApplyBatchFn batch;
  if (batches) batch = [r](const std::vector<Change>& c) { return r->Batch(c); };
  return std::make_unique<KeyedApplier>(
      kind, options, [r](const Change& c) { return r->Single(c); },
      [r](const Change& c) { r->Done(c); }, [](const std::string&) {}, batch);
}

template <typename Pred>
bool Eventually(Pred pred) {
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return pred();
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

std::vector<Lsn> Range(Lsn from, Lsn to) {
  std::vector<Lsn> out;
  for (Lsn l = from; l <= to; ++l) out.push_back(l);
  return out;
}

TEST(KeyedApplierBatchTest, QueuedChangesOfOneKeyAreAppliedInRunsOfAtMostMaxBatch) {
  OneKeyKind kind(4);
  Recorder r;
  auto applier = MakeApplier(&kind, &r, true);
  applier->Start();
  applier->Dispatch(MakeChange(1, "k"));
  r.WaitFirstEntered();
  for (Lsn l = 2; l <= 11; ++l) applier->Dispatch(MakeChange(l, "k"));
  r.Release();
  ASSERT_TRUE(r.WaitDone(11));
  applier->Stop();
  std::lock_guard<std::mutex> lock(r.mutex);
  EXPECT_EQ(r.calls, (std::vector<std::vector<Lsn>>{{1}, {2, 3, 4, 5}, {6, 7, 8, 9}, {10, 11}}));
  EXPECT_EQ(r.done, Range(1, 11));
  EXPECT_EQ(applier->batches(), 3u);
  EXPECT_EQ(applier->parked(), 0u);
}

TEST(KeyedApplierBatchTest, ABatchTakesTheQueuedChangesOfEveryKeyInOrder) {
  OneKeyKind kind(8);
  Recorder r;
  auto applier = MakeApplier(&kind, &r, true);
  applier->Start();
  applier->Dispatch(MakeChange(1, "a"));
  r.WaitFirstEntered();
  for (Lsn l : {2, 3}) applier->Dispatch(MakeChange(l, "a"));
  applier->Dispatch(MakeChange(4, "b"));  // one thread: same queue
  for (Lsn l : {5, 6}) applier->Dispatch(MakeChange(l, "a"));
  r.Release();
  ASSERT_TRUE(r.WaitDone(6));
  applier->Stop();
  std::lock_guard<std::mutex> lock(r.mutex);
  EXPECT_EQ(r.calls, (std::vector<std::vector<Lsn>>{{1}, {2, 3, 4, 5, 6}}));
  EXPECT_EQ(r.done, Range(1, 6));
}

// Dispatching several changes at once queues them as one by one would.
TEST(KeyedApplierBatchTest, ChangesDispatchedTogetherQueueAsIfOneByOne) {
  OneKeyKind kind(8);
  Recorder r;
  auto applier = MakeApplier(&kind, &r, true);
  applier->Start();
  applier->Dispatch(MakeChange(1, "a"));
  r.WaitFirstEntered();
  applier->Dispatch(
      std::vector<Change>{MakeChange(2, "a"), MakeChange(3, "b"), MakeChange(4, "a")});
  r.Release();
  ASSERT_TRUE(r.WaitDone(4));
  applier->Stop();
  std::lock_guard<std::mutex> lock(r.mutex);
  EXPECT_EQ(r.calls, (std::vector<std::vector<Lsn>>{{1}, {2, 3, 4}}));
  EXPECT_EQ(r.done, Range(1, 4));
}

// Across threads, each key's changes stay in order.
TEST(KeyedApplierBatchTest, ChangesDispatchedTogetherKeepTheOrderOfEachKeyAcrossThreads) {
  OneKeyKind kind(4);
  Recorder r;
  r.hold_first = false;
  auto applier = MakeApplier(&kind, &r, true, 2, /*threads=*/3);
  applier->Start();
  std::vector<Change> changes;
  std::map<Lsn, std::string> key_of;
  for (Lsn l = 1; l <= 200; ++l) {
    std::string key = "k" + std::to_string(l % 7);
    key_of[l] = key;
    changes.push_back(MakeChange(l, key));
  }
  applier->Dispatch(std::move(changes));
  ASSERT_TRUE(r.WaitDone(200));
  applier->Stop();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::map<std::string, std::vector<Lsn>> by_key;
  for (Lsn l : r.done) by_key[key_of[l]].push_back(l);
  ASSERT_EQ(by_key.size(), 7u);
  std::map<std::string, std::vector<Lsn>> dispatched;
  for (const auto& [lsn, key] : key_of) dispatched[key].push_back(lsn);
  EXPECT_EQ(by_key, dispatched);  // each key's changes, all of them, in LSN order
}

// An idle applier with several threads takes a run of changes of different
// keys as one batch: one wake-up, one commit.
TEST(KeyedApplierRouteTest, ARunDispatchedToAnIdleApplierIsOneBatchWhateverItsKeys) {
  OneKeyKind kind(8);
  Recorder r;
  r.hold_first = false;
  auto applier = MakeApplier(&kind, &r, true, 2, /*threads=*/4);
  applier->Start();
  std::vector<Change> changes;
  for (Lsn l = 1; l <= 6; ++l) changes.push_back(MakeChange(l, "k" + std::to_string(l)));
  applier->Dispatch(std::move(changes));
  ASSERT_TRUE(r.WaitDone(6));
  applier->Stop();
  std::lock_guard<std::mutex> lock(r.mutex);
  EXPECT_EQ(r.calls, (std::vector<std::vector<Lsn>>{Range(1, 6)}));
  EXPECT_EQ(applier->batches(), 1u);
}

// While a key's change is being applied, its later changes wait for it on
// its thread, and changes of other keys go to an idle thread and are
// applied meanwhile. A run longer than MaxBatch() is spread too.
TEST(KeyedApplierRouteTest, ABusyKeyKeepsItsThreadAndOtherKeysGoToAnIdleOne) {
  OneKeyKind kind(2);
  Recorder r;  // holds the first single apply: change 1
  auto applier = MakeApplier(&kind, &r, true, 2, /*threads=*/3);
  applier->Start();
  applier->Dispatch(MakeChange(1, "a"));
  r.WaitFirstEntered();
  applier->Dispatch(std::vector<Change>{MakeChange(2, "a"), MakeChange(3, "b"), MakeChange(4, "c"),
                                        MakeChange(5, "d"), MakeChange(6, "b")});
  // 3, 4 as a batch on an idle thread, 6 after them there (b's route); 5
  // on the third thread. All while 1 is held.
  ASSERT_TRUE(r.WaitDone(4));
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    EXPECT_EQ(std::set<Lsn>(r.done.begin(), r.done.end()), (std::set<Lsn>{3, 4, 5, 6}));
    EXPECT_LT(std::find(r.done.begin(), r.done.end(), 3),
              std::find(r.done.begin(), r.done.end(), 6));
    EXPECT_NE(std::find(r.calls.begin(), r.calls.end(), std::vector<Lsn>{3, 4}), r.calls.end());
  }
  r.Release();
  ASSERT_TRUE(r.WaitDone(6));
  applier->Stop();
  std::lock_guard<std::mutex> lock(r.mutex);
  EXPECT_EQ(std::vector<Lsn>(r.done.begin() + 4, r.done.end()), (std::vector<Lsn>{1, 2}));
  std::vector<Lsn> a_calls;
  for (const auto& call : r.calls) {
    for (Lsn l : call) {
      if (l == 1 || l == 2) a_calls.push_back(l);
    }
  }
  EXPECT_EQ(a_calls, (std::vector<Lsn>{1, 2}));
}

TEST(KeyedApplierBatchTest, ChangesOfAParkedKeyJoinItAndTheOthersOfTheBatchApply) {
  OneKeyKind kind(8);
  Recorder r;
  r.failing = {1};
  auto applier = MakeApplier(&kind, &r, true, /*max_attempts=*/1);
  applier->Start();
  applier->Dispatch(MakeChange(1, "b"));  // fails: parks key b
  r.WaitFirstEntered();
  for (auto [lsn, key] :
       std::vector<std::pair<Lsn, std::string>>{{2, "a"}, {3, "b"}, {4, "a"}, {5, "c"}, {6, "b"}}) {
    applier->Dispatch(MakeChange(lsn, key));
  }
  r.Release();
  ASSERT_TRUE(r.WaitDone(3));  // 2, 4, 5
  ASSERT_TRUE(Eventually([&] { return applier->parked() == 3; }));
  applier->Stop();
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    EXPECT_EQ(r.calls, (std::vector<std::vector<Lsn>>{{1}, {2, 4, 5}}));
    EXPECT_EQ(r.done, (std::vector<Lsn>{2, 4, 5}));
  }
  auto parked = applier->Parked();
  ASSERT_EQ(parked.size(), 3u);
  EXPECT_EQ(parked[0].lsn, 1u);
  EXPECT_EQ(parked[1].lsn, 3u);
  EXPECT_EQ(parked[2].lsn, 6u);
  EXPECT_EQ(applier->batches(), 1u);
}

TEST(KeyedApplierBatchTest, AFailedBatchIsAppliedOneByOneAndOnlyTheBadChangeAndItsKeyPark) {
  OneKeyKind kind(8);
  Recorder r;
  r.fail_batches = true;
  r.failing = {4};
  auto applier = MakeApplier(&kind, &r, true, /*max_attempts=*/2);
  applier->Start();
  applier->Dispatch(MakeChange(1, "k"));
  r.WaitFirstEntered();
  for (Lsn l = 2; l <= 6; ++l) applier->Dispatch(MakeChange(l, "k"));
  r.Release();
  ASSERT_TRUE(r.WaitDone(3));                                       // 1, 2, 3
  ASSERT_TRUE(Eventually([&] { return applier->parked() == 3; }));  // 4 and, behind it, 5, 6
  applier->Stop();
  // Not under r.mutex: the applier calls Recorder::Parked() holding its own
  // lock, so Parked() under r.mutex would take the two in the other order.
  auto parked = applier->Parked();
  std::lock_guard<std::mutex> lock(r.mutex);
  EXPECT_EQ(r.done, Range(1, 3));
  EXPECT_EQ(r.calls, (std::vector<std::vector<Lsn>>{{1}, {2, 3, 4, 5, 6}, {2}, {3}, {4}, {4}}));
  ASSERT_EQ(parked.size(), 3u);
  EXPECT_EQ(parked[0].lsn, 4u);
  EXPECT_NE(parked[0].error.find("injected"), std::string::npos);
  EXPECT_EQ(parked[1].lsn, 5u);
  EXPECT_EQ(parked[2].lsn, 6u);
  EXPECT_EQ(applier->batches(), 0u);
}

// A failure that retrying cannot fix (Options::permanent, e.g. a collision)
// is parked after its first attempt; others still get max_attempts.
TEST(KeyedApplierBatchTest, APermanentFailureIsParkedAfterOneAttempt) {
  OneKeyKind kind(1);
  Recorder r;
  r.hold_first = false;
  r.failing = {1, 2};
  KeyedApplier::Options options;
  options.name = "test";
  options.parallelism = 1;
  options.max_attempts = 3;
  options.retry_backoff = 1ms;
  options.permanent = [](const Status& s) {
    return s.code() == ErrorCode::kStorageError && s.message() == "injected";
  };
  KeyedApplier applier(
      &kind, options,
      [&r](const Change& c) {
        Status s = r.Single(c);
        // Change 2 fails with a retriable error.
        if (!s.ok() && c.lsn == 2) return Status(ErrorCode::kStorageError, "retriable");
        return s;
      },
      [&r](const Change& c) { r.Done(c); }, [](const std::string&) {});
  applier.Start();
  applier.Dispatch(MakeChange(1, "a"));
  applier.Dispatch(MakeChange(2, "b"));
  ASSERT_TRUE(Eventually([&] { return applier.parked() == 2; }));
  applier.Stop();
  std::lock_guard<std::mutex> lock(r.mutex);
  EXPECT_EQ(std::count(r.calls.begin(), r.calls.end(), std::vector<Lsn>{1}), 1);
  EXPECT_EQ(std::count(r.calls.begin(), r.calls.end(), std::vector<Lsn>{2}), 3);
}

TEST(KeyedApplierBatchTest, WithoutABatchFunctionOrWithMaxBatchOneEveryChangeIsSingle) {
  for (bool with_batch_fn : {false, true}) {
    SCOPED_TRACE(with_batch_fn ? "MaxBatch() 1" : "no ApplyBatchFn");
    OneKeyKind kind(with_batch_fn ? 1 : 8);
    Recorder r;
    auto applier = MakeApplier(&kind, &r, with_batch_fn);
    applier->Start();
    applier->Dispatch(MakeChange(1, "k"));
    r.WaitFirstEntered();
    for (Lsn l = 2; l <= 5; ++l) applier->Dispatch(MakeChange(l, "k"));
    r.Release();
    ASSERT_TRUE(r.WaitDone(5));
    applier->Stop();
    std::lock_guard<std::mutex> lock(r.mutex);
    EXPECT_EQ(r.calls, (std::vector<std::vector<Lsn>>{{1}, {2}, {3}, {4}, {5}}));
  }
}

TEST(KeyedApplierParkTest, EveryParkedChangeIsReportedARestoredOneIsNotButHoldsItsKey) {
  OneKeyKind kind(1);
  Recorder r;
  r.hold_first = false;
  r.failing = {2};
  auto applier = MakeApplier(&kind, &r, false, /*max_attempts=*/2);
  // Parked before a restart: key "old" stays parked, without a report.
  applier->Restore(MakeChange(1, "old"), "kept error");
  applier->Start();
  applier->Dispatch(MakeChange(2, "k"));    // fails twice: parked
  applier->Dispatch(MakeChange(3, "k"));    // behind it
  applier->Dispatch(MakeChange(4, "old"));  // behind the restored one
  applier->Dispatch(MakeChange(5, "x"));    // applied
  applier->Park(MakeChange(6, "y"), "undecodable");
  ASSERT_TRUE(r.WaitDone(1));
  ASSERT_TRUE(Eventually([&] { return applier->parked() == 5; }));
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    EXPECT_EQ(r.done, (std::vector<Lsn>{5}));
    ASSERT_EQ(r.parked.size(), 4u);
    std::set<Lsn> reported;
    for (const auto& [lsn, error] : r.parked) {
      reported.insert(lsn);
      if (lsn == 2) {
        EXPECT_NE(error.find("injected"), std::string::npos) << error;
      } else if (lsn == 6) {
        EXPECT_EQ(error, "undecodable");
      } else {
        EXPECT_EQ(error, "") << lsn;
      }
    }
    EXPECT_EQ(reported, (std::set<Lsn>{2, 3, 4, 6}));
  }
  auto parked = applier->Parked();  // by key: k, old, y
  ASSERT_EQ(parked.size(), 5u);
  EXPECT_EQ(parked[2].key, "old");
  EXPECT_EQ(parked[2].lsn, 1u);
  EXPECT_EQ(parked[2].error, "kept error");
  EXPECT_EQ(parked[3].lsn, 4u);
  EXPECT_EQ(applier->parked_total(), 4u) << "a restored change was counted as newly parked";

  // A replay applies the restored change and those behind it, in order.
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    r.failing.clear();
  }
  EXPECT_EQ(applier->ReplayParked(), 5u);
  ASSERT_TRUE(r.WaitDone(6));
  applier->Stop();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<Lsn> old_key;
  for (Lsn lsn : r.done) {
    if (lsn == 1 || lsn == 4) old_key.push_back(lsn);
  }
  EXPECT_EQ(old_key, (std::vector<Lsn>{1, 4}));
  EXPECT_EQ(r.parked.size(), 4u);
}

}  // namespace
}  // namespace feedd
