// Unit tests of storage/query_semantics.h: what a filter selects and how
// rows are ordered, and that the query engine answers exactly that on a
// real store (the view contexts that answer queries themselves use the same
// functions).
#include "storage/query_semantics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "storage/document_store.h"
#include "storage/prepared_item.h"
#include "tests/blog_scenario.h"
#include "tests/unit/test_util.h"

namespace feedd {
namespace {

using testutil::Json;
using testutil::Obj;
using testutil::Ptr;
using testutil::TempDir;

FieldFilter Filter(std::string_view path, boost::json::value value) {
  return FieldFilter{Ptr(path), std::move(value)};
}

TEST(QuerySemanticsTest, AFilterComparesNumbersByValueAndEverythingElseExactly) {
  const boost::json::object item = Obj(R"({"n":1.0,"i":2,"s":"1","b":true,"z":null,
                                           "o":{"deep":3}})");
  EXPECT_TRUE(MatchesFilters(item, {Filter("/n", 1)}));
  EXPECT_TRUE(MatchesFilters(item, {Filter("/i", 2.0)}));
  EXPECT_FALSE(MatchesFilters(item, {Filter("/n", 1.5)}));
  EXPECT_FALSE(MatchesFilters(item, {Filter("/s", 1)})) << "a string is not a number";
  EXPECT_FALSE(MatchesFilters(item, {Filter("/n", "1")}));
  EXPECT_TRUE(MatchesFilters(item, {Filter("/b", true)}));
  EXPECT_TRUE(MatchesFilters(item, {Filter("/z", nullptr)}));
  EXPECT_FALSE(MatchesFilters(item, {Filter("/missing", nullptr)})) << "missing is not null";
  EXPECT_TRUE(MatchesFilters(item, {Filter("/o/deep", 3), Filter("/i", 2)}));
  EXPECT_FALSE(MatchesFilters(item, {Filter("/o/deep", 3), Filter("/i", 3)}));
  EXPECT_TRUE(MatchesFilters(item, {}));
}

TEST(QuerySemanticsTest, RowsGoBySortValueThenRowKeyAndDescendingReversesBoth) {
  const boost::json::value one = 1, two = 2.0;
  const std::string a = QueryRowKey("b", "x"), b = QueryRowKey("aa", "x");
  EXPECT_LT(CompareQueryRows(&one, b, &two, a, false), 0);
  EXPECT_LT(CompareQueryRows(nullptr, b, &one, a, false), 0) << "missing first";
  // Equal sort values: the shorter partition key first, then bytewise.
  EXPECT_LT(CompareQueryRows(&one, a, &one, b, false), 0);
  EXPECT_LT(CompareQueryRows(&one, QueryRowKey("b", "x"), &one, QueryRowKey("c", "a"), false), 0);
  EXPECT_EQ(CompareQueryRows(&one, a, &one, a, false), 0);
  EXPECT_GT(CompareQueryRows(&one, a, &one, b, true), 0);
  EXPECT_GT(CompareQueryRows(&one, b, &two, a, true), 0);
}

// The engine's answers equal the items the semantics select, in its order,
// for ordered and unordered queries across partitions of different lengths.
TEST(QuerySemanticsTest, TheQueryEngineAnswersWhatTheSemanticsSay) {
  TempDir dir;
  StoreOptions options;
  options.data_dir = dir.path();
  options.containers = BlogContainers();
  options.sync = false;
  options.block_cache_bytes = 8u << 20;
  Result<std::unique_ptr<DocumentStore>> opened = DocumentStore::Open(options);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  std::unique_ptr<DocumentStore> store = std::move(*opened);
  const ContainerSpec* users = store->FindContainer("users");
  const std::vector<std::string> bodies = {R"({"userId":"b","id":"1","n":1,"rank":5})",
                                           R"({"userId":"aa","id":"1","n":1.0,"rank":5})",
                                           R"({"userId":"c","id":"0","n":2,"rank":5})",
                                           R"({"userId":"aa","id":"2","n":1,"rank":1})",
                                           R"({"userId":"ddd","id":"9","n":1.0})",
                                           R"({"userId":"b","id":"0","n":"1","rank":0})",
                                           R"({"userId":"b","id":"3","n":1,"rank":"high"})"};
  std::vector<boost::json::object> items;
  for (const auto& text : bodies) {
    boost::json::object body = Obj(text);
    Result<PreparedItem> item = PrepareItem(*users, body, std::nullopt, std::nullopt, 1 << 20);
    ASSERT_TRUE(item.ok()) << item.status().ToString();
    WriteOp op;
    op.kind = WriteOpKind::kCreate;
    op.item = std::move(*item);
    ASSERT_TRUE(store->Write({"users", std::string(body["userId"].as_string()), {op}}).status.ok());
    items.push_back(std::move(body));
  }
  auto key_of = [](const boost::json::object& item) {
    return QueryRowKey(item.at("userId").as_string(), item.at("id").as_string());
  };
  for (bool ordered : {false, true}) {
    for (bool descending : {false, true}) {
      SCOPED_TRACE(std::string(ordered ? "ordered" : "unordered") +
                   (descending ? " descending" : ""));
      QuerySpec spec;
      spec.filters = {Filter("/n", 1)};
      if (ordered) spec.order_by = Ptr("/rank");
      spec.descending = descending && ordered;
      std::vector<const boost::json::object*> expected;
      for (const auto& item : items) {
        if (MatchesFilters(item, spec.filters)) expected.push_back(&item);
      }
      std::sort(expected.begin(), expected.end(), [&](const auto* a, const auto* b) {
        return CompareQueryRows(ordered ? a->if_contains("rank") : nullptr, key_of(*a),
                                ordered ? b->if_contains("rank") : nullptr, key_of(*b),
                                spec.descending) < 0;
      });
      Result<QueryResult> answer = store->Query("users", spec);
      ASSERT_TRUE(answer.ok()) << answer.status().ToString();
      std::vector<std::string> got, want;
      for (const auto& json : answer->items) {
        boost::json::object item = Json(json).as_object();
        got.push_back(key_of(item));
      }
      for (const auto* item : expected) want.push_back(key_of(*item));
      EXPECT_EQ(got.size(), 5u);
      EXPECT_EQ(got, want);
    }
  }
  store->Close();
}

}  // namespace
}  // namespace feedd
