// Unit tests of ParsePatchOperations / ApplyPatch (storage/patch.h), against
// docs/api.md "Patch": add, set, replace, remove, incr; arrays and "-";
// escapes; missing parents; forbidden paths; list-size limits.
#include "storage/patch.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <string>
#include <string_view>

#include "tests/unit/test_util.h"
#include "util/json_parse.h"

namespace feedd {
namespace {

using testutil::HasCode;
using testutil::IsOk;
using testutil::Json;
using testutil::Str;

const ContainerSpec kPosts{"posts", "/postId", {"/userId"}};
const ContainerSpec kOrders{"orders", "/customer/id", {"/status"}};

Result<std::vector<PatchOp>> Parse(std::string_view ops, const ContainerSpec& spec = kPosts) {
  return ParsePatchOperations(spec, Json(ops));
}

// Parses `ops` (which must be valid) and applies them to `doc`.
Status Apply(std::string_view ops, boost::json::value& doc) {
  Result<std::vector<PatchOp>> parsed = Parse(ops);
  if (!parsed.ok()) {
    ADD_FAILURE() << "patch did not parse: " << parsed.status().ToString() << " ops=" << ops;
    return parsed.status();
  }
  return ApplyPatch(parsed.value(), doc);
}

std::string ManyOps(int n) {
  std::string ops = "[";
  for (int i = 0; i < n; ++i) {
    if (i > 0) ops += ",";
    ops +=
        R"({"op":"set","path":"/f)" + std::to_string(i) + R"(","value":)" + std::to_string(i) + "}";
  }
  return ops + "]";
}

const boost::json::value kDoc = Json(
    R"({"id":"a","postId":"p","title":"t","n":5,"d":1.5,"flag":true,"tags":["x","y","z"],
        "meta":{"lang":"en","views":{"count":1}}})");

// ---- parsing ----

TEST(PatchParseTest, ParsesEveryOpKind) {
  Result<std::vector<PatchOp>> ops = Parse(R"([
      {"op":"add","path":"/a","value":1},
      {"op":"set","path":"/b/c","value":"s"},
      {"op":"replace","path":"/title","value":{"x":[1]}},
      {"op":"remove","path":"/tags/0"},
      {"op":"incr","path":"/n","value":2.5}])");
  ASSERT_TRUE(ops.ok()) << ops.status().ToString();
  ASSERT_EQ(ops->size(), 5u);
  EXPECT_EQ((*ops)[0].kind, PatchOpKind::kAdd);
  EXPECT_EQ((*ops)[0].path.text(), "/a");
  EXPECT_EQ((*ops)[0].value, Json("1"));
  EXPECT_EQ((*ops)[1].kind, PatchOpKind::kSet);
  EXPECT_EQ((*ops)[1].path.tokens(), (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ((*ops)[1].value, Json(R"("s")"));
  EXPECT_EQ((*ops)[2].kind, PatchOpKind::kReplace);
  EXPECT_EQ((*ops)[2].value, Json(R"({"x":[1]})"));
  EXPECT_EQ((*ops)[3].kind, PatchOpKind::kRemove);
  EXPECT_EQ((*ops)[3].path.text(), "/tags/0");
  EXPECT_EQ((*ops)[4].kind, PatchOpKind::kIncr);
  EXPECT_EQ((*ops)[4].value, Json("2.5"));
}

TEST(PatchParseTest, RejectsEmptyList) {
  EXPECT_TRUE(HasCode(Parse("[]").status(), ErrorCode::kInvalidPatch));
}

TEST(PatchParseTest, AcceptsHundredOpsRejectsMore) {
  Result<std::vector<PatchOp>> hundred = Parse(ManyOps(100));
  ASSERT_TRUE(hundred.ok()) << hundred.status().ToString();
  EXPECT_EQ(hundred->size(), 100u);
  EXPECT_TRUE(HasCode(Parse(ManyOps(101)).status(), ErrorCode::kInvalidPatch));
}

TEST(PatchParseTest, RejectsMalformedLists) {
  for (const char* bad : {
           R"({"op":"set","path":"/a","value":1})",        // not an array
           R"("set")",                                     // not an array
           R"([1])",                                       // op not an object
           R"([{"op":"move","path":"/a","value":1}])",     // unknown op
           R"([{"op":"copy","path":"/a","value":1}])",     // unknown op
           R"([{"op":"SET","path":"/a","value":1}])",      // ops are lower case
           R"([{"path":"/a","value":1}])",                 // no op
           R"([{"op":5,"path":"/a","value":1}])",          // op not a string
           R"([{"op":"set","value":1}])",                  // no path
           R"([{"op":"set","path":5,"value":1}])",         // path not a string
           R"([{"op":"set","path":"a","value":1}])",       // not a pointer
           R"([{"op":"set","path":"/a~2","value":1}])",    // bad escape
           R"([{"op":"incr","path":"/n","value":"1"}])",   // non-numeric incr
           R"([{"op":"incr","path":"/n","value":true}])",  // non-numeric incr
           R"([{"op":"incr","path":"/n","value":null}])",  // non-numeric incr
           R"([{"op":"incr","path":"/n"}])",               // incr without value
           R"([{"op":"set","path":"/a","value":1},{"op":"bogus","path":"/b"}])",
       }) {
    SCOPED_TRACE(bad);
    EXPECT_TRUE(HasCode(Parse(bad).status(), ErrorCode::kInvalidPatch));
  }
}

TEST(PatchParseTest, RejectsForbiddenPaths) {
  for (const char* path : {"/id", "/id/x", "/postId", "/postId/x", "/_etag", "/_lsn", "/_ts", "/_x",
                           "/_", "/_x/y", ""}) {
    for (const char* op : {"add", "set", "replace", "remove", "incr"}) {
      std::string ops =
          std::string(R"([{"op":")") + op + R"(","path":")" + path + R"(","value":1}])";
      SCOPED_TRACE(ops);
      EXPECT_TRUE(HasCode(Parse(ops).status(), ErrorCode::kInvalidPatch));
    }
  }
}

TEST(PatchParseTest, ForbiddenPathAnywhereInListRejectsTheList) {
  EXPECT_TRUE(HasCode(Parse(R"([{"op":"set","path":"/a","value":1},
                                {"op":"set","path":"/b","value":2},
                                {"op":"remove","path":"/id"}])")
                          .status(),
                      ErrorCode::kInvalidPatch));
}

TEST(PatchParseTest, NestedPartitionKeyAndItsParentsAreForbidden) {
  for (const char* path : {"/customer/id", "/customer", "/customer/id/x"}) {
    std::string ops = std::string(R"([{"op":"set","path":")") + path + R"(","value":"c2"}])";
    SCOPED_TRACE(ops);
    EXPECT_TRUE(HasCode(Parse(ops, kOrders).status(), ErrorCode::kInvalidPatch));
  }
  // A sibling of the partition key is fine, and "/id" stays forbidden.
  EXPECT_TRUE(
      IsOk(Parse(R"([{"op":"set","path":"/customer/name","value":"n"}])", kOrders).status()));
  EXPECT_TRUE(HasCode(Parse(R"([{"op":"set","path":"/id","value":"x"}])", kOrders).status(),
                      ErrorCode::kInvalidPatch));
  // "/postId" is only the partition key of posts.
  EXPECT_TRUE(IsOk(Parse(R"([{"op":"set","path":"/postId","value":"x"}])", kOrders).status()));
}

TEST(PatchParseTest, PathsThatOnlyLookLikeForbiddenOnesAreAllowed) {
  for (const char* path :
       {"/idx", "/ids", "/Id", "/postIdx", "/x_", "/meta/id", "/x/postId", "/~1id", "/userId"}) {
    std::string ops = std::string(R"([{"op":"set","path":")") + path + R"(","value":1}])";
    SCOPED_TRACE(ops);
    EXPECT_TRUE(IsOk(Parse(ops).status()));
  }
}

TEST(PatchParseTest, RemoveNeedsNoValue) {
  Result<std::vector<PatchOp>> ops = Parse(R"([{"op":"remove","path":"/title"}])");
  ASSERT_TRUE(ops.ok()) << ops.status().ToString();
  EXPECT_EQ((*ops)[0].kind, PatchOpKind::kRemove);
}

// ---- add ----

TEST(PatchApplyTest, AddSetsNewAndExistingMembers) {
  boost::json::value doc = kDoc;
  ASSERT_TRUE(IsOk(Apply(R"([{"op":"add","path":"/fresh","value":[1,2]},
                             {"op":"add","path":"/title","value":"new"},
                             {"op":"add","path":"/meta/views/extra","value":{"k":null}}])",
                         doc)));
  EXPECT_EQ(doc.at("fresh"), Json("[1,2]"));
  EXPECT_EQ(doc.at("title"), Json(R"("new")"));
  EXPECT_EQ(doc.at("meta").at("views"), Json(R"({"count":1,"extra":{"k":null}})"));
  EXPECT_EQ(doc.at("id"), Json(R"("a")"));
}

TEST(PatchApplyTest, AddInsertsIntoArrays) {
  boost::json::value doc = kDoc;
  ASSERT_TRUE(IsOk(Apply(R"([{"op":"add","path":"/tags/0","value":"first"}])", doc)));
  EXPECT_EQ(doc.at("tags"), Json(R"(["first","x","y","z"])"));
  ASSERT_TRUE(IsOk(Apply(R"([{"op":"add","path":"/tags/2","value":"mid"}])", doc)));
  EXPECT_EQ(doc.at("tags"), Json(R"(["first","x","mid","y","z"])"));
  ASSERT_TRUE(IsOk(Apply(R"([{"op":"add","path":"/tags/5","value":"end"}])", doc)));  // == size
  EXPECT_EQ(doc.at("tags"), Json(R"(["first","x","mid","y","z","end"])"));
  ASSERT_TRUE(IsOk(Apply(R"([{"op":"add","path":"/tags/-","value":{"o":1}}])", doc)));
  EXPECT_EQ(doc.at("tags"), Json(R"(["first","x","mid","y","z","end",{"o":1}])"));
}

TEST(PatchApplyTest, AddAppendsToEmptyArray) {
  boost::json::value doc = Json(R"({"id":"a","postId":"p","list":[]})");
  ASSERT_TRUE(IsOk(Apply(R"([{"op":"add","path":"/list/-","value":1},
                             {"op":"add","path":"/list/-","value":2}])",
                         doc)));
  EXPECT_EQ(doc.at("list"), Json("[1,2]"));
}

