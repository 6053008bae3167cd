// Invariant checks shared by the fuzz targets (docs/fuzzing.md). A failed
// check prints what broke and aborts; libFuzzer then reports a crash and
// saves the input that caused it.
//
// Thread-safety: free functions, no shared state.
#pragma once

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "daemon/http_util.h"
#include "util/status.h"

// Aborts with `what` when `condition` is false.
#define FUZZ_CHECK(condition, what)                                                           \
  do {                                                                                        \
    if (!(condition)) ::feedd::fuzz::Fail(__FILE__, __LINE__, #condition, std::string(what)); \
  } while (0)

namespace feedd::fuzz {

[[noreturn]] inline void Fail(const char* file, int line, const char* condition,
                              const std::string& what) {
  std::fprintf(stderr, "%s:%d: invariant broken: %s\n  %s\n", file, line, condition, what.c_str());
  std::abort();
}

// Every byte of `text` as a %XX escape: what PercentDecode must turn back
// into `text`.
inline std::string PercentEncodeAll(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    out += '%';
    out += kHex[c >> 4];
    out += kHex[c & 0xf];
  }
  return out;
}

// `text` is JSON that the API's own parser reads back (ParseJsonBody); returns it.
inline boost::json::value CheckReadsBack(std::string_view text, std::string_view what) {
  Result<boost::json::value> parsed = ParseJsonBody(text);
  FUZZ_CHECK(parsed.ok(), std::string(what) +
                              " is not JSON the API reads back: " + parsed.status().ToString() +
                              "\n  " + std::string(text.substr(0, 512)));
  return std::move(*parsed);
}

// `value` serializes to JSON that reads back as the same value, doubles
// included (util/json_parse.h reads them exactly).
inline void CheckRoundTrips(const boost::json::value& value, std::string_view what) {
  std::string text = boost::json::serialize(value);
  FUZZ_CHECK(CheckReadsBack(text, what) == value,
             std::string(what) + " changes when read back: " + text.substr(0, 512));
}

// A failed request is answered with a JSON error body naming its code.
inline void CheckErrorBody(const Status& status) {
  FUZZ_CHECK(!status.ok(), "an error was expected");
  boost::json::value body = CheckReadsBack(ErrorJson(status), "the error body");
  boost::system::error_code ec;
  const boost::json::value* code = body.find_pointer("/error/code", ec);
  FUZZ_CHECK(
      code != nullptr && code->is_string() && code->get_string() == ErrorCodeName(status.code()),
      "the error body does not name its code: " + ErrorJson(status));
}

// A refused request is the client's fault (4xx), with a JSON error body.
inline void CheckClientError(const Status& status) {
  int http_status = ErrorCodeHttpStatus(status.code());
  FUZZ_CHECK(http_status >= 400 && http_status < 500, "not a client error: " + status.ToString());
  CheckErrorBody(status);
}

// A query-string parser reads back what it accepted: `canonical`, the value
// it parsed from `query` written back as a query string, parses to a value
// `same` as `accepted`.
template <typename T, typename Parse, typename Same>
void CheckQueryReadsBack(std::string_view query, const std::string& canonical, const T& accepted,
                         Parse parse, Same same) {
  Result<T> again = parse(canonical);
  FUZZ_CHECK(again.ok(), canonical + ": " + again.status().ToString());
  FUZZ_CHECK(same(*again, accepted), "'" + std::string(query) + "' and '" + canonical + "' differ");
}

}  // namespace feedd::fuzz
