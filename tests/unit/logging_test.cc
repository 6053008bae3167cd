#include "util/logging.h"

#include <gtest/gtest.h>

namespace feedd {
namespace {

using std::chrono::seconds;

TEST(LogRateLimiterTest, LetsOneLineThroughPerIntervalAndCountsTheRest) {
  LogRateLimiter limiter(seconds(10));
  const LogRateLimiter::TimePoint t0{};
  uint64_t suppressed = 99;
  ASSERT_TRUE(limiter.Allow(t0 + seconds(100), &suppressed));
  EXPECT_EQ(suppressed, 0u);
  for (int i = 0; i < 5; ++i) {
    uint64_t ignored = 0;
    EXPECT_FALSE(limiter.Allow(t0 + seconds(101 + i), &ignored));
  }
  EXPECT_FALSE(limiter.Allow(t0 + seconds(109), &suppressed));
  ASSERT_TRUE(limiter.Allow(t0 + seconds(110), &suppressed));
  EXPECT_EQ(suppressed, 6u);
  ASSERT_TRUE(limiter.Allow(t0 + seconds(200), &suppressed));
  EXPECT_EQ(suppressed, 0u);
}

TEST(LogRateLimiterTest, EachMacroCallSiteHasItsOwnLimiter) {
  testing::internal::CaptureStderr();
  for (int i = 0; i < 3; ++i) {
    FEEDD_LOG_EVERY_N_SEC(kWarning, "test", 3600) << "first site";
    FEEDD_LOG_EVERY_N_SEC(kWarning, "test", 3600) << "second site";
  }
  std::string out = testing::internal::GetCapturedStderr();
  auto count = [&](std::string_view needle) {
    size_t n = 0;
    for (size_t at = out.find(needle); at != std::string::npos; at = out.find(needle, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("first site"), 1u) << out;
  EXPECT_EQ(count("second site"), 1u) << out;
}

}  // namespace
}  // namespace feedd
