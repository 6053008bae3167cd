#include "util/json_parse.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

namespace feedd {
namespace {

std::string Nested(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

TEST(JsonParseTest, ParsesLikeBoost) {
  auto v = ParseJson(R"({"a":[1,-2,3.5,"x",true,null],"b":{"c":18446744073709551615}})");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(*v,
            boost::json::parse(R"({"a":[1,-2,3.5,"x",true,null],"b":{"c":18446744073709551615}})"));
  EXPECT_TRUE(v->at("b").at("c").is_uint64());
  EXPECT_TRUE(v->at("a").at(1).is_int64());
}

TEST(JsonParseTest, SyntaxErrorsAreInvalidJson) {
  for (const char* text :
       {"", "{", "{\"a\":1}x", "[1,]", "Infinity", "NaN", "{\"a\":Infinity}", "\"\xE2\x82\""}) {
    auto v = ParseJson(text);
    ASSERT_FALSE(v.ok()) << text;
    EXPECT_EQ(v.status().code(), ErrorCode::kInvalidJson) << text;
  }
}

TEST(JsonParseTest, NonFiniteNumbersAreInvalidNumber) {
  for (const char* text : {"1e309", "-1e400", "[1E999]", "{\"v\":1e309}"}) {
    auto v = ParseJson(text);
    ASSERT_FALSE(v.ok()) << text;
    EXPECT_EQ(v.status().code(), ErrorCode::kInvalidNumber) << text;
  }
  auto v = ParseJson(R"({"v":1e309})");
  EXPECT_NE(v.status().message().find("1e309"), std::string::npos) << v.status().message();
}

TEST(JsonParseTest, IntegersStayExactWithinInt64AndUint64) {
  EXPECT_EQ(ParseJson("9223372036854775807")->as_int64(), INT64_MAX);
  EXPECT_EQ(ParseJson("-9223372036854775808")->as_int64(), INT64_MIN);
  EXPECT_EQ(ParseJson("18446744073709551615")->as_uint64(), UINT64_MAX);
  // Beyond both, an integer is a (finite) double, as docs/api.md says.
  EXPECT_EQ(ParseJson("18446744073709551616")->as_double(), 18446744073709551616.0);
  EXPECT_EQ(ParseJson("-9223372036854775809")->as_double(), -9223372036854775808.0);
  EXPECT_EQ(ParseJson("1e-400")->as_double(), 0.0);
}

// A double that feedd stores comes back as the same double, and a literal
// reads as the nearest double (what strtod, correctly rounded, gives):
// Boost.JSON 1.81's own reading is off by 1-2 ULPs for many of them, so a
// query for the written literal, or the index entry a delete looks for,
// missed the item.
TEST(JsonParseTest, DoublesReadBackExactly) {
  std::mt19937_64 random(20261124);
  int mismatches = 0;
  for (int i = 0; i < 20000; ++i) {
    uint64_t bits = random();
    double d = 0;
    std::memcpy(&d, &bits, sizeof d);
    if (!std::isfinite(d)) continue;
    const std::string text = boost::json::serialize(boost::json::value(d));
    auto v = ParseJson(text);
    ASSERT_TRUE(v.ok()) << text;
    ASSERT_TRUE(v->is_double()) << text;
    if (v->as_double() != d || v->as_double() != std::strtod(text.c_str(), nullptr)) ++mismatches;
  }
  EXPECT_EQ(mismatches, 0);
  // The literal the fuzzer found: an integer beyond int64, read as a double.
  const char* literal = "-9223372036877545808";
  EXPECT_EQ(ParseJson(literal)->as_double(), std::strtod(literal, nullptr));
}

TEST(JsonParseTest, DepthLimit) {
  EXPECT_TRUE(ParseJson(Nested(kMaxParseDepth)).ok());
  auto v = ParseJson(Nested(kMaxParseDepth + 1));
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), ErrorCode::kInvalidJson);
}

TEST(JsonParseTest, JsonDepth) {
  EXPECT_EQ(JsonDepth(boost::json::parse("1")), 0u);
  EXPECT_EQ(JsonDepth(boost::json::parse("{}")), 1u);
  EXPECT_EQ(JsonDepth(boost::json::parse(R"({"a":[1,{"b":[]}],"c":2})")), 4u);
  EXPECT_EQ(JsonDepth(*ParseJson(Nested(kMaxParseDepth))), kMaxItemDepth + 1);  // stops counting
  EXPECT_TRUE(CheckItemDepth(*ParseJson(Nested(kMaxItemDepth)), "the item").ok());
  Status s = CheckItemDepth(*ParseJson(Nested(kMaxItemDepth + 1)), "the item");
  EXPECT_EQ(s.code(), ErrorCode::kInvalidJson);
}

TEST(JsonParseTest, UsesTheGivenMemoryResource) {
  boost::json::monotonic_resource arena;
  auto v = ParseJson(R"({"a":"a string long enough to need the heap"})", &arena);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->storage().get(), &arena);
}

// Items that versions before the invalid_number check stored with 1e309.
TEST(JsonParseTest, LegacyInfinityAndNaNReadBackForIndexCleanUp) {
  const char* stored =
      R"({"id":"a","v":Infinity,"w":[-Infinity],"n":NaN,"s":"Infinity \"NaN\" \\","t":1})";
  EXPECT_FALSE(ParseJson(stored).ok());
  auto v = ParseLegacyJson(stored);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_TRUE(std::isinf(v->at("v").as_double()));
  EXPECT_GT(v->at("v").as_double(), 0);
  EXPECT_TRUE(std::isinf(v->at("w").at(0).as_double()));
  EXPECT_LT(v->at("w").at(0).as_double(), 0);
  EXPECT_TRUE(v->at("n").is_null());
  EXPECT_EQ(v->at("s").as_string(), "Infinity \"NaN\" \\");
  EXPECT_EQ(v->at("t").as_int64(), 1);
  EXPECT_FALSE(ParseLegacyJson("{\"a\":Infinit}").ok());
}

}  // namespace
}  // namespace feedd
