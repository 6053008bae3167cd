// Unit tests of NewKafkaPartitionedChangeSource
// (processors/kafka_partitioned_change_source.h) against the embedded
// broker (librdkafka's mock cluster): feedd's headers read out, the group's
// committed positions handed to the next member, and librdkafka's refusals
// (a bad property, a failed commit) reported as Statuses.
#include "processors/kafka_partitioned_change_source.h"

#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "feed/embedded_broker.h"

namespace feedd {
namespace {

constexpr auto kTimeout = std::chrono::seconds(30);
constexpr int kOffsetCommitApiKey = 8;  // Kafka's OffsetCommit request
const std::string kContainer = "posts";
const std::string kOp = "replace";

// Records what the source reports (on the polling thread).
struct Recorder final : PartitionListener {
  std::vector<std::vector<CommittedPosition>> assigned;
  std::vector<std::vector<TopicPartition>> revoked;
  int refusals = 0;
  void OnAssigned(const std::vector<CommittedPosition>& positions, const Status& read) override {
    EXPECT_TRUE(read.ok()) << read.ToString();
    assigned.push_back(positions);
  }
  void OnRevoked(const std::vector<TopicPartition>& partitions) override {
    revoked.push_back(partitions);
  }
  void OnAssignRefused(const std::vector<TopicPartition>&, const Status&) override { ++refusals; }
  void OnRevokeRefused(const std::vector<TopicPartition>&, const Status&) override { ++refusals; }
};

class KafkaPartitionedChangeSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto broker = EmbeddedBroker::Start();
    ASSERT_TRUE(broker.ok()) << broker.status().ToString();
    broker_ = std::move(*broker);
    ASSERT_TRUE(broker_->CreateTopic("feedd.posts", 2).ok());
  }

  std::unique_ptr<PartitionedChangeSource> NewSource() {
    return NewKafkaPartitionedChangeSource(
        KafkaConsumerConfig{broker_->bootstrap(),
                            "feedd.",
                            // The mock coordinator rebalances a group that had a
                            // member after ~ a session timeout.
                            {{"session.timeout.ms", "6000"}, {"heartbeat.interval.ms", "500"}}},
        "feedd-source-test-" + std::to_string(getpid()), "feedd-source-test");
  }

  // Produces one message to feedd.posts[partition], as feedd's publisher
  // does (headers; `value` empty: a tombstone).
  void Produce(int32_t partition, const std::string& key, const std::string& value,
               const std::string& lsn) {
    char err[512];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    ASSERT_EQ(rd_kafka_conf_set(conf, "bootstrap.servers", broker_->bootstrap().c_str(), err,
                                sizeof(err)),
              RD_KAFKA_CONF_OK);
    rd_kafka_t* producer = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
    ASSERT_NE(producer, nullptr) << err;
    const std::string id = "i" + lsn;
    std::vector<rd_kafka_vu_t> args(9);
    args[0].vtype = RD_KAFKA_VTYPE_TOPIC;
    args[0].u.cstr = "feedd.posts";
    args[1].vtype = RD_KAFKA_VTYPE_PARTITION;
    args[1].u.i32 = partition;
    args[2].vtype = RD_KAFKA_VTYPE_KEY;
    args[2].u.mem = {const_cast<char*>(key.data()), key.size()};
    args[3].vtype = RD_KAFKA_VTYPE_VALUE;  // a null payload: a tombstone
    args[3].u.mem = {value.empty() ? nullptr : const_cast<char*>(value.data()), value.size()};
    args[4].vtype = RD_KAFKA_VTYPE_MSGFLAGS;
    args[4].u.i = RD_KAFKA_MSG_F_COPY;
    const std::pair<const char*, const std::string*> headers[] = {{"feedd-lsn", &lsn},
                                                                  {"feedd-container", &kContainer},
                                                                  {"feedd-id", &id},
                                                                  {"feedd-op", &kOp}};
    for (size_t i = 0; i < 4; ++i) {
      args[5 + i].vtype = RD_KAFKA_VTYPE_HEADER;
      args[5 + i].u.header = {headers[i].first, headers[i].second->data(),
                              static_cast<ssize_t>(headers[i].second->size())};
    }
    rd_kafka_error_t* error = rd_kafka_produceva(producer, args.data(), args.size());
    EXPECT_EQ(error, nullptr) << rd_kafka_error_string(error);
    if (error != nullptr) rd_kafka_error_destroy(error);
    EXPECT_EQ(rd_kafka_flush(producer, 10000), RD_KAFKA_RESP_ERR_NO_ERROR);
    rd_kafka_destroy(producer);
  }

  // Polls until `done()` or kTimeout; the messages polled are appended to
  // *messages, the errors to *errors.
  template <typename Done>
  bool PollUntil(PartitionedChangeSource* source, Done done, std::vector<ConsumedMessage>* messages,
                 std::vector<Status>* errors = nullptr) {
    const auto deadline = std::chrono::steady_clock::now() + kTimeout;
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::optional<ConsumedMessage> m;
      Status polled = source->Poll(std::chrono::milliseconds(50), &m);
      if (!polled.ok() && errors != nullptr) errors->push_back(polled);
      if (m) messages->push_back(std::move(*m));
    }
    return true;
  }

  std::unique_ptr<EmbeddedBroker> broker_;
};

