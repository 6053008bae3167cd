// Unit tests of item validation (storage/prepared_item.h): id rules,
// partition key rules, expected pk/id, '_' properties and the size limit.
#include "storage/prepared_item.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tests/unit/test_util.h"
#include "util/json_parse.h"

namespace feedd {
namespace {

using testutil::HasCode;
using testutil::IsOk;
using testutil::Json;
using testutil::Obj;
using testutil::Str;

constexpr size_t kMax = 2 * 1024 * 1024;
const ContainerSpec kPosts{"posts", "/postId", {"/userId"}};
const ContainerSpec kOrders{"orders", "/customer/id", {}};

Result<PreparedItem> Prep(const boost::json::object& body,
                          std::optional<std::string_view> pk = std::nullopt,
                          std::optional<std::string_view> id = std::nullopt, size_t max = kMax,
                          const ContainerSpec& spec = kPosts) {
  return PrepareItem(spec, body, pk, id, max);
}

boost::json::object WithId(boost::json::value id) {
  boost::json::object o{{"postId", "p"}, {"title", "t"}};
  o["id"] = std::move(id);
  return o;
}

TEST(PrepareItemTest, AcceptsAValidItem) {
  Result<PreparedItem> r = Prep(Obj(R"({"id":"a1","postId":"p1","title":"t","n":[1,{"x":null}]})"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->id, "a1");
  EXPECT_EQ(r->partition_key, "p1");
  EXPECT_EQ(Json(r->body_json),
            Json(R"({"id":"a1","postId":"p1","title":"t","n":[1,{"x":null}]})"));
}

TEST(PrepareItemTest, StripsTopLevelUnderscoreProperties) {
  Result<PreparedItem> r = Prep(Obj(
      R"({"_etag":"\"9\"","id":"a","_lsn":5,"postId":"p","_ts":1,"_":0,"_rid":{"x":1},
          "a_b":1,"nested":{"_keep":true}})"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Json(r->body_json), Json(R"({"id":"a","postId":"p","a_b":1,"nested":{"_keep":true}})"));
}

// A client cannot mark an item as derived; a processor's write (sourceLsn)
// keeps a well-formed _source (storage/derived_items.h).
TEST(PrepareItemTest, OnlyAProcessorsWriteKeepsAWellFormedSource) {
  const char* body =
      R"({"id":"a","postId":"p","_source":{"container":"posts","partitionKey":"q","id":"a"}})";
  Result<PreparedItem> client = Prep(Obj(body));
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  EXPECT_EQ(Json(client->body_json), Json(R"({"id":"a","postId":"p"})"));
  Result<PreparedItem> processor =
      PrepareItem(kPosts, Obj(body), std::nullopt, std::nullopt, kMax, 7);
  ASSERT_TRUE(processor.ok()) << processor.status().ToString();
  EXPECT_EQ(Json(processor->body_json),
            Json(R"({"id":"a","postId":"p","_sourceLsn":7,)"
                 R"("_source":{"container":"posts","partitionKey":"q","id":"a"}})"));
  for (
      const char* bad :
      {R"({"id":"a","postId":"p","_source":"posts/q/a"})",
       R"({"id":"a","postId":"p","_source":{"container":"posts","id":"a"}})",
       R"({"id":"a","postId":"p","_source":{"container":"posts","partitionKey":1,"id":"a"}})",
       R"({"id":"a","postId":"p","_source":{"container":"posts","partitionKey":"q","id":"a","x":1}})"}) {
    EXPECT_TRUE(HasCode(PrepareItem(kPosts, Obj(bad), std::nullopt, std::nullopt, kMax, 7).status(),
                        ErrorCode::kInvalidItem))
        << bad;
  }
}

TEST(PrepareItemTest, BodyKeepsClientPropertyOrder) {
  Result<PreparedItem> r = Prep(Obj(R"({"z":1,"id":"a","m":2,"postId":"p","a":3})"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const boost::json::object body = Obj(r->body_json);
  std::vector<std::string> keys;
  for (const auto& kv : body) keys.emplace_back(kv.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"z", "id", "m", "postId", "a"}));
}

TEST(PrepareItemTest, IdLengthBounds) {
  EXPECT_TRUE(IsOk(Prep(WithId("a")).status()));
  EXPECT_TRUE(IsOk(Prep(WithId(std::string(255, 'x').c_str())).status()));
  EXPECT_TRUE(HasCode(Prep(WithId(std::string(256, 'x').c_str())).status(), ErrorCode::kInvalidId));
  EXPECT_TRUE(HasCode(Prep(WithId("")).status(), ErrorCode::kInvalidId));
  // Bytes, not characters: 128 two-byte characters are 256 bytes.
  std::string e_acute;
  for (int i = 0; i < 128; ++i) e_acute += "\xC3\xA9";
  EXPECT_TRUE(HasCode(Prep(WithId(e_acute.c_str())).status(), ErrorCode::kInvalidId));
  EXPECT_TRUE(IsOk(Prep(WithId(e_acute.substr(2).c_str())).status()));
}

TEST(PrepareItemTest, IdForbiddenCharacters) {
  const std::vector<std::string> bad_ids = {
      "a/b", "a\\b", "a?b", "a#b", "/", "a\nb", "a\tb", "\x01", "a\x1f", std::string("a\0b", 3)};
  for (const std::string& bad : bad_ids) {
    SCOPED_TRACE(testing::PrintToString(bad));
    boost::json::object body = WithId(boost::json::string(bad));
    EXPECT_TRUE(HasCode(Prep(body).status(), ErrorCode::kInvalidId));
    EXPECT_TRUE(HasCode(ValidateId(bad), ErrorCode::kInvalidId));
  }
}

TEST(PrepareItemTest, IdAllowedCharacters) {
  for (const char* good : {"a", "A-b_c.d~e", "with space", "%41", "caf\xC3\xA9", "\xF0\x9F\x98\x80",
                           "1", "a:b;c,d", "'quoted'", "\"dq\"", "a+b=c&d"}) {
    SCOPED_TRACE(good);
    EXPECT_TRUE(IsOk(ValidateId(good)));
    EXPECT_TRUE(IsOk(Prep(WithId(good)).status()));
  }
}

TEST(PrepareItemTest, ValidateIdLengthBounds) {
  EXPECT_TRUE(IsOk(ValidateId(std::string(255, 'a'))));
  EXPECT_TRUE(HasCode(ValidateId(std::string(256, 'a')), ErrorCode::kInvalidId));
  EXPECT_TRUE(HasCode(ValidateId(""), ErrorCode::kInvalidId));
}

TEST(PrepareItemTest, NonStringIdIsInvalidId) {
  for (const char* id : {"5", "null", "true", "{}", "[\"a\"]", "1.5"}) {
    SCOPED_TRACE(id);
    EXPECT_TRUE(HasCode(Prep(WithId(Json(id))).status(), ErrorCode::kInvalidId));
  }
}

TEST(PrepareItemTest, MissingIdIsRejected) {
  Status s = Prep(Obj(R"({"postId":"p","title":"t"})")).status();
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(s.code() == ErrorCode::kInvalidId || s.code() == ErrorCode::kInvalidItem)
      << s.ToString();
}

TEST(PrepareItemTest, PartitionKeyMustBeAPresentString) {
  EXPECT_TRUE(HasCode(Prep(Obj(R"({"id":"a"})")).status(), ErrorCode::kInvalidPartitionKey));
  for (const char* pk : {"5", "null", "true", "{}", "[\"p\"]", "\"\""}) {
    SCOPED_TRACE(pk);
    boost::json::object body = Obj(R"({"id":"a"})");
    body["postId"] = Json(pk);
    EXPECT_TRUE(HasCode(Prep(body).status(), ErrorCode::kInvalidPartitionKey));
  }
}

TEST(PrepareItemTest, PartitionKeyLengthBounds) {
  boost::json::object body = Obj(R"({"id":"a"})");
  body["postId"] = std::string(2048, 'p');
  Result<PreparedItem> ok = Prep(body);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->partition_key, std::string(2048, 'p'));
  body["postId"] = std::string(2049, 'p');
  EXPECT_TRUE(HasCode(Prep(body).status(), ErrorCode::kInvalidPartitionKey));

  EXPECT_TRUE(IsOk(ValidatePartitionKeyValue("p")));
  EXPECT_TRUE(IsOk(ValidatePartitionKeyValue(std::string(2048, 'p'))));
  EXPECT_TRUE(HasCode(ValidatePartitionKeyValue(""), ErrorCode::kInvalidPartitionKey));
  EXPECT_TRUE(
      HasCode(ValidatePartitionKeyValue(std::string(2049, 'p')), ErrorCode::kInvalidPartitionKey));
}

TEST(PrepareItemTest, NestedPartitionKeyPath) {
  Result<PreparedItem> r =
      Prep(Obj(R"({"id":"o1","customer":{"id":"c1","name":"n"}})"), {}, {}, kMax, kOrders);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->partition_key, "c1");
  EXPECT_EQ(r->id, "o1");

