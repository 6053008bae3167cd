// Fuzzes the NDJSON line splitter of the import route (daemon/ndjson_lines.h)
// with a body cut into pieces of fuzzer-chosen sizes, then every complete
// line through the route's per-line checks (ParseJsonBody, PrepareItem).
//
// Input: byte 0 picks max_line_bytes (1..256), byte 1 seeds the piece
// sizes; the rest is the body.
//
// Invariants: the lines come out exactly as a one-shot split of the whole
// body at '\n' gives them (numbered from 1, a '\r' before the '\n' dropped,
// blank lines passed over, a line over max_line_bytes reported once as too
// long and never returned), whatever the pieces; no line returned holds a
// '\n' or exceeds the limit; the splitter holds at most the limit plus one
// piece; every refused line has an error code that names a 4xx.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/http_util.h"
#include "daemon/ndjson_lines.h"
#include "storage/container_spec.h"
#include "storage/prepared_item.h"
#include "tests/blog_scenario.h"
#include "tests/fuzz/fuzz_checks.h"

namespace feedd {
namespace {

struct Expected {
  uint64_t number;
  std::string text;
  bool too_long;
};

bool Blank(std::string_view s) {
  for (char c : s) {
    if (c != ' ' && c != '\t' && c != '\r') return false;
  }
  return true;
}

// The reference: the whole body split at once.
std::vector<Expected> SplitAll(std::string_view body, size_t max) {
  std::vector<Expected> out;
  uint64_t number = 0;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t end = body.find('\n', pos);
    bool last = end == std::string_view::npos;
    std::string_view line = body.substr(pos, last ? std::string_view::npos : end - pos);
    ++number;
    pos = last ? body.size() : end + 1;
    if (line.size() > max) {
      out.push_back({number, "", true});
      continue;
    }
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (Blank(line)) continue;
    out.push_back({number, std::string(line), false});
  }
  return out;
}

void CheckLine(const NdjsonLines::Line& line, size_t max, std::vector<Expected>& got) {
  FUZZ_CHECK(line.text.find('\n') == std::string_view::npos, "a line holds a newline");
  FUZZ_CHECK(line.text.size() <= max, "a line over the limit was returned");
  FUZZ_CHECK(got.empty() || got.back().number < line.number, "line numbers do not increase");
  got.push_back({line.number, std::string(line.text), line.too_long});
  if (line.too_long) return;
  Result<boost::json::value> value = ParseJsonBody(line.text);
  if (!value.ok()) {
    FUZZ_CHECK(ErrorCodeHttpStatus(value.status().code()) / 100 == 4, value.status().ToString());
    return;
  }
  if (!value->is_object()) return;
  static const std::vector<ContainerSpec> containers = BlogContainers();
  Result<PreparedItem> item =
      PrepareItem(containers[1], std::move(value->as_object()), std::nullopt, std::nullopt, 4096);
  if (!item.ok()) {
    FUZZ_CHECK(ErrorCodeHttpStatus(item.status().code()) / 100 == 4, item.status().ToString());
  }
}

}  // namespace
}  // namespace feedd

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace feedd;
  if (size < 2) return 0;
  const size_t max = 1 + data[0];
  uint32_t seed = data[1];
  std::string_view body(reinterpret_cast<const char*>(data) + 2, size - 2);

  NdjsonLines lines(max);
  std::vector<Expected> got;
  size_t pos = 0;
  while (pos < body.size()) {
    seed = seed * 1103515245u + 12345u;
    size_t piece = 1 + (seed >> 16) % 64;
    if (piece > body.size() - pos) piece = body.size() - pos;
    lines.Append(body.substr(pos, piece));
    pos += piece;
    while (std::optional<NdjsonLines::Line> line = lines.Next()) CheckLine(*line, max, got);
  }
  if (std::optional<NdjsonLines::Line> last = lines.Finish()) CheckLine(*last, max, got);
  FUZZ_CHECK(lines.bytes() == body.size(), "bytes appended are miscounted");

  std::vector<Expected> expected = SplitAll(body, max);
  FUZZ_CHECK(got.size() == expected.size(),
             std::to_string(got.size()) + " lines, expected " + std::to_string(expected.size()));
  for (size_t i = 0; i < got.size(); ++i) {
    FUZZ_CHECK(got[i].number == expected[i].number && got[i].too_long == expected[i].too_long &&
                   got[i].text == expected[i].text,
               "line " + std::to_string(expected[i].number) + " differs");
  }
  return 0;
}
