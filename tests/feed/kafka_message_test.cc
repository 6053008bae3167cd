#include "feed/kafka_message.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <string>

#include "util/json_parse.h"

namespace feedd {
namespace {

ChangeRecord Record(ChangeOp op, const std::string& before, const std::string& after) {
  ChangeRecord r;
  r.lsn = 42;
  r.ts_ms = 1000;
  r.op = op;
  r.container = "posts";
  r.partition_key = "p1";
  r.id = "c1";
  r.envelope_json = "{\"lsn\":42,\"op\":\"" + std::string(ChangeOpName(op)) +
                    "\",\"container\":\"posts\",\"partitionKey\":\"p1\",\"id\":\"c1\",\"ts\":1000,"
                    "\"before\":" +
                    before + ",\"after\":" + after + "}";
  return r;
}

TEST(KafkaMessageTest, NativeIsTheStoredEnvelope) {
  KafkaOptions options;
  ChangeRecord r = Record(ChangeOp::kCreate, "null", R"({"id":"c1","postId":"p1"})");
  KafkaMessage m = EncodeChange(options, r);
  EXPECT_EQ(m.topic, "feedd.posts");
  EXPECT_EQ(m.key, "p1");
  ASSERT_TRUE(m.value);
  EXPECT_EQ(*m.value, r.envelope_json);
  EXPECT_EQ(m.size_class, EnvelopeSize::kFull);
}

TEST(KafkaMessageTest, DebeziumFields) {
  KafkaOptions options;
  options.envelope = EnvelopeFormat::kDebezium;
  options.instance_name = "node-a";
  for (auto [op, code] : {std::pair{ChangeOp::kCreate, "c"}, std::pair{ChangeOp::kReplace, "u"},
                          std::pair{ChangeOp::kDelete, "d"}}) {
    std::string before = op == ChangeOp::kCreate ? "null" : R"({"id":"c1","v":1})";
    std::string after = op == ChangeOp::kDelete ? "null" : R"({"id":"c1","v":2})";
    KafkaMessage m = EncodeChange(options, Record(op, before, after));
    auto v = boost::json::parse(*m.value).as_object();
    EXPECT_EQ(v["op"].as_string(), code);
    EXPECT_EQ(v["ts_ms"].to_number<int64_t>(), 1000);
    EXPECT_EQ(boost::json::serialize(v["before"]), before);
    EXPECT_EQ(boost::json::serialize(v["after"]), after);
    auto& source = v["source"].as_object();
    EXPECT_EQ(source["connector"].as_string(), "feedd");
    EXPECT_EQ(source["name"].as_string(), "node-a");
    EXPECT_EQ(source["container"].as_string(), "posts");
    EXPECT_EQ(source["lsn"].to_number<int64_t>(), 42);
    EXPECT_EQ(source["partitionKey"].as_string(), "p1");
    EXPECT_EQ(source["id"].as_string(), "c1");
  }
}

// An imported item's change ("import": true in the native envelope) is
// Debezium's snapshot read; other changes have no snapshot marker.
TEST(KafkaMessageTest, DebeziumSaysSnapshotReadForAnImportedItem) {
  KafkaOptions options;
  options.envelope = EnvelopeFormat::kDebezium;
  ChangeRecord imported = Record(ChangeOp::kCreate, "null", R"({"id":"c1","postId":"p1"})");
  imported.envelope_json.replace(imported.envelope_json.find(",\"before\""), 0, ",\"import\":true");
  auto v = boost::json::parse(*EncodeChange(options, imported).value).as_object();
  EXPECT_EQ(v["op"].as_string(), "r");
  EXPECT_EQ(v["source"].as_object()["snapshot"].as_string(), "true");
  EXPECT_EQ(boost::json::serialize(v["after"]), R"({"id":"c1","postId":"p1"})");

  auto plain =
      boost::json::parse(
          *EncodeChange(options, Record(ChangeOp::kCreate, "null", R"({"id":"c1"})")).value)
          .as_object();
  EXPECT_EQ(plain["op"].as_string(), "c");
  EXPECT_FALSE(plain["source"].as_object().contains("snapshot"));

  // The native envelope is sent as stored, the marker included.
  KafkaOptions native;
  EXPECT_EQ(*EncodeChange(native, imported).value, imported.envelope_json);
}

TEST(KafkaMessageTest, LargeEnvelopeDropsBeforeImageFirst) {
  KafkaOptions options;
  options.max_envelope_bytes = 1000;
  std::string big = "{\"id\":\"c1\",\"pad\":\"" + std::string(900, 'x') + "\"}";
  KafkaMessage m = EncodeChange(options, Record(ChangeOp::kReplace, big, R"({"id":"c1"})"));
  EXPECT_EQ(m.size_class, EnvelopeSize::kBeforeOmitted);
  auto v = boost::json::parse(*m.value).as_object();
  EXPECT_TRUE(v["before"].is_null());
  EXPECT_EQ(v["beforeOmitted"], true);
  EXPECT_EQ(boost::json::serialize(v["after"]), R"({"id":"c1"})");
  EXPECT_LE(m.value->size(), 1000u);
}

TEST(KafkaMessageTest, HugeEnvelopeBecomesReferenceOnly) {
  KafkaOptions options;
  options.max_envelope_bytes = 1000;
  std::string big = "{\"id\":\"c1\",\"pad\":\"" + std::string(2000, 'x') + "\"}";
  for (auto format : {EnvelopeFormat::kNative, EnvelopeFormat::kDebezium}) {
    options.envelope = format;
    KafkaMessage m = EncodeChange(options, Record(ChangeOp::kReplace, big, big));
    EXPECT_EQ(m.size_class, EnvelopeSize::kReferenceOnly);
    auto v = boost::json::parse(*m.value).as_object();
    EXPECT_TRUE(v["before"].is_null());
    EXPECT_TRUE(v["after"].is_null());
    auto& flags = format == EnvelopeFormat::kNative ? v : v["source"].as_object();
    EXPECT_EQ(flags["beforeOmitted"], true);
    EXPECT_EQ(flags["afterOmitted"], true);
  }
}

TEST(KafkaMessageTest, TombstoneHasKeyAndNoValue) {
  KafkaOptions options;
  options.topic_prefix = "x.";
  KafkaMessage m = EncodeTombstone(options, Record(ChangeOp::kDelete, "{}", "null"));
  EXPECT_EQ(m.topic, "x.posts");
  EXPECT_EQ(m.key, "p1");
  EXPECT_FALSE(m.value.has_value());
}

// An older version stored 1e309 as Infinity, which no JSON parser reads:
// re-encoding must not throw (it aborted the daemon on every start).
TEST(KafkaMessageTest, UndecodableEnvelopeIsSentReferenceOnly) {
  std::string big = "{\"id\":\"c1\",\"v\":Infinity,\"pad\":\"" + std::string(2000, 'x') + "\"}";
  for (auto format : {EnvelopeFormat::kNative, EnvelopeFormat::kDebezium}) {
    KafkaOptions options;
    options.max_envelope_bytes = 1000;
    options.envelope = format;
    KafkaMessage m = EncodeChange(options, Record(ChangeOp::kCreate, "null", big));
    ASSERT_TRUE(m.decode_error.has_value());
    EXPECT_EQ(m.size_class, EnvelopeSize::kReferenceOnly);
    ASSERT_TRUE(m.value);
    auto v = ParseJson(*m.value);
    ASSERT_TRUE(v.ok()) << *m.value;
    auto& o = v->as_object();
    EXPECT_TRUE(o.at("after").is_null());
    auto& keys = format == EnvelopeFormat::kNative ? o : o.at("source").as_object();
    EXPECT_EQ(keys.at("lsn").to_number<int64_t>(), 42);
    EXPECT_EQ(keys.at("partitionKey").as_string(), "p1");
    EXPECT_EQ(keys.at("id").as_string(), "c1");
    EXPECT_EQ(keys.at("afterOmitted"), true);
    if (format == EnvelopeFormat::kNative) {
      EXPECT_EQ(o.at("op").as_string(), "create");
    }
  }
}

// Items may nest 64 levels (util/json_parse.h): their envelopes re-encode.
TEST(KafkaMessageTest, DeepItemsReEncode) {
  std::string deep = std::string(kMaxItemDepth - 1, '[') + std::string(kMaxItemDepth - 1, ']');
  std::string item = "{\"id\":\"c1\",\"deep\":" + deep + "}";
  KafkaOptions options;
  options.envelope = EnvelopeFormat::kDebezium;
  KafkaMessage m = EncodeChange(options, Record(ChangeOp::kCreate, "null", item));
  EXPECT_FALSE(m.decode_error.has_value());
  EXPECT_EQ(m.size_class, EnvelopeSize::kFull);
  auto v = ParseJson(*m.value);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(boost::json::serialize(v->at("after")), item);
}

// With item keys, a comment's tombstone must not share the key of its post:
// on a compacted topic it would delete the post (and the whole partition).
TEST(KafkaMessageTest, ItemKeysIdentifyOneItem) {
  KafkaOptions options;
  options.message_key = MessageKey::kItem;
  options.tombstones = true;
  ChangeRecord comment = Record(ChangeOp::kDelete, R"({"id":"c1"})", "null");
  ChangeRecord post = Record(ChangeOp::kCreate, "null", R"({"id":"p1"})");
  post.id = "p1";
  EXPECT_EQ(EncodeChange(options, comment).key, R"(["p1","c1"])");
  EXPECT_EQ(EncodeTombstone(options, comment).key, R"(["p1","c1"])");
  EXPECT_EQ(EncodeChange(options, post).key, R"(["p1","p1"])");
  EXPECT_NE(EncodeTombstone(options, comment).key, EncodeChange(options, post).key);
  // JSON, so no pair of (partition key, id) can forge another's key.
  ChangeRecord odd = comment;
  odd.partition_key = "a\",\"b";
  odd.id = "\u00e9\n";
  EXPECT_EQ(EncodeChange(options, odd).key, "[\"a\\\",\\\"b\",\"\u00e9\\n\"]");
  // The contract's default is unchanged: the partition key.
  options.message_key = MessageKey::kPartitionKey;
  EXPECT_EQ(EncodeChange(options, comment).key, "p1");
}

TEST(KafkaMessageTest, PartitionIsTheJavaMurmur2OfThePartitionKey) {
  // librdkafka's (and the Java client's) murmur2 reference values.
  EXPECT_EQ(KafkaPartitionOf("kafka", 1000), (0xd067cf64 & 0x7fffffff) % 1000);
  EXPECT_EQ(KafkaPartitionOf("giberish123456789", 7), (0x8f552b0c & 0x7fffffff) % 7);
  EXPECT_EQ(KafkaPartitionOf("", 5), (0x106e08d9 & 0x7fffffff) % 5);
  EXPECT_EQ(KafkaPartitionOf("anything", 1), 0);
}

TEST(KafkaMessageTest, TombstonesNeedItemKeys) {
  KafkaOptions options;
  options.tombstones = true;
  Status s = ValidateKafkaOptions(options);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidRequest);
  EXPECT_NE(s.message().find("kafka.message_key=item"), std::string::npos) << s.message();
  options.message_key = MessageKey::kItem;
  EXPECT_TRUE(ValidateKafkaOptions(options).ok());
}

TEST(KafkaMessageTest, PropertiesAreCheckedByLibrdkafka) {
  KafkaOptions options;
  options.properties = {{"linger.ms", "5"}, {"session.timeout.ms", "6000"}};
  EXPECT_TRUE(ValidateKafkaOptions(options).ok());
  options.properties["max_inflight_bytes"] = "1000";
  Status s = ValidateKafkaOptions(options);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidRequest);
  EXPECT_NE(s.message().find("kafka.max_inflight_bytes"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace feedd
