// SourcePump: every member gets turns when woken and when its time comes,
// Remove() waits out a turn in progress, and a removed member gets none.
#include "processors/source_pump.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

namespace feedd {
namespace {

using namespace std::chrono_literals;
using Clock = SourcePump::Clock;

constexpr auto kTimeout = 10s;

// Counts its turns; each returns `due()` (default: only when woken).
class CountingMember : public SourcePump::Member {
 public:
  Clock::time_point Turn() override {
    std::lock_guard<std::mutex> lock(mutex_);
    ++turns_;
    changed_.notify_all();
    return due_ ? due_(turns_) : Clock::time_point::max();
  }

  int turns() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return turns_;
  }

  // Waits until it has had `n` turns; false after kTimeout.
  bool WaitForTurns(int n) {
    return WaitUntil([&] { return turns_ >= n; });
  }

  // Waits until `holds()` (evaluated under the member's lock, as due_ is)
  // after a turn; false after kTimeout.
  bool WaitUntil(const std::function<bool()>& holds) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, kTimeout, holds);
  }

  // Called in each turn, under the member's lock.
  std::function<Clock::time_point(int turn)> due_;

 private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  int turns_ = 0;
};

TEST(SourcePumpTest, EveryMemberGetsATurnWhenAddedAndAfterEachWake) {
  SourcePump pump("test-pump");
  CountingMember a, b;
  pump.Add(&a);
  pump.Add(&b);
  ASSERT_TRUE(a.WaitForTurns(1));
  ASSERT_TRUE(b.WaitForTurns(1));
  const int a_before = a.turns(), b_before = b.turns();
  pump.Wake();
  EXPECT_TRUE(a.WaitForTurns(a_before + 1));
  EXPECT_TRUE(b.WaitForTurns(b_before + 1));
  pump.Remove(&a);
  pump.Remove(&b);
}

// No Wake() is lost, however many come at once (a committed group makes
// one per instance, from the commit thread): a turn always follows the
// last one, and sees what was made ready before it.
TEST(SourcePumpTest, AWakeIsNeverLostUnderConcurrentWakes) {
  std::atomic<int> produced{0};
  std::atomic<int> seen{-1};  // what the last turn saw
  CountingMember w;
  w.due_ = [&](int) {
    seen = produced.load();
    return Clock::time_point::max();
  };
  SourcePump pump("test-pump");
  pump.Add(&w);
  constexpr int kPerThread = 20000;
  auto produce = [&] {
    for (int i = 0; i < kPerThread; ++i) {
      ++produced;
      pump.Wake();
    }
  };
  std::thread a(produce), b(produce);
  a.join();
  b.join();
  EXPECT_TRUE(w.WaitUntil([&] { return seen == 2 * kPerThread; })) << "the last turn saw " << seen;
  pump.Remove(&w);
}

// A member that asks for its next turn at a time gets it then, unwoken.
TEST(SourcePumpTest, AMemberGetsItsTurnWhenItsTimeComes) {
  SourcePump pump("test-pump");
  CountingMember a;
  a.due_ = [](int turn) { return turn < 3 ? Clock::now() + 5ms : Clock::time_point::max(); };
  pump.Add(&a);
  EXPECT_TRUE(a.WaitForTurns(3));
  pump.Remove(&a);
}

// Remove() returns only once the member's turn in progress is over.
TEST(SourcePumpTest, RemoveWaitsOutATurnInProgress) {
  class BlockingMember : public SourcePump::Member {
   public:
    Clock::time_point Turn() override {
      std::unique_lock<std::mutex> lock(mutex);
      in_turn = true;
      changed.notify_all();
      changed.wait(lock, [&] { return released; });
      turn_over = true;
      return Clock::time_point::max();
    }
    std::mutex mutex;
    std::condition_variable changed;
    bool in_turn = false, released = false;
    std::atomic<bool> turn_over{false};
  };
  SourcePump pump("test-pump");
  BlockingMember m;
  pump.Add(&m);
  {
    std::unique_lock<std::mutex> lock(m.mutex);
    ASSERT_TRUE(m.changed.wait_for(lock, kTimeout, [&] { return m.in_turn; }));
  }
  std::future<void> removed = std::async(std::launch::async, [&] { pump.Remove(&m); });
  // Still in its turn: Remove() has not returned (a bounded look, not a
  // timing goal: a Remove() that did not wait returns at once).
  EXPECT_EQ(removed.wait_for(50ms), std::future_status::timeout);
  {
    std::lock_guard<std::mutex> lock(m.mutex);
    m.released = true;
  }
  m.changed.notify_all();
  removed.get();
  EXPECT_TRUE(m.turn_over.load());
}

// Turns go round in the order the members were added: once the member
// added after `a` has had a turn that began after a Wake(), `a` would have
// had one too, had it not been removed.
TEST(SourcePumpTest, ARemovedMemberGetsNoMoreTurns) {
  SourcePump pump("test-pump");
  CountingMember a, b;
  pump.Add(&a);
  pump.Add(&b);
  ASSERT_TRUE(a.WaitForTurns(1));
  ASSERT_TRUE(b.WaitForTurns(1));
  pump.Remove(&a);
  const int a_turns = a.turns(), b_turns = b.turns();
  pump.Wake();
  ASSERT_TRUE(b.WaitForTurns(b_turns + 1));
  EXPECT_EQ(a.turns(), a_turns);
  pump.Remove(&b);
}

}  // namespace
}  // namespace feedd
