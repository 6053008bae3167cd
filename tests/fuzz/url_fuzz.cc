// Fuzzes the request target as ApiRouter::Match splits it: PercentDecode,
// SplitPath and ParseQueryString (daemon/http_util.h), with the raw target
// ("/v1/containers/users/items?x=1").
//
// Invariants: decoding succeeds exactly when every '%' starts a valid
// escape and shrinks the text by two bytes per escape; decoding what
// PercentEncodeAll made of a decoded value gives it back; a path splits into
// one segment per '/'; query names are unique; every failure has a JSON
// error body.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/http_util.h"
#include "tests/fuzz/fuzz_checks.h"

namespace feedd {
namespace {

bool IsHex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

void CheckDecode(std::string_view in, bool plus_is_space) {
  bool valid = true;
  size_t escapes = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') continue;
    if (i + 2 >= in.size() || !IsHex(in[i + 1]) || !IsHex(in[i + 2])) {
      valid = false;
      break;
    }
    ++escapes;
    i += 2;
  }
  Result<std::string> decoded = PercentDecode(in, plus_is_space);
  FUZZ_CHECK(decoded.ok() == valid,
             "PercentDecode of '" + std::string(in) + "' answered " + decoded.status().ToString());
  if (!decoded.ok()) return fuzz::CheckClientError(decoded.status());
  FUZZ_CHECK(decoded->size() == in.size() - 2 * escapes, std::string(in));
  Result<std::string> again = PercentDecode(fuzz::PercentEncodeAll(*decoded), plus_is_space);
  FUZZ_CHECK(again.ok() && *again == *decoded, "an encoded value does not decode back");
}

void CheckPath(std::string_view path) {
  Result<std::vector<std::string>> segments = SplitPath(path);
  if (!segments.ok()) return fuzz::CheckClientError(segments.status());
  FUZZ_CHECK(!path.empty() && path.front() == '/', std::string(path));
  size_t slashes = 0;
  for (char c : path) slashes += c == '/' ? 1 : 0;
  FUZZ_CHECK(segments->size() == slashes, "'" + std::string(path) + "' split into " +
                                              std::to_string(segments->size()) + " segments");
  std::string encoded;
  for (const std::string& segment : *segments) encoded += "/" + fuzz::PercentEncodeAll(segment);
  Result<std::vector<std::string>> again = SplitPath(encoded);
  FUZZ_CHECK(again.ok() && *again == *segments, "encoded segments do not split back");
}

void CheckQuery(std::string_view query) {
  Result<std::vector<QueryParam>> params = ParseQueryString(query);
  if (!params.ok()) return fuzz::CheckClientError(params.status());
  std::set<std::string> names;
  std::string encoded;
  for (const QueryParam& param : *params) {
    FUZZ_CHECK(names.insert(param.name).second, "query parameter '" + param.name + "' twice");
    if (!encoded.empty()) encoded += '&';
    encoded += fuzz::PercentEncodeAll(param.name) + "=" + fuzz::PercentEncodeAll(param.value);
  }
  Result<std::vector<QueryParam>> again = ParseQueryString(encoded);
  FUZZ_CHECK(again.ok() && again->size() == params->size(), "encoded parameters do not parse back");
  for (size_t i = 0; i < params->size(); ++i) {
    FUZZ_CHECK((*again)[i].name == (*params)[i].name && (*again)[i].value == (*params)[i].value,
               "parameter " + std::to_string(i) + " changes when encoded");
  }
}

}  // namespace
}  // namespace feedd

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view target(reinterpret_cast<const char*>(data), size);
  size_t question = target.find('?');
  std::string_view path = target.substr(0, question);
  std::string_view query =
      question == std::string_view::npos ? std::string_view() : target.substr(question + 1);
  feedd::CheckDecode(target, false);
  feedd::CheckDecode(target, true);
  feedd::CheckPath(path);
  feedd::CheckQuery(query);
  return 0;
}
