// Fuzzes the reading of one HTTP request as HttpServer does it
// (daemon/http_request_head.h): raw bytes into a Boost.Beast parser set up
// by ConfigureRequestParser, then CheckFraming and ToHttpRequest, then the checks every
// handler makes of a request: the target split into path segments and
// query parameters, If-Match, X-Feedd-Min-Lsn, X-Feedd-Wait-Ms and the JSON
// body (daemon/http_util.h). The first input byte splits the rest into
// reads of that many bytes (0: one read), as TCP may deliver a request in
// any pieces.
//
// Invariants: a request Beast accepts keeps every header, with names and
// values free of CR, LF and NUL, and a body within the limit; Header()
// finds the first header of a name in any case; a normalized If-Match is
// "*" or one quoted ETag; a decimal header value reads back as its digits;
// every refusal is a client error with a JSON error body; the accepted
// Transfer-Encoding fields list chunked once, and nothing else but empty
// list elements.
#include <boost/asio/buffer.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "daemon/http_request_head.h"
#include "daemon/http_util.h"
#include "tests/fuzz/fuzz_checks.h"

namespace feedd {
namespace {

namespace http = boost::beast::http;

constexpr size_t kMaxRequestBytes = 64 * 1024;

bool SameName(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

void CheckHeaders(const HttpRequest& request, size_t fields) {
  FUZZ_CHECK(request.headers.size() == fields, "headers were lost");
  for (const HttpHeader& header : request.headers) {
    FUZZ_CHECK(!header.name.empty(), "a header without a name");
    for (std::string_view text : {std::string_view(header.name), std::string_view(header.value)}) {
      FUZZ_CHECK(text.find_first_of(std::string_view("\r\n\0", 3)) == std::string_view::npos,
                 "CR, LF or NUL in header '" + header.name + "'");
    }
    std::optional<std::string_view> found = request.Header(header.name);
    FUZZ_CHECK(found.has_value(), "Header() misses '" + header.name + "'");
    for (const HttpHeader& first : request.headers) {
      if (!SameName(first.name, header.name)) continue;
      FUZZ_CHECK(*found == first.value, "Header() is not the first '" + header.name + "'");
      break;
    }
  }
}

// A header that must be a decimal number (X-Feedd-Min-Lsn, X-Feedd-Wait-Ms).
void CheckNumberHeader(const HttpRequest& request, std::string_view name) {
  std::optional<std::string_view> value = request.Header(name);
  uint64_t number = 0;
  if (!value || !ParseUint64(*value, &number)) return;
  std::string_view digits = *value;
  while (digits.size() > 1 && digits.front() == '0') digits.remove_prefix(1);
  FUZZ_CHECK(std::to_string(number) == digits, std::string(name) + ": " + std::string(*value));
}

void CheckRequest(const HttpRequest& request) {
  std::string_view target = request.target;
  size_t question = target.find('?');
  std::string_view path = target.substr(0, question);
  Result<std::vector<std::string>> segments = SplitPath(path);
  if (!segments.ok()) fuzz::CheckClientError(segments.status());
  if (question != std::string_view::npos) {
    Result<std::vector<QueryParam>> params = ParseQueryString(target.substr(question + 1));
    if (!params.ok()) fuzz::CheckClientError(params.status());
  }

  if (std::optional<std::string_view> if_match = request.Header("If-Match")) {
    Result<std::string> etag = NormalizeIfMatch(*if_match);
    if (!etag.ok()) {
      fuzz::CheckClientError(etag.status());
    } else if (*etag != "*") {
      FUZZ_CHECK(etag->size() >= 3 && etag->front() == '"' && etag->back() == '"' &&
                     etag->find_first_of("\",", 1) == etag->size() - 1,
                 "If-Match " + std::string(*if_match) + " became " + *etag);
    }
  }
  CheckNumberHeader(request, "X-Feedd-Min-Lsn");
  CheckNumberHeader(request, "X-Feedd-Wait-Ms");

  Result<boost::json::value> body = ParseRequestJson(request);
  if (!body.ok()) fuzz::CheckClientError(body.status());
}

}  // namespace
}  // namespace feedd

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace feedd;
  if (size == 0) return 0;
  size_t piece = data[0] == 0 ? size : data[0];
  std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);

  RequestParser parser;
  ConfigureRequestParser(parser, kMaxRequestBytes);
  parser.eager(true);
  std::string buffer;  // received, not yet consumed by the parser
  boost::beast::error_code ec;
  while (!parser.is_done()) {
    if (!buffer.empty()) {
      size_t used = parser.put(boost::asio::buffer(buffer), ec);
      buffer.erase(0, used);
      if (ec == http::error::need_more) {
        ec = {};
      } else if (ec) {
        break;
      } else if (used > 0) {
        continue;
      }
    }
    if (rest.empty()) {
      // The client closed: end of stream before a request, else what
      // http::read does at the end of the bytes.
      if (!parser.got_some()) return 0;
      parser.put_eof(ec);
      break;
    }
    size_t n = std::min(piece, rest.size());
    buffer.append(rest.substr(0, n));
    rest.remove_prefix(n);
  }
  if (ec || !parser.is_done()) return 0;  // answered 400/413 or closed: nothing reaches a handler

  RequestMessage& message = parser.get();
  // The server answers a framing error from the head and closes: nothing of
  // such a request reaches a handler, and what follows is never parsed.
  if (Status framing = CheckFraming(message); !framing.ok()) {
    int status = ErrorCodeHttpStatus(framing.code());
    FUZZ_CHECK(status == 400 || status == 501, "a framing error that is not 400 or 501");
    return 0;
  }
  // RFC 9110 5.6.1: empty list elements (", chunked") are ignored.
  std::string codings;
  bool chunked = false;
  for (const auto& field : message) {
    if (field.name() != boost::beast::http::field::transfer_encoding) continue;
    chunked = true;
    for (char c : field.value()) {
      if (c != ',' && c != ' ' && c != '\t') codings += c;
    }
  }
  FUZZ_CHECK(!chunked || boost::beast::iequals(codings, "chunked"),
             "a transfer coding other than chunked, once, was accepted: " + codings);
  size_t fields = static_cast<size_t>(std::distance(message.begin(), message.end()));
  HttpRequest request = ToHttpRequest(message);
  FUZZ_CHECK(request.body.size() <= kMaxRequestBytes, "a body above the limit");
  FUZZ_CHECK(!request.target.empty(), "an empty target");
  CheckHeaders(request, fields);
  CheckRequest(request);
  return 0;
}