TEST(PatchApplyTest, AddRejectsBadArrayIndexes) {
  for (const char* path : {"/tags/4", "/tags/99", "/tags/01", "/tags/-1", "/tags/x"}) {
    boost::json::value doc = kDoc;
    std::string ops = std::string(R"([{"op":"add","path":")") + path + R"(","value":1}])";
    SCOPED_TRACE(ops);
    EXPECT_TRUE(HasCode(Apply(ops, doc), ErrorCode::kInvalidPatch));
  }
}

// ---- set ----

TEST(PatchApplyTest, SetCreatesOrOverwritesMembers) {
  boost::json::value doc = kDoc;
  ASSERT_TRUE(IsOk(Apply(R"([{"op":"set","path":"/title","value":"t2"},
                             {"op":"set","path":"/brand","value":false},
                             {"op":"set","path":"/meta/lang","value":"fr"}])",
                         doc)));
  EXPECT_EQ(doc.at("title"), Json(R"("t2")"));
  EXPECT_EQ(doc.at("brand"), Json("false"));
  EXPECT_EQ(doc.at("meta").at("lang"), Json(R"("fr")"));
}

TEST(PatchApplyTest, SetReplacesArrayElementWithoutInserting) {
  boost::json::value doc = kDoc;
  ASSERT_TRUE(IsOk(Apply(R"([{"op":"set","path":"/tags/1","value":"Y"}])", doc)));
  EXPECT_EQ(doc.at("tags"), Json(R"(["x","Y","z"])"));
  boost::json::value doc2 = kDoc;
  EXPECT_TRUE(HasCode(Apply(R"([{"op":"set","path":"/tags/7","value":"Y"}])", doc2),
                      ErrorCode::kInvalidPatch));
}

