#include "daemon/feedctl_import.h"

#include <signal.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <vector>

#include "util/http_client.h"
#include "util/json_parse.h"

namespace feedd {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

constexpr size_t kChunkBytes = 256 * 1024;
constexpr auto kProgressInterval = std::chrono::seconds(1);

std::string Mib(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return text;
}

std::string Target(const ImportCommand& c) {
  std::string target = "/v1/containers/" + PercentEncodeSegment(c.container) + "/import";
  std::string query;
  if (!c.if_exists.empty()) query += "ifExists=" + c.if_exists;
  if (!c.on_error.empty()) query += (query.empty() ? "" : "&") + ("onError=" + c.on_error);
  if (!query.empty()) target += "?" + query;
  return target;
}

}  // namespace

int RunImport(const ImportCommand& c) {
  std::istream* in = &std::cin;
  std::ifstream file;
  uint64_t total = 0;  // 0: unknown (standard input)
  if (!c.file.empty() && c.file != "-") {
    file.open(c.file, std::ios::binary | std::ios::ate);
    if (!file) {
      std::cerr << "feedctl: cannot open " << c.file << ": " << std::strerror(errno) << "\n";
      return 2;
    }
    total = static_cast<uint64_t>(file.tellg());
    file.seekg(0);
    in = &file;
  }
  signal(SIGPIPE, SIG_IGN);  // a daemon that stops reading answers; we read it

  asio::io_context io;
  tcp::socket socket(io);
  boost::system::error_code ec;
  size_t colon = c.api.rfind(':');
  if (colon == std::string::npos) {
    std::cerr << "feedctl: the API address must be HOST:PORT, not " << c.api << "\n";
    return 2;
  }
  tcp::resolver resolver(io);
  auto endpoints = resolver.resolve(c.api.substr(0, colon), c.api.substr(colon + 1), ec);
  if (!ec) asio::connect(socket, endpoints, ec);
  if (ec) {
    std::cerr << "feedctl: cannot reach feedd: " << c.api << ": " << ec.message() << "\n";
    return 3;
  }

  std::string head = "POST " + Target(c) + " HTTP/1.1\r\nHost: " + c.api +
                     "\r\nContent-Type: application/x-ndjson\r\n"
                     "Transfer-Encoding: chunked\r\nConnection: close\r\n";
  if (!c.bearer_token.empty()) head += "Authorization: Bearer " + c.bearer_token + "\r\n";
  head += "\r\n";
  asio::write(socket, asio::buffer(head), ec);
  std::vector<char> chunk(kChunkBytes);
  uint64_t sent = 0, lines = 0;
  const auto started = std::chrono::steady_clock::now();
  auto last_progress = started;
  while (!ec && *in) {
    in->read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    const size_t n = static_cast<size_t>(in->gcount());
    if (n == 0) break;
    char size_line[32];
    int size_length = std::snprintf(size_line, sizeof size_line, "%zx\r\n", n);
    std::vector<asio::const_buffer> pieces{
        asio::buffer(size_line, static_cast<size_t>(size_length)), asio::buffer(chunk.data(), n),
        asio::buffer("\r\n", 2)};
    asio::write(socket, pieces, ec);
    if (ec) break;
    sent += n;
    for (size_t i = 0; i < n; ++i) lines += chunk[i] == '\n';
    auto now = std::chrono::steady_clock::now();
    if (c.progress && now - last_progress >= kProgressInterval) {
      last_progress = now;
      const double seconds = std::chrono::duration<double>(now - started).count();
      std::cerr << "feedctl: import " << c.container << ": sent " << Mib(sent);
      if (total > 0) std::cerr << " of " << Mib(total) << " (" << sent * 100 / total << "%)";
      std::cerr << ", " << lines << " lines, " << Mib(static_cast<uint64_t>(sent / seconds))
                << "/s\n";
    }
  }
  if (!ec) asio::write(socket, asio::buffer("0\r\n\r\n", 5), ec);
  // Even when sending failed (the daemon stopped reading: onError=stop), its
  // answer may be there to read.
  boost::beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(64 * 1024 * 1024);
  boost::system::error_code read_ec;
  http::read(socket, buffer, parser, read_ec);
  if (read_ec) {
    std::cerr << "feedctl: " << c.api << ": no answer to the import"
              << (ec ? " (sending failed: " + ec.message() + ")" : "") << ": " << read_ec.message()
              << "\n";
    return 2;
  }
  const auto& response = parser.get();
  std::cout << response.body() << "\n";
  Result<boost::json::value> report = ParseJson(response.body());
  const boost::json::object* o = report.ok() ? report->if_object() : nullptr;
  if (response.result_int() != 200 || o == nullptr || !o->contains("created")) {
    std::cerr << "feedctl: import " << c.container << " failed: HTTP " << response.result_int()
              << "\n";
    return 1;
  }
  auto count = [&](const char* name) { return o->at(name).to_number<uint64_t>(); };
  const bool complete = o->at("complete").as_bool();
  std::cerr << "feedctl: import " << c.container << ": " << count("created") << " created, "
            << count("replaced") << " replaced, " << count("skipped") << " skipped, "
            << count("failed") << " failed in " << o->at("seconds").to_number<double>() << " s ("
            << static_cast<uint64_t>(o->at("itemsPerSecond").to_number<double>()) << " items/s)"
            << (complete ? "" : ", incomplete") << "\n";
  return complete && count("failed") == 0 ? 0 : 1;
}

}  // namespace feedd
