// Unit tests of ParseChange (processors/change.h): envelopes the store wrote
// decode, whatever their items nest; others are errors, never exceptions.
#include "processors/change.h"

#include <gtest/gtest.h>

#include <string>

#include "util/json_parse.h"

namespace feedd {
namespace {

std::string Envelope(const std::string& after) {
  return R"({"lsn":7,"op":"create","container":"users","partitionKey":"u1","id":"u1","ts":5,)"
         R"("before":null,"after":)" +
         after + "}";
}

TEST(ParseChangeTest, ItemsAsDeepAsTheApiAcceptsDecode) {
  std::string deep = std::string(kMaxItemDepth - 1, '[') + std::string(kMaxItemDepth - 1, ']');
  auto change = ParseChange(Envelope(R"({"id":"u1","userId":"u1","deep":)" + deep + "}"));
  ASSERT_TRUE(change.ok()) << change.status().ToString();
  EXPECT_EQ(change->lsn, 7u);
  ASSERT_NE(change->after, nullptr);
  EXPECT_TRUE(change->after->at("deep").is_array());
}

TEST(ParseChangeTest, UndecodableEnvelopesAreErrors) {
  for (const std::string& text : {Envelope(R"({"id":"u1","v":Infinity})"), std::string("[1]"),
                                  std::string("{"), Envelope(R"({"id":"u1","v":1e309})")}) {
    auto change = ParseChange(text);
    EXPECT_FALSE(change.ok()) << text;
  }
}

}  // namespace
}  // namespace feedd