// ---- replace ----

TEST(PatchApplyTest, ReplaceNeedsAnExistingTarget) {
  boost::json::value doc = kDoc;
  ASSERT_TRUE(IsOk(Apply(R"([{"op":"replace","path":"/title","value":"T"},
                             {"op":"replace","path":"/tags/2","value":"Z"},
                             {"op":"replace","path":"/meta/views","value":0}])",
                         doc)));
  EXPECT_EQ(doc.at("title"), Json(R"("T")"));
  EXPECT_EQ(doc.at("tags"), Json(R"(["x","y","Z"])"));
  EXPECT_EQ(doc.at("meta").at("views"), Json("0"));

  for (const char* path : {"/missing", "/meta/missing", "/tags/3", "/tags/-"}) {
    boost::json::value d = kDoc;
    std::string ops = std::string(R"([{"op":"replace","path":")") + path + R"(","value":1}])";
    SCOPED_TRACE(ops);
    EXPECT_TRUE(HasCode(Apply(ops, d), ErrorCode::kInvalidPatch));
  }
}

// ---- remove ----

TEST(PatchApplyTest, RemoveDeletesMembersAndArrayElements) {
  boost::json::value doc = kDoc;
  ASSERT_TRUE(IsOk(Apply(R"([{"op":"remove","path":"/title"},
                             {"op":"remove","path":"/tags/0"},
                             {"op":"remove","path":"/meta/views/count"}])",
                         doc)));
  EXPECT_EQ(doc.as_object().if_contains("title"), nullptr);
  EXPECT_EQ(doc.at("tags"), Json(R"(["y","z"])"));
  EXPECT_EQ(doc.at("meta").at("views"), Json("{}"));
  EXPECT_EQ(doc.at("id"), Json(R"("a")"));
}

