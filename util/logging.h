// Logging to stderr in a journald-friendly format:
//   <N>LEVEL component: message
// where <N> is the syslog priority prefix that journald understands
// (SyslogLevelPrefix=yes is systemd's default), so `journalctl -p warning`
// filters by level. When stderr is a terminal, the prefix is replaced by an
// ISO-8601 timestamp.
//
// Thread-safety: Log() may be called from any thread; lines never interleave.
#pragma once

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

// FEEDD_LOG(kInfo, "storage") << "opened " << path;
class LogLine {
 public:
  LogLine(LogLevel level, std::string_view component) : level_(level), component_(component) {}
  ~LogLine() { Log(level_, component_, stream_.str()); }
  template <typename T>
  LogLine& operator<<(const T& value) {
    stream_ << value;
    return *this;
  }

 private:
  LogLevel level_;
  std::string_view component_;
  std::ostringstream stream_;
};

}  // namespace feedd

#define FEEDD_LOG(level, component)                   \
  if (!::feedd::LogEnabled(::feedd::LogLevel::level)) \
    ;                                                 \
  else                                                \
    ::feedd::LogLine(::feedd::LogLevel::level, component)
