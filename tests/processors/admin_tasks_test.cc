// Tests of processors/admin_tasks.h: the bounded executor of rebuilds and
// verifies. Tasks block on latches the test opens, so nothing depends on
// timing.
#include "processors/admin_tasks.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <latch>
#include <memory>
#include <mutex>
#include <optional>

namespace feedd {
namespace {

TEST(AdminTasksTest, SameKeyIs409AndOverTheLimitIs429) {
  AdminTasks tasks(2);
  std::latch started(2), release(1);
  auto blocking = [&](std::stop_token) -> AdminTasks::Answer {
    started.count_down();
    release.wait();
    return {};
  };
  ASSERT_TRUE(tasks.Submit("feed", blocking).ok());
  EXPECT_EQ(tasks.Submit("feed", blocking).code(), ErrorCode::kOperationInProgress);
  ASSERT_TRUE(tasks.Submit("usernames", blocking).ok());
  EXPECT_EQ(tasks.Submit("user_posts", blocking).code(), ErrorCode::kTooManyRequests);
  started.wait();
  EXPECT_EQ(tasks.running(), 2u);
  EXPECT_EQ(tasks.refused_in_progress(), 1u);
  EXPECT_EQ(tasks.refused_too_many(), 1u);
  release.count_down();
  tasks.Shutdown();
  EXPECT_EQ(tasks.running(), 0u);
}

// A client answered by a verify asks again at once: its slot must already be
// free (the answer used to be sent before the slot was released: 409).
TEST(AdminTasksTest, TheAnswerRunsAfterTheSlotIsReleased) {
  AdminTasks tasks(1);
  std::atomic<int> answered{0};
  for (int i = 0; i < 200; ++i) {
    std::latch done(1);
    std::optional<Status> again;
    Status s = tasks.Submit("feed", [&](std::stop_token) -> AdminTasks::Answer {
      return [&] {
        ++answered;
        again = tasks.Submit("feed", [](std::stop_token) { return AdminTasks::Answer(); });
        done.count_down();
      };
    });
    ASSERT_TRUE(s.ok()) << i << ": " << s.ToString();
    done.wait();
    ASSERT_TRUE(again->ok()) << i << ": " << again->ToString();
    // The second one may still run: wait until its slot is free again.
    while (tasks.running() != 0) std::this_thread::yield();
  }
  tasks.Shutdown();
  EXPECT_EQ(answered.load(), 200);
}

TEST(AdminTasksTest, ShutdownStopsWaitingTasksAndRefusesNewOnes) {
  AdminTasks tasks(2);
  std::latch started(1);
  std::atomic<bool> saw_stop{false}, answered{false};
  ASSERT_TRUE(tasks
                  .Submit("feed",
                          [&](std::stop_token stop) -> AdminTasks::Answer {
                            started.count_down();
                            // A verify waiting for its processor: until asked to stop.
                            std::mutex m;
                            std::condition_variable_any cv;
                            std::unique_lock<std::mutex> lock(m);
                            cv.wait(lock, stop, [] { return false; });
                            saw_stop = true;
                            return [&] { answered = true; };
                          })
                  .ok());
  started.wait();
  tasks.Shutdown();  // returns only once the task has, and its answer has run
  EXPECT_TRUE(saw_stop.load());
  EXPECT_TRUE(answered.load());
  EXPECT_EQ(tasks.Submit("feed", [](std::stop_token) { return AdminTasks::Answer(); }).code(),
            ErrorCode::kUnavailable);
  tasks.Shutdown();  // idempotent
}

}  // namespace
}  // namespace feedd
