// Logging to stderr, one line per message:
//   2026-11-24T20:40:00.123Z LEVEL component: message
// with a UTC timestamp, except when stderr is the journal (systemd names the
// stream in $JOURNAL_STREAM): journald stamps lines itself, so there the
// line starts with the syslog priority prefix it understands instead,
//   <N>LEVEL component: message
// (SyslogLevelPrefix=yes is systemd's default), and `journalctl -p warning`
// filters by level.
//
// Repeated lines (one per failed accept, one per failed request) go through
// FEEDD_LOG_EVERY_N_SEC, which writes at most one line per call site and
// interval and tells how many it suppressed, so a persistent failure cannot
// flood the journal.
//
// Thread-safety: Log() may be called from any thread; lines never interleave.
// A LogRateLimiter may be shared by any threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <sstream>
#include <string>
#include <string_view>

namespace feedd {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

void SetLogLevel(LogLevel level);
// Parses "debug", "info", "warning" or "error".
bool ParseLogLevel(std::string_view text, LogLevel* level);
bool LogEnabled(LogLevel level);
void Log(LogLevel level, std::string_view component, std::string_view message);

// One log line, without its newline: journald's form when `journal`, else
// the timestamped one (at `now`).
std::string FormatLogLine(LogLevel level, std::string_view component, std::string_view message,
                          bool journal, std::chrono::system_clock::time_point now);
// Whether `fd` is the stream systemd connected to the journal:
// `journal_stream` ($JOURNAL_STREAM, may be null) is "DEVICE:INODE" of it.
bool IsJournalStream(const char* journal_stream, int fd);

// Lets one line through per `interval` and counts the others.
class LogRateLimiter {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  explicit LogRateLimiter(std::chrono::steady_clock::duration interval) : interval_(interval) {}

  // True when a line may be written at `now` (the first call, or `interval`
  // after the last line let through); then *suppressed is the number of
  // lines refused since that last line.
  bool Allow(TimePoint now, uint64_t* suppressed);
  bool Allow(uint64_t* suppressed) { return Allow(std::chrono::steady_clock::now(), suppressed); }

 private:
  const std::chrono::steady_clock::duration interval_;
  std::mutex mu_;
  bool logged_ = false;      // GUARDED_BY(mu_)
  TimePoint last_;           // GUARDED_BY(mu_)
  uint64_t suppressed_ = 0;  // GUARDED_BY(mu_)
};

// FEEDD_LOG(kInfo, "storage") << "opened " << path;
class LogLine {
 public:
  // `suppressed` > 0 appends " (N similar lines suppressed)".
  LogLine(LogLevel level, std::string_view component, uint64_t suppressed = 0)
      : level_(level), component_(component), suppressed_(suppressed) {}
  ~LogLine() {
    if (suppressed_ > 0) stream_ << " (" << suppressed_ << " similar lines suppressed)";
    Log(level_, component_, stream_.str());
  }
  template <typename T>
  LogLine& operator<<(const T& value) {
    stream_ << value;
    return *this;
  }

 private:
  LogLevel level_;
  std::string_view component_;
  uint64_t suppressed_;
  std::ostringstream stream_;
};

}  // namespace feedd

#define FEEDD_LOG(level, component)                   \
  if (!::feedd::LogEnabled(::feedd::LogLevel::level)) \
    ;                                                 \
  else                                                \
    ::feedd::LogLine(::feedd::LogLevel::level, component)

// FEEDD_LOG_EVERY_N_SEC(kWarning, "http", 10) << "accept failed: " << error;
// At most one line per call site every `interval_s` seconds (a constant);
// the next line let through tells how many were suppressed. Each expansion
// has its own LogRateLimiter (a static of a lambda unique to it).
// clang-format off
#define FEEDD_LOG_EVERY_N_SEC(level, component, interval_s)                       \
  if (uint64_t feedd_log_suppressed = 0;                                          \
      !::feedd::LogEnabled(::feedd::LogLevel::level) ||                           \
      !FEEDD_LOG_LIMITER_(interval_s).Allow(&feedd_log_suppressed))               \
    ;                                                                             \
  else                                                                            \
    ::feedd::LogLine(::feedd::LogLevel::level, component, feedd_log_suppressed)

#define FEEDD_LOG_LIMITER_(interval_s)                                            \
  ([]() -> ::feedd::LogRateLimiter& {                                             \
    static ::feedd::LogRateLimiter limiter{std::chrono::seconds(interval_s)};     \
    return limiter;                                                               \
  }())
// clang-format on