TEST(PatchApplyTest, RemoveNeedsAnExistingTarget) {
  for (const char* path : {"/missing", "/meta/missing", "/tags/3", "/tags/-", "/tags/01"}) {
    boost::json::value doc = kDoc;
    std::string ops = std::string(R"([{"op":"remove","path":")") + path + R"("}])";
    SCOPED_TRACE(ops);
    EXPECT_TRUE(HasCode(Apply(ops, doc), ErrorCode::kInvalidPatch));
  }
}

// ---- incr ----

TEST(PatchApplyTest, IncrIntegerPlusIntegerStaysInteger) {
  boost::json::value doc = kDoc;
  ASSERT_TRUE(IsOk(Apply(R"([{"op":"incr","path":"/n","value":2}])", doc)));
  ASSERT_TRUE(doc.at("n").is_int64() || doc.at("n").is_uint64()) << Str(doc.at("n"));
  EXPECT_EQ(doc.at("n").to_number<int64_t>(), 7);
  ASSERT_TRUE(IsOk(Apply(R"([{"op":"incr","path":"/n","value":-10}])", doc)));
  ASSERT_TRUE(doc.at("n").is_int64()) << Str(doc.at("n"));
  EXPECT_EQ(doc.at("n").as_int64(), -3);
  EXPECT_EQ(Str(doc.at("n")), "-3");
}

TEST(PatchApplyTest, IncrWithADoubleGivesADouble) {
  boost::json::value doc = kDoc;
  ASSERT_TRUE(IsOk(Apply(R"([{"op":"incr","path":"/n","value":0.5}])", doc)));
  ASSERT_TRUE(doc.at("n").is_double()) << Str(doc.at("n"));
  EXPECT_DOUBLE_EQ(doc.at("n").as_double(), 5.5);

  ASSERT_TRUE(IsOk(Apply(R"([{"op":"incr","path":"/d","value":2}])", doc)));
  ASSERT_TRUE(doc.at("d").is_double()) << Str(doc.at("d"));
  EXPECT_DOUBLE_EQ(doc.at("d").as_double(), 3.5);
}

TEST(PatchApplyTest, IncrCreatesMissingTargetWithTheValue) {
  boost::json::value doc = kDoc;
  ASSERT_TRUE(IsOk(Apply(R"([{"op":"incr","path":"/likes","value":3},
                             {"op":"incr","path":"/meta/score","value":1.25}])",
                         doc)));
  ASSERT_TRUE(doc.at("likes").is_int64() || doc.at("likes").is_uint64()) << Str(doc);
  EXPECT_EQ(doc.at("likes").to_number<int64_t>(), 3);
  ASSERT_TRUE(doc.at("meta").at("score").is_double()) << Str(doc);
  EXPECT_DOUBLE_EQ(doc.at("meta").at("score").as_double(), 1.25);
}

TEST(PatchApplyTest, IncrOfArrayElementAndNested) {
  boost::json::value doc = Json(R"({"id":"a","postId":"p","v":[1,2],"m":{"c":{"d":10}}})");
  ASSERT_TRUE(IsOk(Apply(R"([{"op":"incr","path":"/v/1","value":40},
                             {"op":"incr","path":"/m/c/d","value":-1}])",
                         doc)));
  EXPECT_EQ(doc.at("v").as_array()[1].to_number<int64_t>(), 42);
  EXPECT_EQ(doc.at("m").at("c").at("d").to_number<int64_t>(), 9);
}

