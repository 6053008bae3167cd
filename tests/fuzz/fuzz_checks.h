// Invariant checks shared by the fuzz targets (docs/fuzzing.md). A failed
// check prints what broke and aborts; libFuzzer then reports a crash and
// saves the input that caused it.
//
// Thread-safety: free functions, no shared state.
#pragma once

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <cmath>
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

// True when `a` and `b` are equal JSON, except that doubles may differ by
// up to three units in the last place: Boost.JSON 1.81 reads about 30% of
// the doubles it writes one or two ULPs off (precise number parsing came
// with Boost 1.83; docs/fuzzing.md). Anything more is a bug.
inline bool SameJson(const boost::json::value& a, const boost::json::value& b) {
  if (a.is_double() && b.is_double()) {
    double x = a.get_double();
    double y = b.get_double();
    for (int ulp = 0; ulp < 3 && x != y; ++ulp) x = std::nextafter(x, y);
    return x == y;
  }
  if (a.is_object() && b.is_object()) {
    if (a.get_object().size() != b.get_object().size()) return false;
    for (const auto& member : a.get_object()) {
      const boost::json::value* other = b.get_object().if_contains(member.key());
      if (other == nullptr || !SameJson(member.value(), *other)) return false;
    }
    return true;
  }
  if (a.is_array() && b.is_array()) {
    if (a.get_array().size() != b.get_array().size()) return false;
    for (size_t i = 0; i < a.get_array().size(); ++i) {
      if (!SameJson(a.get_array()[i], b.get_array()[i])) return false;
    }
    return true;
  }
  return a == b;
}

// `value` serializes to JSON that reads back as the same value (SameJson).
inline void CheckRoundTrips(const boost::json::value& value, std::string_view what) {
  std::string text = boost::json::serialize(value);
  FUZZ_CHECK(SameJson(CheckReadsBack(text, what), value),
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

}  // namespace feedd::fuzz
