// Unit tests of JsonPointer (storage/json_pointer.h): RFC 6901 parsing,
// escapes, IsSameOrUnder and lookups in objects and arrays.
#include "storage/json_pointer.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <string>
#include <vector>

#include "tests/unit/test_util.h"

namespace feedd {
namespace {

using testutil::Json;
using testutil::Ptr;
using Tokens = std::vector<std::string>;

TEST(JsonPointerTest, DefaultConstructedIsRoot) {
  JsonPointer p;
  EXPECT_TRUE(p.is_root());
  EXPECT_TRUE(p.tokens().empty());
  EXPECT_EQ(p.text(), "");
}

TEST(JsonPointerTest, EmptyTextIsRoot) {
  Result<JsonPointer> p = JsonPointer::Parse("");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_TRUE(p->is_root());
  EXPECT_TRUE(p->tokens().empty());
  EXPECT_EQ(p->text(), "");
}

TEST(JsonPointerTest, SplitsTokensAndKeepsText) {
  Result<JsonPointer> p = JsonPointer::Parse("/a/bc/0");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_FALSE(p->is_root());
  EXPECT_EQ(p->tokens(), (Tokens{"a", "bc", "0"}));
  EXPECT_EQ(p->text(), "/a/bc/0");
}

TEST(JsonPointerTest, DecodesEscapes) {
  EXPECT_EQ(Ptr("/a~1b").tokens(), (Tokens{"a/b"}));
  EXPECT_EQ(Ptr("/m~0n").tokens(), (Tokens{"m~n"}));
  EXPECT_EQ(Ptr("/~0~1/~1~0").tokens(), (Tokens{"~/", "/~"}));
  // RFC 6901: "~01" is "~1" (decode ~1 first, then ~0), never "/".
  EXPECT_EQ(Ptr("/~01").tokens(), (Tokens{"~1"}));
  EXPECT_EQ(Ptr("/a~1b").text(), "/a~1b");
}

TEST(JsonPointerTest, EmptyTokensAreKept) {
  EXPECT_EQ(Ptr("/").tokens(), (Tokens{""}));
  EXPECT_EQ(Ptr("//").tokens(), (Tokens{"", ""}));
  EXPECT_EQ(Ptr("/a/").tokens(), (Tokens{"a", ""}));
}

TEST(JsonPointerTest, RejectsMalformedPointers) {
  for (const char* bad : {"a", "a/b", "~1", " /a", "/a~", "/a~2", "/~a", "/a~/b", "/a/~"}) {
    SCOPED_TRACE(bad);
    EXPECT_FALSE(JsonPointer::Parse(bad).ok());
  }
}

TEST(JsonPointerTest, IsSameOrUnder) {
  EXPECT_TRUE(Ptr("/a").IsSameOrUnder(Ptr("/a")));
  EXPECT_TRUE(Ptr("/a/b").IsSameOrUnder(Ptr("/a")));
  EXPECT_TRUE(Ptr("/a/b/c").IsSameOrUnder(Ptr("/a")));
  EXPECT_TRUE(Ptr("/a").IsSameOrUnder(Ptr("")));
  EXPECT_TRUE(Ptr("").IsSameOrUnder(Ptr("")));
  EXPECT_FALSE(Ptr("/a").IsSameOrUnder(Ptr("/a/b")));
  EXPECT_FALSE(Ptr("").IsSameOrUnder(Ptr("/a")));
  // Token-wise, not text-wise.
  EXPECT_FALSE(Ptr("/ab").IsSameOrUnder(Ptr("/a")));
  EXPECT_FALSE(Ptr("/a~1b").IsSameOrUnder(Ptr("/a")));
  EXPECT_FALSE(Ptr("/b/a").IsSameOrUnder(Ptr("/a")));
  // Escaped and unescaped spellings of the same token are the same pointer.
  EXPECT_TRUE(Ptr("/m~0n/x").IsSameOrUnder(Ptr("/m~0n")));
}

TEST(JsonPointerTest, FindsInObjects) {
  const boost::json::value doc = Json(R"({"a":{"b":1,"c":null},"a/b":2,"m~n":3,"":4,"s":"text"})");
  EXPECT_EQ(Ptr("").Find(doc), &doc);
  ASSERT_NE(Ptr("/a/b").Find(doc), nullptr);
  EXPECT_EQ(*Ptr("/a/b").Find(doc), Json("1"));
  ASSERT_NE(Ptr("/a/c").Find(doc), nullptr);
  EXPECT_TRUE(Ptr("/a/c").Find(doc)->is_null());
  ASSERT_NE(Ptr("/a~1b").Find(doc), nullptr);
  EXPECT_EQ(*Ptr("/a~1b").Find(doc), Json("2"));
  ASSERT_NE(Ptr("/m~0n").Find(doc), nullptr);
  EXPECT_EQ(*Ptr("/m~0n").Find(doc), Json("3"));
  ASSERT_NE(Ptr("/").Find(doc), nullptr);
  EXPECT_EQ(*Ptr("/").Find(doc), Json("4"));
  ASSERT_NE(Ptr("/a").Find(doc), nullptr);
  EXPECT_EQ(*Ptr("/a").Find(doc), Json(R"({"b":1,"c":null})"));

  EXPECT_EQ(Ptr("/x").Find(doc), nullptr);
  EXPECT_EQ(Ptr("/a/x").Find(doc), nullptr);
  EXPECT_EQ(Ptr("/a/b/c").Find(doc), nullptr);  // through a number
  EXPECT_EQ(Ptr("/s/0").Find(doc), nullptr);    // through a string
  EXPECT_EQ(Ptr("/A").Find(doc), nullptr);      // case-sensitive
}

TEST(JsonPointerTest, FindsInArraysWithCanonicalIndexesOnly) {
  const boost::json::value doc = Json(R"({"arr":[10,20,{"k":"v"}],"nested":[[1,2],[3]]})");
  ASSERT_NE(Ptr("/arr/0").Find(doc), nullptr);
  EXPECT_EQ(*Ptr("/arr/0").Find(doc), Json("10"));
  ASSERT_NE(Ptr("/arr/1").Find(doc), nullptr);
  EXPECT_EQ(*Ptr("/arr/1").Find(doc), Json("20"));
  ASSERT_NE(Ptr("/arr/2/k").Find(doc), nullptr);
  EXPECT_EQ(*Ptr("/arr/2/k").Find(doc), Json(R"("v")"));
  ASSERT_NE(Ptr("/nested/1/0").Find(doc), nullptr);
  EXPECT_EQ(*Ptr("/nested/1/0").Find(doc), Json("3"));

  for (const char* absent :
       {"/arr/3", "/arr/-", "/arr/01", "/arr/00", "/arr/+1", "/arr/-1", "/arr/1a", "/arr/",
        "/arr/ 1", "/arr/18446744073709551617", "/nested/1/1"}) {
    SCOPED_TRACE(absent);
    EXPECT_EQ(Ptr(absent).Find(doc), nullptr);
  }
}

TEST(JsonPointerTest, FindOnScalarRoot) {
  const boost::json::value doc = Json("42");
  EXPECT_EQ(Ptr("").Find(doc), &doc);
  EXPECT_EQ(Ptr("/0").Find(doc), nullptr);
  EXPECT_EQ(Ptr("/a").Find(doc), nullptr);
}

TEST(JsonPointerTest, MutableFindAllowsModification) {
  boost::json::value doc = Json(R"({"a":{"list":[1,2,3]}})");
  boost::json::value* v = Ptr("/a/list/1").Find(doc);
  ASSERT_NE(v, nullptr);
  *v = "two";
  EXPECT_EQ(doc, Json(R"({"a":{"list":[1,"two",3]}})"));
  EXPECT_EQ(Ptr("/a/missing").Find(doc), nullptr);
}

TEST(JsonPointerTest, FindByTextAgreesWithAParsedPointer) {
  const boost::json::value doc =
      Json(R"({"a":{"b":[10,{"c":"d"}]},"a/b":1,"m~n":2,"":{"":3},"~1":4,"arr":[[5]],"s":"x"})");
  for (const char* text :
       {"", "/a", "/a/b", "/a/b/0", "/a/b/1/c", "/a~1b", "/m~0n", "/", "//", "/~01", "/arr/0/0",
        "/arr/00", "/arr/1", "/a/b/-", "/missing", "/a/missing/deeper", "/s/0", "/a/b/1/c/d"}) {
    SCOPED_TRACE(text);
    EXPECT_EQ(JsonPointer::Find(text, doc), Ptr(text).Find(doc));
  }
  EXPECT_NE(JsonPointer::Find("/a/b/1/c", doc), nullptr);
  EXPECT_EQ(*JsonPointer::Find("/~01", doc), Json("4"));
}

TEST(JsonPointerTest, FindByTextOfAMalformedPointerFindsNothing) {
  const boost::json::value doc = Json(R"({"a":{"b":1},"~2":5})");
  for (const char* bad : {"a", "a/b", "~1", "/a~", "/~2", "/a/b~", "/a~/b"}) {
    SCOPED_TRACE(bad);
    EXPECT_FALSE(JsonPointer::Parse(bad).ok());
    EXPECT_EQ(JsonPointer::Find(bad, doc), nullptr);
  }
}

TEST(JsonPointerTest, FindInAnObjectSkipsTheFirstTokenOnly) {
  const boost::json::object doc = Json(R"({"a":{"b":[1,{"c":2}]}})").as_object();
  ASSERT_NE(Ptr("/a/b/1/c").Find(doc), nullptr);
  EXPECT_EQ(*Ptr("/a/b/1/c").Find(doc), Json("2"));
  EXPECT_EQ(Ptr("/a/b/2").Find(doc), nullptr);
  EXPECT_EQ(Ptr("").Find(doc), nullptr);
}

}  // namespace
}  // namespace feedd
