// Unit tests of ParseQuerySpec (storage/query.h) against docs/api.md "Query",
// and of ValidateContainerSpec (storage/container_spec.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json.hpp>
#include <map>
#include <string>
#include <vector>

#include "storage/container_spec.h"
#include "storage/query.h"
#include "storage/store_options.h"
#include "tests/blog_scenario.h"
#include "tests/unit/test_util.h"

namespace feedd {
namespace {

using testutil::HasCode;
using testutil::IsOk;
using testutil::Json;
using Tokens = std::vector<std::string>;

TEST(ParseQuerySpecTest, EmptyBodyGivesDefaults) {
  Result<QuerySpec> q = ParseQuerySpec(Json("{}"));
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_FALSE(q->partition_key.has_value());
  EXPECT_TRUE(q->filters.empty());
  EXPECT_FALSE(q->order_by.has_value());
  EXPECT_FALSE(q->descending);
  EXPECT_EQ(q->limit, kDefaultQueryLimit);
  EXPECT_EQ(q->limit, 100u);
  EXPECT_EQ(q->continuation, "");
}

TEST(ParseQuerySpecTest, ParsesEveryField) {
  Result<QuerySpec> q = ParseQuerySpec(Json(R"({
      "partitionKey":"u1",
      "filter":{"type":"post","/meta/lang":"en","n":1,"b":true,"z":null,"f":2.5},
      "orderBy":"creationDate","descending":true,"limit":10,"continuation":"abc"})"));
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  ASSERT_TRUE(q->partition_key.has_value());
  EXPECT_EQ(*q->partition_key, "u1");
  ASSERT_TRUE(q->order_by.has_value());
  EXPECT_EQ(q->order_by->tokens(), (Tokens{"creationDate"}));
  EXPECT_TRUE(q->descending);
  EXPECT_EQ(q->limit, 10u);
  EXPECT_EQ(q->continuation, "abc");

  ASSERT_EQ(q->filters.size(), 6u);
  std::map<std::vector<std::string>, boost::json::value> filters;
  for (const FieldFilter& f : q->filters) filters[f.path.tokens()] = f.value;
  EXPECT_EQ(filters[(Tokens{"type"})], Json(R"("post")"));
  EXPECT_EQ(filters[(Tokens{"meta", "lang"})], Json(R"("en")"));
  EXPECT_EQ(filters[(Tokens{"n"})], Json("1"));
  EXPECT_EQ(filters[(Tokens{"b"})], Json("true"));
  EXPECT_TRUE(filters[(Tokens{"z"})].is_null());
  EXPECT_EQ(filters[(Tokens{"f"})], Json("2.5"));
}

TEST(ParseQuerySpecTest, NamesWithoutSlashAreTopLevelFields) {
  Result<QuerySpec> q = ParseQuerySpec(Json(R"({"filter":{"a/b":1,"m~n":2},"orderBy":"x/y"})"));
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  ASSERT_EQ(q->filters.size(), 2u);
  std::vector<Tokens> paths;
  for (const FieldFilter& f : q->filters) paths.push_back(f.path.tokens());
  std::sort(paths.begin(), paths.end());
  EXPECT_EQ(paths, (std::vector<Tokens>{{"a/b"}, {"m~n"}}));
  ASSERT_TRUE(q->order_by.has_value());
  EXPECT_EQ(q->order_by->tokens(), (Tokens{"x/y"}));
}

TEST(ParseQuerySpecTest, OrderByPointer) {
  Result<QuerySpec> q = ParseQuerySpec(Json(R"({"orderBy":"/meta/rank","descending":false})"));
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  ASSERT_TRUE(q->order_by.has_value());
  EXPECT_EQ(q->order_by->tokens(), (Tokens{"meta", "rank"}));
  EXPECT_FALSE(q->descending);
}

TEST(ParseQuerySpecTest, NullContinuationIsTheFirstPage) {
  Result<QuerySpec> q = ParseQuerySpec(Json(R"({"continuation":null})"));
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_EQ(q->continuation, "");
}

TEST(ParseQuerySpecTest, LimitBounds) {
  for (const char* ok : {R"({"limit":1})", R"({"limit":1000})", R"({"limit":500})"}) {
    SCOPED_TRACE(ok);
    Result<QuerySpec> q = ParseQuerySpec(Json(ok));
    ASSERT_TRUE(q.ok()) << q.status().ToString();
    EXPECT_EQ(q->limit, Json(ok).at("limit").to_number<size_t>());
  }
  for (const char* bad : {R"({"limit":0})", R"({"limit":1001})", R"({"limit":-1})",
                          R"({"limit":"10"})", R"({"limit":1.5})", R"({"limit":true})"}) {
    SCOPED_TRACE(bad);
    EXPECT_TRUE(HasCode(ParseQuerySpec(Json(bad)).status(), ErrorCode::kInvalidQuery));
  }
}

TEST(ParseQuerySpecTest, RejectsMalformedBodies) {
  for (const char* bad : {
           R"([])",
           R"("q")",
           R"(null)",
           R"({"partitionKey":5})",
           R"({"filter":[]})",
           R"({"filter":"type"})",
           R"({"filter":{"type":{"a":1}}})",
           R"({"filter":{"type":[1]}})",
           R"({"filter":{"/a~2":1}})",
           R"({"orderBy":5})",
           R"({"orderBy":"/a~2"})",
           R"({"descending":"yes"})",
           R"({"continuation":5})",
       }) {
    SCOPED_TRACE(bad);
    EXPECT_TRUE(HasCode(ParseQuerySpec(Json(bad)).status(), ErrorCode::kInvalidQuery));
  }
}

// The engine knows no scenario: the containers come from the configuration.
TEST(ContainerSpecTest, StoreOptionsDeclareNoContainer) {
  EXPECT_TRUE(StoreOptions().containers.empty());
}

TEST(ContainerSpecTest, TheBlogContainersAreValid) {
  for (const ContainerSpec& s : BlogContainers()) {
    EXPECT_TRUE(IsOk(ValidateContainerSpec(s))) << s.name;
  }
}

TEST(QuerySpecTest, CanonicalTextTellsSpecsApartExactlyWhenTheyDiffer) {
  auto spec = [](std::string_view body) {
    Result<QuerySpec> s = ParseQuerySpec(Json(body));
    EXPECT_TRUE(s.ok()) << body;
    return s.ok() ? *s : QuerySpec{};
  };
  const std::string base = CanonicalQueryText(spec(
      R"({"partitionKey":"p","filter":{"type":"post"},"orderBy":"creationDate","descending":true})"));
  // The same query written differently.
  EXPECT_EQ(
      CanonicalQueryText(spec(
          R"({"descending":true,"orderBy":"/creationDate","filter":{"/type":"post"},"partitionKey":"p"})")),
      base);
  for (
      const char* other :
      {R"({"partitionKey":"q","filter":{"type":"post"},"orderBy":"creationDate","descending":true})",
       R"({"filter":{"type":"post"},"orderBy":"creationDate","descending":true})",
       R"({"partitionKey":"","filter":{"type":"post"},"orderBy":"creationDate","descending":true})",
       R"({"partitionKey":"p","filter":{"type":"like"},"orderBy":"creationDate","descending":true})",
       R"({"partitionKey":"p","filter":{"kind":"post"},"orderBy":"creationDate","descending":true})",
       R"({"partitionKey":"p","orderBy":"creationDate","descending":true})",
       R"({"partitionKey":"p","filter":{"type":"post"},"orderBy":"title","descending":true})",
       R"({"partitionKey":"p","filter":{"type":"post"},"descending":true})",
       R"({"partitionKey":"p","filter":{"type":"post"},"orderBy":"creationDate"})",
       R"({"partitionKey":"p","filter":{"type":"post"},"orderBy":"creationDate","descending":true,"limit":5})",
       R"({"partitionKey":"p","filter":{"type":"post"},"orderBy":"creationDate","descending":true,"continuation":"00"})"}) {
    SCOPED_TRACE(other);
    EXPECT_NE(CanonicalQueryText(spec(other)), base);
  }
}

TEST(ContainerSpecTest, ValidatesNames) {
  for (const char* good : {"a", "posts", "a1", "a-b_c", "z0-_"}) {
    SCOPED_TRACE(good);
    EXPECT_TRUE(IsOk(ValidateContainerSpec({good, "/pk", {}})));
  }
  EXPECT_TRUE(IsOk(ValidateContainerSpec({"a" + std::string(62, 'b'), "/pk", {}})));
  for (std::string bad : {"", "1a", "-a", "_a", "Posts", "a b", "a.b", "a/b", "\xC3\xA9"}) {
    SCOPED_TRACE(bad);
    EXPECT_FALSE(ValidateContainerSpec({bad, "/pk", {}}).ok());
  }
  EXPECT_FALSE(ValidateContainerSpec({"a" + std::string(63, 'b'), "/pk", {}}).ok());
}

TEST(ContainerSpecTest, ValidatesPointersAndIndexes) {
  EXPECT_TRUE(IsOk(ValidateContainerSpec({"c", "/a/b", {"/x", "/y/z"}})));
  EXPECT_FALSE(ValidateContainerSpec({"c", "pk", {}}).ok());
  EXPECT_FALSE(ValidateContainerSpec({"c", "/a~2", {}}).ok());
  EXPECT_FALSE(ValidateContainerSpec({"c", "/pk", {"x"}}).ok());
  EXPECT_FALSE(ValidateContainerSpec({"c", "/pk", {"/x", "/x"}}).ok());  // duplicate
  EXPECT_FALSE(ValidateContainerSpec({"c", "/pk", {"/pk"}}).ok());       // index on the pk
}

}  // namespace
}  // namespace feedd
