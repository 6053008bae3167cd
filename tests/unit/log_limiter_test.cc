// Unit tests of LogLimiter (util/log_limiter.h).
#include "util/log_limiter.h"

#include <gtest/gtest.h>

#include <chrono>

namespace feedd {
namespace {

TEST(LogLimiterTest, AllowsOneLinePerIntervalAndCountsTheOthers) {
  LogLimiter limiter(std::chrono::hours(1));
  uint64_t dropped = 99;
  ASSERT_TRUE(limiter.Allow(&dropped));
  EXPECT_EQ(dropped, 0u);
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(limiter.Allow(&dropped));
  EXPECT_EQ(LogLimiter::Dropped(0), "");
  EXPECT_EQ(LogLimiter::Dropped(5), " (5 similar lines left out)");
}

TEST(LogLimiterTest, TheLineAfterTheIntervalSaysHowManyWereLeftOut) {
  LogLimiter limiter(std::chrono::milliseconds(10));
  uint64_t dropped = 99;
  ASSERT_TRUE(limiter.Allow(&dropped));
  uint64_t refused = 0;
  while (!limiter.Allow(&dropped)) ++refused;  // until the interval has passed
  EXPECT_EQ(dropped, refused);
}

}  // namespace
}  // namespace feedd