  for (const char* bad :
       {R"({"id":"o1"})", R"({"id":"o1","customer":"c1"})", R"({"id":"o1","customer":{}})",
        R"({"id":"o1","customer":{"id":7}})", R"({"id":"o1","customer":["c1"]})"}) {
    SCOPED_TRACE(bad);
    EXPECT_TRUE(
        HasCode(Prep(Obj(bad), {}, {}, kMax, kOrders).status(), ErrorCode::kInvalidPartitionKey));
  }
}

TEST(PrepareItemTest, ExpectedPartitionKeyMustMatch) {
  const boost::json::object body = Obj(R"({"id":"a","postId":"p1"})");
  EXPECT_TRUE(IsOk(Prep(body, "p1").status()));
  EXPECT_TRUE(HasCode(Prep(body, "p2").status(), ErrorCode::kPartitionKeyMismatch));
  EXPECT_TRUE(HasCode(Prep(body, "P1").status(), ErrorCode::kPartitionKeyMismatch));
  EXPECT_TRUE(HasCode(Prep(body, "p1 ").status(), ErrorCode::kPartitionKeyMismatch));
}

TEST(PrepareItemTest, ExpectedIdMustMatch) {
  const boost::json::object body = Obj(R"({"id":"a","postId":"p1"})");
  EXPECT_TRUE(IsOk(Prep(body, "p1", "a").status()));
  EXPECT_TRUE(IsOk(Prep(body, std::nullopt, "a").status()));
  EXPECT_TRUE(HasCode(Prep(body, "p1", "b").status(), ErrorCode::kInvalidId));
  EXPECT_TRUE(HasCode(Prep(body, std::nullopt, "A").status(), ErrorCode::kInvalidId));
}

TEST(PrepareItemTest, SizeLimitAppliesToTheBodyWithoutSystemProperties) {
  boost::json::object body = Obj(R"({"id":"a","postId":"p"})");
  body["text"] = std::string(1000, 'x');
  const size_t size = boost::json::serialize(body).size();

  EXPECT_TRUE(IsOk(Prep(body, {}, {}, size).status()));  // at most max_item_bytes
  EXPECT_TRUE(IsOk(Prep(body, {}, {}, size + 1).status()));
  EXPECT_TRUE(HasCode(Prep(body, {}, {}, size - 1).status(), ErrorCode::kPayloadTooLarge));
  EXPECT_TRUE(HasCode(Prep(body, {}, {}, 100).status(), ErrorCode::kPayloadTooLarge));

  // '_' properties are dropped before the size is checked.
  boost::json::object padded = body;
  padded["_padding"] = std::string(5000, 'y');
  Result<PreparedItem> r = Prep(padded, {}, {}, size);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_LE(r->body_json.size(), size);
  EXPECT_EQ(Json(r->body_json), boost::json::value(body));
}

// A copy of an item that fits must fit too: a derived item's _source and
// _sourceLsn are system properties, which max_item_bytes does not count.
// (Counted, one post near the limit made the feed's copy fail, and the
// change parked every later change of `feed`, whose key is one.)
TEST(PrepareItemTest, SizeLimitDoesNotCountADerivedItemsSystemProperties) {
  boost::json::object body = Obj(R"({"id":"a","postId":"p"})");
  body["text"] = std::string(1000, 'x');
  const size_t size = boost::json::serialize(body).size();
  boost::json::object copy = body;
  copy["_sourceLsn"] = 12345;
  copy["_source"] = Obj(R"({"container":"posts","partitionKey":"p","id":"a"})");
  Result<PreparedItem> r = PrepareDerivedItem(kPosts, copy, size);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_GT(r->body_json.size(), size);
  EXPECT_TRUE(
      HasCode(PrepareDerivedItem(kPosts, copy, size - 1).status(), ErrorCode::kPayloadTooLarge));
  // A processor's write over HTTP (sourceLsn) counts the same way.
  Result<PreparedItem> remote = PrepareItem(kPosts, copy, std::nullopt, std::nullopt, size, 12345);
  ASSERT_TRUE(remote.ok()) << remote.status().ToString();
}

TEST(PrepareItemTest, StripSystemPropertiesRemovesOnlyTopLevelUnderscoreNames) {
  boost::json::object o = Obj(R"({"_a":1,"b":{"_c":2},"d_":3,"_":4,"e":[{"_f":5}]})");
  StripSystemProperties(o);
  EXPECT_EQ(boost::json::value(o), Json(R"({"b":{"_c":2},"d_":3,"e":[{"_f":5}]})"));

  boost::json::object empty;
  StripSystemProperties(empty);
  EXPECT_TRUE(empty.empty());
}

TEST(PrepareItemTest, SystemPropertyCannotStandInForIdOrPartitionKey) {
  // Only "id" and the partition key path count; lookalikes do not.
  EXPECT_FALSE(Prep(Obj(R"({"_id":"a","postId":"p"})")).ok());
  EXPECT_TRUE(
      HasCode(Prep(Obj(R"({"id":"a","_postId":"p"})")).status(), ErrorCode::kInvalidPartitionKey));
}

// An item whose "deep" member nests `depth` - 1 arrays, so the item nests
// `depth` levels.
boost::json::object ItemOfDepth(size_t depth) {
  boost::json::value deep = boost::json::array{};
  for (size_t i = 2; i < depth; ++i) deep = boost::json::array{std::move(deep)};
  boost::json::object o{{"id", "a"}, {"postId", "p"}};
  o["deep"] = std::move(deep);
  return o;
}

TEST(PrepareItemTest, ItemDepthLimit) {
  ASSERT_EQ(JsonDepth(ItemOfDepth(kMaxItemDepth)), kMaxItemDepth);
  Result<PreparedItem> ok = Prep(ItemOfDepth(kMaxItemDepth));
  ASSERT_TRUE(IsOk(ok.status()));
  // What was accepted reads back.
  EXPECT_TRUE(ParseJson(ok->body_json).ok());
  EXPECT_TRUE(HasCode(Prep(ItemOfDepth(kMaxItemDepth + 1)).status(), ErrorCode::kInvalidJson));
  EXPECT_TRUE(HasCode(PrepareDerivedItem(kPosts, ItemOfDepth(kMaxItemDepth + 1), kMax).status(),
                      ErrorCode::kInvalidJson));
}

TEST(PrepareItemTest, IdAndPartitionKeyMustBeValidUtf8) {
  for (std::string_view bad : {std::string_view("a\xE2\x82"), std::string_view("\xFF"),
                               std::string_view("\xC0\xAF"), std::string_view("\xED\xA0\x80")}) {
    Status s = ValidateId(bad);
    EXPECT_TRUE(HasCode(s, ErrorCode::kInvalidId)) << bad;
    EXPECT_TRUE(HasCode(ValidatePartitionKeyValue(bad), ErrorCode::kInvalidPartitionKey)) << bad;
  }
  EXPECT_TRUE(IsOk(ValidateId("caf\xC3\xA9-\xE2\x82\xAC-\xF0\x9F\x98\x80")));
  EXPECT_TRUE(IsOk(ValidatePartitionKeyValue("caf\xC3\xA9")));
}

}  // namespace
}  // namespace feedd