TEST(PatchApplyTest, IncrOfNonNumberFails) {
  for (const char* path : {"/title", "/flag", "/tags", "/meta"}) {
    boost::json::value doc = kDoc;
    std::string ops = std::string(R"([{"op":"incr","path":")") + path + R"(","value":1}])";
    SCOPED_TRACE(ops);
    EXPECT_TRUE(HasCode(Apply(ops, doc), ErrorCode::kInvalidPatch));
  }
  boost::json::value doc = Json(R"({"id":"a","postId":"p","z":null})");
  EXPECT_TRUE(
      HasCode(Apply(R"([{"op":"incr","path":"/z","value":1}])", doc), ErrorCode::kInvalidPatch));
}

// ---- shared rules ----

TEST(PatchApplyTest, MissingParentFailsForEveryOp) {
  for (const char* op : {"add", "set", "replace", "remove", "incr"}) {
    for (const char* path : {"/nope/x", "/meta/nope/x", "/title/x", "/n/x", "/tags/9/x"}) {
      boost::json::value doc = kDoc;
      std::string ops =
          std::string(R"([{"op":")") + op + R"(","path":")" + path + R"(","value":1}])";
      SCOPED_TRACE(ops);
      EXPECT_TRUE(HasCode(Apply(ops, doc), ErrorCode::kInvalidPatch));
      // Nothing was created on the way.
      EXPECT_EQ(doc.as_object().if_contains("nope"), nullptr);
    }
  }
}

TEST(PatchApplyTest, EscapedTokensAddressMembersWithSlashAndTilde) {
  boost::json::value doc = Json(R"({"id":"a","postId":"p","x/y":1})");
  ASSERT_TRUE(IsOk(Apply(R"([{"op":"set","path":"/a~1b","value":1},
                             {"op":"add","path":"/m~0n","value":2},
                             {"op":"incr","path":"/x~1y","value":5},
                             {"op":"set","path":"/~01","value":3}])",
                         doc)));
  EXPECT_EQ(doc.at("a/b"), Json("1"));
  EXPECT_EQ(doc.at("m~n"), Json("2"));
  EXPECT_EQ(doc.at("x/y").to_number<int64_t>(), 6);
  EXPECT_EQ(doc.at("~1"), Json("3"));
  EXPECT_EQ(doc.as_object().if_contains("a"), nullptr);
  EXPECT_EQ(doc.as_object().if_contains("m"), nullptr);
  ASSERT_TRUE(IsOk(Apply(R"([{"op":"remove","path":"/a~1b"}])", doc)));
  EXPECT_EQ(doc.as_object().if_contains("a/b"), nullptr);
}

TEST(PatchApplyTest, OpsApplyInOrderAndSeeEarlierOps) {
  boost::json::value doc = kDoc;
  ASSERT_TRUE(IsOk(Apply(R"([{"op":"set","path":"/c","value":1},
                             {"op":"incr","path":"/c","value":2},
                             {"op":"replace","path":"/c","value":10},
                             {"op":"incr","path":"/c","value":5},
                             {"op":"add","path":"/obj","value":{}},
                             {"op":"set","path":"/obj/k","value":"v"},
                             {"op":"remove","path":"/title"},
                             {"op":"add","path":"/title","value":"back"}])",
                         doc)));
  EXPECT_EQ(doc.at("c").to_number<int64_t>(), 15);
  EXPECT_EQ(doc.at("obj"), Json(R"({"k":"v"})"));
  EXPECT_EQ(doc.at("title"), Json(R"("back")"));
}

TEST(PatchApplyTest, FailureOfALaterOpIsReported) {
  boost::json::value doc = kDoc;
  EXPECT_TRUE(HasCode(Apply(R"([{"op":"set","path":"/c","value":1},
                                {"op":"remove","path":"/missing"}])",
                            doc),
                      ErrorCode::kInvalidPatch));
}

TEST(PatchApplyTest, UnchangedFieldsArePreserved) {
  boost::json::value doc = kDoc;
  ASSERT_TRUE(IsOk(Apply(R"([{"op":"set","path":"/title","value":"new"}])", doc)));
  boost::json::value expected = kDoc;
  expected.as_object()["title"] = "new";
  EXPECT_EQ(doc, expected);
}