TEST_F(KafkaPartitionedChangeSourceTest, AnInvalidPropertyIsRefusedBySubscribe) {
  auto source = NewKafkaPartitionedChangeSource(
      KafkaConsumerConfig{broker_->bootstrap(), "feedd.", {{"fetch.wait.max.ms", "soon"}}},
      "feedd-source-test", "feedd-source-test");
  Recorder recorder;
  Status s = source->Subscribe({"feedd.posts"}, &recorder);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidRequest) << s.ToString();
  EXPECT_NE(s.message().find("fetch.wait.max.ms"), std::string::npos) << s.ToString();
  EXPECT_TRUE(source->Close().ok());
}

TEST_F(KafkaPartitionedChangeSourceTest, HandsOverTheCommittedPositionToTheNextMember) {
  Produce(0, "k1", R"({"lsn":7})", "7");
  Produce(0, "k2", "", "8");  // a tombstone
  Produce(1, "k3", R"({"lsn":9})", "9");

  auto first = NewSource();
  Recorder recorder;
  ASSERT_TRUE(first->Subscribe({"feedd.posts"}, &recorder).ok());
  std::vector<ConsumedMessage> messages;
  ASSERT_TRUE(PollUntil(
      first.get(), [&] { return messages.size() == 3; }, &messages));
  ASSERT_EQ(recorder.assigned.size(), 1u);
  ASSERT_EQ(recorder.assigned[0].size(), 2u);
  for (const CommittedPosition& p : recorder.assigned[0]) EXPECT_EQ(p.offset, -1);

  std::sort(messages.begin(), messages.end(), [](const auto& a, const auto& b) {
    return std::tie(a.at, a.offset) < std::tie(b.at, b.offset);
  });
  const TopicPartition p0{"feedd.posts", 0};
  EXPECT_EQ(messages[0].at, p0);
  EXPECT_EQ(messages[0].offset, 0);
  EXPECT_EQ(messages[0].payload, std::optional<std::string>(R"({"lsn":7})"));
  EXPECT_EQ(messages[0].lsn, 7u);
  EXPECT_EQ(messages[0].container, "posts");
  EXPECT_EQ(messages[0].id, "i7");
  EXPECT_EQ(messages[0].op, "replace");
  EXPECT_EQ(messages[0].partition_key, "k1");  // no feedd-partition-key: the key
  EXPECT_EQ(messages[1].offset, 1);
  EXPECT_FALSE(messages[1].payload.has_value());
  EXPECT_EQ(messages[2].at, (TopicPartition{"feedd.posts", 1}));

  auto count = first->PartitionCount("feedd.posts");
  ASSERT_TRUE(count.ok()) << count.status().ToString();
  EXPECT_EQ(*count, 2);

  ASSERT_TRUE(first->Commit({{p0, 1, "7"}}, true).ok());
  ASSERT_TRUE(first->Close().ok());
  ASSERT_EQ(recorder.revoked.size(), 1u);
  EXPECT_EQ(recorder.revoked[0].size(), 2u);

  auto second = NewSource();
  Recorder next;
  ASSERT_TRUE(second->Subscribe({"feedd.posts"}, &next).ok());
  std::vector<ConsumedMessage> rest;
  std::vector<Status> errors;
  ASSERT_TRUE(PollUntil(
      second.get(), [&] { return rest.size() == 2; }, &rest, &errors))
      << next.assigned.size() << " assignments, " << rest.size() << " messages, " << errors.size()
      << " errors: " << (errors.empty() ? "" : errors[0].ToString());
  ASSERT_EQ(next.assigned.size(), 1u);
  for (const CommittedPosition& p : next.assigned[0]) {
    if (p.partition == p0) {
      EXPECT_EQ(p.offset, 1);
      EXPECT_EQ(p.metadata, "7");
    } else {
      EXPECT_EQ(p.offset, -1);
    }
  }
  // From the committed offset on: the tombstone of p0, and p1 from its start.
  for (const ConsumedMessage& m : rest) {
    EXPECT_EQ(m.offset, m.at == p0 ? 1 : 0);
  }
  EXPECT_EQ(next.refusals, 0);
  EXPECT_TRUE(second->Close().ok());
}

TEST_F(KafkaPartitionedChangeSourceTest, AFailedCommitIsReported) {
  Produce(0, "k1", R"({"lsn":1})", "1");
  auto source = NewSource();
  Recorder recorder;
  ASSERT_TRUE(source->Subscribe({"feedd.posts"}, &recorder).ok());
  std::vector<ConsumedMessage> messages;
  ASSERT_TRUE(PollUntil(
      source.get(), [&] { return messages.size() == 1; }, &messages));
  const TopicPartition p0{"feedd.posts", 0};

  // An asynchronous commit's failure is returned by a later Poll()...
  rd_kafka_mock_push_request_errors(broker_->cluster(), kOffsetCommitApiKey, 1,
                                    RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED);
  ASSERT_TRUE(source->Commit({{p0, 1, "1"}}, false).ok());
  std::vector<Status> errors;
  ASSERT_TRUE(PollUntil(
      source.get(), [&] { return !errors.empty(); }, &messages, &errors));
  EXPECT_NE(errors[0].message().find("committing offsets"), std::string::npos)
      << errors[0].ToString();

  // ...a synchronous one's by Commit().
  rd_kafka_mock_push_request_errors(broker_->cluster(), kOffsetCommitApiKey, 1,
                                    RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED);
  Status sync = source->Commit({{p0, 1, "1"}}, true);
  EXPECT_FALSE(sync.ok());
  EXPECT_NE(sync.message().find("committing offsets"), std::string::npos) << sync.ToString();
  EXPECT_TRUE(source->Close().ok());
}

}  // namespace
}  // namespace feedd
