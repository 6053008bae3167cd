// Unit tests of NdjsonLines (daemon/ndjson_lines.h), the splitter of the
// import route's body: lines across pieces, numbering, blank lines, CRLF,
// lines over the limit.
#include "daemon/ndjson_lines.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace feedd {
namespace {

struct Got {
  uint64_t number;
  std::string text;
  bool too_long;
  bool operator==(const Got&) const = default;
};

// Feeds `body` in pieces of `piece` bytes and collects every line.
std::vector<Got> Split(std::string_view body, size_t piece, size_t max) {
  NdjsonLines lines(max);
  std::vector<Got> out;
  for (size_t pos = 0; pos < body.size(); pos += piece) {
    lines.Append(body.substr(pos, piece));
    while (auto line = lines.Next())
      out.push_back({line->number, std::string(line->text), line->too_long});
  }
  if (auto last = lines.Finish())
    out.push_back({last->number, std::string(last->text), last->too_long});
  return out;
}

TEST(NdjsonLinesTest, LinesAreTheSameWhateverThePieces) {
  const std::string body = "{\"a\":1}\r\n\n  \t\n{\"b\":2}\n{\"c\":3}";
  const std::vector<Got> expected = {
      {1, "{\"a\":1}", false}, {4, "{\"b\":2}", false}, {5, "{\"c\":3}", false}};
  for (size_t piece : {1, 2, 3, 7, 100}) {
    EXPECT_EQ(Split(body, piece, 64), expected) << "pieces of " << piece;
  }
}

TEST(NdjsonLinesTest, ALineOverTheLimitIsReportedOnceAndNeverHeld) {
  const std::string long_line(100, 'x');
  const std::string body = "{\"a\":1}\n" + long_line + "\n{\"b\":2}\n" + long_line;
  for (size_t piece : {1, 9, 1000}) {
    std::vector<Got> got = Split(body, piece, 16);
    std::vector<Got> expected = {
        {1, "{\"a\":1}", false}, {2, "", true}, {3, "{\"b\":2}", false}, {4, "", true}};
    EXPECT_EQ(got, expected) << "pieces of " << piece;
  }
}

TEST(NdjsonLinesTest, CountsLinesAndBytes) {
  NdjsonLines lines(64);
  lines.Append("x\n\ny");
  while (lines.Next()) {
  }
  EXPECT_EQ(lines.lines(), 2u);
  EXPECT_TRUE(lines.Finish().has_value());
  EXPECT_EQ(lines.lines(), 3u);
  EXPECT_EQ(lines.bytes(), 4u);
}

}  // namespace
}  // namespace feedd