// ---- numbers that are out of range (docs/api.md "Numbers") ----

TEST(PatchApplyTest, IncrIntegerOverflowIsInvalidNumber) {
  boost::json::value doc =
      Json(R"({"id":"a","postId":"p","m":-9223372036854775808,"u":18446744073709551615})");
  EXPECT_TRUE(
      HasCode(Apply(R"([{"op":"incr","path":"/u","value":1}])", doc), ErrorCode::kInvalidNumber));
  EXPECT_TRUE(
      HasCode(Apply(R"([{"op":"incr","path":"/m","value":-1}])", doc), ErrorCode::kInvalidNumber));
  EXPECT_EQ(Str(doc.at("m")), "-9223372036854775808");
  EXPECT_EQ(Str(doc.at("u")), "18446744073709551615");
}

TEST(PatchApplyTest, IncrPastInt64MaxStaysExact) {
  boost::json::value doc = Json(R"({"id":"a","postId":"p","n":9223372036854775807})");
  ASSERT_TRUE(IsOk(Apply(R"([{"op":"incr","path":"/n","value":1}])", doc)));
  EXPECT_EQ(Str(doc.at("n")), "9223372036854775808");  // not 9.223372036854776E18
}

TEST(PatchApplyTest, IncrIntegersStayExactAcrossInt64AndUint64) {
  boost::json::value doc =
      Json(R"({"id":"a","postId":"p","n":9223372036854775807,"u":18446744073709551615})");
  ASSERT_TRUE(IsOk(Apply(R"([{"op":"incr","path":"/u","value":-1}])", doc)));
  EXPECT_EQ(Str(doc.at("u")), "18446744073709551614");
  ASSERT_TRUE(IsOk(Apply(R"([{"op":"incr","path":"/n","value":9007199254740993}])", doc)));
  ASSERT_TRUE(doc.at("n").is_uint64()) << Str(doc.at("n"));
  EXPECT_EQ(Str(doc.at("n")), "9232379236109516800");
  ASSERT_TRUE(IsOk(Apply(R"([{"op":"incr","path":"/n","value":-9223372036854775807}])", doc)));
  ASSERT_TRUE(doc.at("n").is_int64()) << Str(doc.at("n"));
  EXPECT_EQ(doc.at("n").as_int64(), 9007199254740993);
}

TEST(PatchApplyTest, IncrToANonFiniteDoubleIsInvalidNumber) {
  boost::json::value doc = Json(R"({"id":"a","postId":"p","d":1e308,"arr":[-1e308]})");
  EXPECT_TRUE(HasCode(Apply(R"([{"op":"incr","path":"/d","value":1e308}])", doc),
                      ErrorCode::kInvalidNumber));
  EXPECT_TRUE(HasCode(Apply(R"([{"op":"incr","path":"/arr/0","value":-1e308}])", doc),
                      ErrorCode::kInvalidNumber));
  EXPECT_EQ(Str(doc.at("d")), "1E308");
}

TEST(PatchApplyTest, APatchedItemDeeperThanTheLimitIsInvalidJson) {
  // /a nests 60 levels below the item; a value of 5 more is too deep.
  std::string nested = "[]";
  for (int i = 1; i < 5; ++i) nested = "[" + nested + "]";
  boost::json::value doc = Json(R"({"id":"a","postId":"p"})");
  boost::json::value chain = boost::json::object{};
  for (size_t i = 2; i < kMaxItemDepth - 4; ++i)
    chain = boost::json::object{{"a", std::move(chain)}};
  doc.as_object()["a"] = std::move(chain);
  ASSERT_EQ(JsonDepth(doc), kMaxItemDepth - 4);
  std::string path;
  for (size_t i = 1; i < kMaxItemDepth - 4; ++i) path += "/a";
  path += "/x";
  // 4 levels more: at the limit, accepted.
  boost::json::value copy = doc;
  std::string four = "[[[[]]]]";
  ASSERT_TRUE(IsOk(Apply(R"([{"op":"set","path":")" + path + R"(","value":)" + four + "}]", copy)));
  EXPECT_EQ(JsonDepth(copy), kMaxItemDepth);
  EXPECT_TRUE(
      HasCode(Apply(R"([{"op":"set","path":")" + path + R"(","value":)" + nested + "}]", doc),
              ErrorCode::kInvalidJson));
}

}  // namespace
}  // namespace feedd
