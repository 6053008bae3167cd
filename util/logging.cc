#include "util/logging.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>

namespace feedd {
namespace {

std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
std::mutex g_mutex;

// syslog priorities: 7 debug, 6 info, 4 warning, 3 err.
int SyslogPriority(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return 7;
    case LogLevel::kInfo:
      return 6;
    case LogLevel::kWarning:
      return 4;
    case LogLevel::kError:
      return 3;
  }
  return 6;
}

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "DEBUG";
    case LogLevel::kInfo:
      return "INFO";
    case LogLevel::kWarning:
      return "WARNING";
    case LogLevel::kError:
      return "ERROR";
  }
  return "INFO";
}

}  // namespace

bool LogRateLimiter::Allow(TimePoint now, uint64_t* suppressed) {
  std::lock_guard<std::mutex> lock(mu_);
  if (logged_ && now - last_ < interval_) {
    ++suppressed_;
    return false;
  }
  logged_ = true;
  last_ = now;
  *suppressed = suppressed_;
  suppressed_ = 0;
  return true;
}

void SetLogLevel(LogLevel level) { g_level = static_cast<int>(level); }

bool ParseLogLevel(std::string_view text, LogLevel* level) {
  if (text == "debug")
    *level = LogLevel::kDebug;
  else if (text == "info")
    *level = LogLevel::kInfo;
  else if (text == "warning")
    *level = LogLevel::kWarning;
  else if (text == "error")
    *level = LogLevel::kError;
  else
    return false;
  return true;
}

bool LogEnabled(LogLevel level) { return static_cast<int>(level) >= g_level.load(); }

std::string FormatLogLine(LogLevel level, std::string_view component, std::string_view message,
                          bool journal, std::chrono::system_clock::time_point now) {
  char prefix[64];
  if (journal) {
    std::snprintf(prefix, sizeof(prefix), "<%d>", SyslogPriority(level));
  } else {
    std::time_t secs = std::chrono::system_clock::to_time_t(now);
    int millis = static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() %
        1000);
    std::tm tm_utc;
    gmtime_r(&secs, &tm_utc);
    size_t n = std::strftime(prefix, sizeof(prefix), "%Y-%m-%dT%H:%M:%S", &tm_utc);
    std::snprintf(prefix + n, sizeof(prefix) - n, ".%03dZ ", millis);
  }
  std::string line(prefix);
  line += LevelName(level);
  line += ' ';
  line += component;
  line += ": ";
  line += message;
  return line;
}

bool IsJournalStream(const char* journal_stream, int fd) {
  unsigned long long device = 0, inode = 0;
  char rest = 0;
  if (journal_stream == nullptr ||
      std::sscanf(journal_stream, "%llu:%llu%c", &device, &inode, &rest) != 2) {
    return false;
  }
  struct stat st;
  return fstat(fd, &st) == 0 && static_cast<unsigned long long>(st.st_dev) == device &&
         static_cast<unsigned long long>(st.st_ino) == inode;
}

void Log(LogLevel level, std::string_view component, std::string_view message) {
  static const bool journal = IsJournalStream(std::getenv("JOURNAL_STREAM"), STDERR_FILENO);
  std::string line =
      FormatLogLine(level, component, message, journal, std::chrono::system_clock::now());
  line += '\n';
  std::lock_guard<std::mutex> lock(g_mutex);
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace feedd
