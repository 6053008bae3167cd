#include "util/logging.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

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

// Outside the journal every line carries its UTC time; in the journal
// (which stamps lines itself) the syslog priority journald reads.
TEST(LogFormatTest, TimestampedUnlessTheJournalIsTheDestination) {
  const auto at = std::chrono::system_clock::time_point(std::chrono::milliseconds(1795552800123));
  EXPECT_EQ(FormatLogLine(LogLevel::kWarning, "storage", "disk low", false, at),
            "2026-11-24T20:40:00.123Z WARNING storage: disk low");
  EXPECT_EQ(FormatLogLine(LogLevel::kWarning, "storage", "disk low", true, at),
            "<4>WARNING storage: disk low");
  EXPECT_EQ(FormatLogLine(LogLevel::kError, "main", "x", true, at), "<3>ERROR main: x");
}

// $JOURNAL_STREAM names the journal's stream by device and inode: only a
// descriptor on that very file is the journal.
TEST(LogFormatTest, TheJournalIsTheStreamJournalStreamNames) {
  char path[] = "/tmp/feedd-log-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  struct stat st;
  ASSERT_EQ(fstat(fd, &st), 0);
  const std::string self = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
  EXPECT_TRUE(IsJournalStream(self.c_str(), fd));
  const std::string other = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino + 1);
  EXPECT_FALSE(IsJournalStream(other.c_str(), fd));
  EXPECT_FALSE(IsJournalStream(nullptr, fd));
  EXPECT_FALSE(IsJournalStream("", fd));
  EXPECT_FALSE(IsJournalStream((self + "x").c_str(), fd));
  EXPECT_FALSE(IsJournalStream("journal", fd));
  close(fd);
  unlink(path);
}

}  // namespace
}  // namespace feedd
