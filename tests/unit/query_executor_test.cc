// Unit tests of QueryExecutor (daemon/query_executor.h): tasks run off the
// caller's thread, the queue is bounded, Stop() cancels what is queued.
#include "daemon/query_executor.h"

#include <gtest/gtest.h>

#include <future>
#include <thread>
#include <vector>

namespace feedd {
namespace {

TEST(QueryExecutorTest, RunsTasksOnItsOwnThreads) {
  QueryExecutor executor(2, 8);
  std::promise<std::thread::id> ran;
  ASSERT_TRUE(executor.Submit([&](bool cancelled) {
    EXPECT_FALSE(cancelled);
    ran.set_value(std::this_thread::get_id());
  }));
  EXPECT_NE(ran.get_future().get(), std::this_thread::get_id());
}

TEST(QueryExecutorTest, RefusesBeyondMaxQueuedAndCancelsTheQueuedOnStop) {
  QueryExecutor executor(1, 2);
  std::promise<void> started, release;
  std::shared_future<void> released = release.get_future().share();
  ASSERT_TRUE(executor.Submit([&](bool) {
    started.set_value();
    released.wait();  // holds the only thread
  }));
  started.get_future().wait();

  std::vector<bool> cancelled;
  std::mutex mu;
  std::promise<void> both_ran;
  auto record = [&](bool c) {
    std::lock_guard<std::mutex> lock(mu);
    cancelled.push_back(c);
    if (cancelled.size() == 2) both_ran.set_value();
  };
  EXPECT_TRUE(executor.Submit(record));
  EXPECT_TRUE(executor.Submit(record));
  EXPECT_FALSE(executor.Submit(record)) << "two are waiting: the third is refused";

  // The only thread is busy: the queued tasks can only run through Stop(),
  // which cancels them before it waits for the running one.
  std::thread stopper([&] { executor.Stop(); });
  both_ran.get_future().wait();
  EXPECT_FALSE(executor.Submit(record)) << "stopping";
  release.set_value();
  stopper.join();
  EXPECT_EQ(cancelled, (std::vector<bool>{true, true}));
}

}  // namespace
}  // namespace feedd
