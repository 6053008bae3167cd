#include "daemon/feedctl_import.h"

#include <signal.h>

#include <boost/json.hpp>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>

#include "util/http_client.h"

namespace feedd {
namespace {

constexpr auto kProgressInterval = std::chrono::seconds(1);

std::string Mib(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return text;
}

std::string Target(const ImportCommand& c) {
  std::string target = "/v1/containers/" + PercentEncodeSegment(c.container) + "/import";
  target += "?job=true";
  if (!c.if_exists.empty()) target += "&ifExists=" + c.if_exists;
  if (!c.on_error.empty()) target += "&onError=" + c.on_error;
  return target;
}

// The body source of the upload: reads `in`, counts what it gave and shows
// progress on stderr at most once per kProgressInterval.
class UploadSource {
 public:
  UploadSource(const ImportCommand& command, std::istream* in, uint64_t total)
      : command_(command), in_(in), total_(total), last_progress_(started_) {}

  Result<size_t> Read(char* buffer, size_t capacity) {
    if (!*in_) return size_t{0};
    in_->read(buffer, static_cast<std::streamsize>(capacity));
    if (in_->bad()) {
      return Status(ErrorCode::kInvalidRequest,
                    "cannot read " + Name() + ": " + std::strerror(errno));
    }
    const size_t n = static_cast<size_t>(in_->gcount());
    sent_ += n;
    for (size_t i = 0; i < n; ++i) lines_ += buffer[i] == '\n';
    ShowProgress();
    return n;
  }

 private:
  std::string Name() const {
    return command_.file.empty() || command_.file == "-" ? "standard input" : command_.file;
  }

  void ShowProgress() {
    const auto now = std::chrono::steady_clock::now();
    if (!command_.progress || now - last_progress_ < kProgressInterval) return;
    last_progress_ = now;
    const double seconds = std::chrono::duration<double>(now - started_).count();
    std::cerr << "feedctl: import " << command_.container << ": sent " << Mib(sent_);
    if (total_ > 0) std::cerr << " of " << Mib(total_) << " (" << sent_ * 100 / total_ << "%)";
    std::cerr << ", " << lines_ << " lines, " << Mib(static_cast<uint64_t>(sent_ / seconds))
              << "/s\n";
  }

  const ImportCommand& command_;
  std::istream* const in_;
  const uint64_t total_;  // 0: unknown (standard input)
  uint64_t sent_ = 0, lines_ = 0;
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_progress_;
};

}  // namespace

ImportUpload UploadImport(HttpClient& client, const ImportCommand& c) {
  ImportUpload out;
  std::istream* in = &std::cin;
  std::ifstream file;
  uint64_t total = 0;  // 0: unknown (standard input)
  if (!c.file.empty() && c.file != "-") {
    file.open(c.file, std::ios::binary | std::ios::ate);
    if (!file) {
      std::cerr << "feedctl: cannot open " << c.file << ": " << std::strerror(errno) << "\n";
      out.exit_code = 2;
      return out;
    }
    total = static_cast<uint64_t>(file.tellg());
    file.seekg(0);
    in = &file;
  }
  signal(SIGPIPE, SIG_IGN);  // a daemon that stops reading answers; we read it

  UploadSource source(c, in, total);
  Result<HttpReply> reply = client.SendStream(
      "POST", Target(c), "application/x-ndjson",
      [&source](char* buffer, size_t capacity) { return source.Read(buffer, capacity); });
  if (!reply.ok()) {
    if (reply.status().code() == ErrorCode::kUnavailable) {
      std::cerr << "feedctl: cannot reach feedd: " << reply.status().message() << "\n";
      out.exit_code = 3;
    } else {
      std::cerr << "feedctl: import " << c.container << ": " << reply.status().message() << "\n";
      out.exit_code = 2;
    }
    return out;
  }
  out.reply = std::move(*reply);
  return out;
}

int SummarizeImport(const ImportCommand& c, const boost::json::object& o) {
  std::cout << boost::json::serialize(o) << "\n";
  auto count = [&](const char* name) { return o.at(name).to_number<uint64_t>(); };
  const bool complete = o.at("complete").as_bool();
  std::cerr << "feedctl: import " << c.container << ": " << count("created") << " created, "
            << count("replaced") << " replaced, " << count("skipped") << " skipped, "
            << count("failed") << " failed in " << o.at("seconds").to_number<double>() << " s ("
            << static_cast<uint64_t>(o.at("itemsPerSecond").to_number<double>()) << " items/s)"
            << (complete ? "" : ", incomplete") << "\n";
  return complete && count("failed") == 0 ? 0 : 1;
}

}  // namespace feedd
