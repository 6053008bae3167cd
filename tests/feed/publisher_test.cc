// The publisher against the embedded (mock) broker, read back with an
// independent librdkafka consumer.
#include "feed/publisher.h"

#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <stdlib.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include "feed/embedded_broker.h"
#include "feed/kafka_message.h"
#include "tests/feed/forwarding_store.h"

namespace feedd {
namespace {

struct Message {
  std::string topic;
  int partition = 0;
  std::string key;
  std::optional<std::string> value;
  std::map<std::string, std::string> headers;
  Lsn lsn = 0;
};

// Reads every topic from the beginning until `expected` messages arrived
// (or `timeout`), then keeps reading briefly to catch duplicates.
std::vector<Message> ConsumeAll(const std::string& bootstrap,
                                const std::vector<std::string>& topics, size_t expected,
                                std::chrono::seconds timeout = std::chrono::seconds(30)) {
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap.c_str(), err, sizeof(err));
  rd_kafka_conf_set(conf, "fetch.wait.max.ms", "5", err, sizeof(err));
  rd_kafka_conf_set(conf, "enable.auto.commit", "false", err, sizeof(err));
  // consumer_poll() needs a group id; assign() never joins the group.
  rd_kafka_conf_set(conf, "group.id", ("feedd-tail-reader-" + std::to_string(getpid())).c_str(),
                    err, sizeof(err));
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
  EXPECT_NE(rk, nullptr) << err;
  rd_kafka_topic_partition_list_t* parts = rd_kafka_topic_partition_list_new(16);
  for (const auto& t : topics) {
    const rd_kafka_metadata_t* md = nullptr;
    rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, t.c_str(), nullptr);
    EXPECT_EQ(rd_kafka_metadata(rk, 0, rkt, &md, 5000), RD_KAFKA_RESP_ERR_NO_ERROR);
    for (int p = 0; p < md->topics[0].partition_cnt; ++p) {
      rd_kafka_topic_partition_list_add(parts, t.c_str(), p)->offset = RD_KAFKA_OFFSET_BEGINNING;
    }
    rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(rkt);
  }
  rd_kafka_assign(rk, parts);
  rd_kafka_topic_partition_list_destroy(parts);
  std::vector<Message> out;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::chrono::steady_clock::time_point settle{};
  for (;;) {
    auto now = std::chrono::steady_clock::now();
    if (now > deadline) break;
    if (out.size() >= expected) {
      if (settle == std::chrono::steady_clock::time_point{})
        settle = now + std::chrono::milliseconds(500);
      if (now > settle) break;
    }
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 50);
    if (m == nullptr) continue;
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      Message msg;
      msg.topic = rd_kafka_topic_name(m->rkt);
      msg.partition = m->partition;
      msg.key.assign(static_cast<const char*>(m->key), m->key_len);
      if (m->payload != nullptr) msg.value.emplace(static_cast<const char*>(m->payload), m->len);
      rd_kafka_headers_t* hdrs = nullptr;
      if (rd_kafka_message_headers(m, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        const char* name;
        const void* value;
        size_t size;
        for (size_t i = 0;
             rd_kafka_header_get_all(hdrs, i, &name, &value, &size) == RD_KAFKA_RESP_ERR_NO_ERROR;
             ++i) {
          msg.headers[name].assign(static_cast<const char*>(value), size);
        }
      }
      msg.lsn = std::stoull(msg.headers["feedd-lsn"]);
      out.push_back(std::move(msg));
    }
    rd_kafka_message_destroy(m);
  }
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  return out;
}

class PublisherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/feedd-publisher-XXXXXX";
    dir_ = mkdtemp(tmpl);
    options_.data_dir = dir_;
    options_.sync = false;
    options_.clock = &clock_;
    OpenStore();
    auto broker = EmbeddedBroker::Start();
    ASSERT_TRUE(broker.ok()) << broker.status().ToString();
    broker_ = std::move(*broker);
    for (const auto& c : store_->containers()) {
      ASSERT_TRUE(broker_->CreateTopic(kafka_.topic_prefix + c.name, 3).ok());
    }
  }

  void TearDown() override {
    if (publisher_) publisher_->Stop();
    publisher_.reset();
    store_.reset();
    broker_.reset();
    std::filesystem::remove_all(dir_);
  }

  void OpenStore() {
    auto store = DocumentStore::Open(options_);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(*store);
  }

  void StartPublisher() {
    auto p = Publisher::Start(store_.get(), kafka_, broker_->bootstrap(), true);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    publisher_ = std::move(*p);
  }

  WriteResult Upsert(const std::string& container, const std::string& json) {
    const ContainerSpec* spec = store_->FindContainer(container);
    auto item = PrepareItem(*spec, boost::json::parse(json).as_object(), std::nullopt, std::nullopt,
                            4 << 20);
    EXPECT_TRUE(item.ok()) << item.status().ToString();
    WriteOp op;
    op.kind = WriteOpKind::kUpsert;
    op.item = *item;
    std::string pk = item->partition_key;
    return store_->Write({container, pk, {op}});
  }

  WriteResult Delete(const std::string& container, const std::string& pk, const std::string& id) {
    WriteOp op;
    op.kind = WriteOpKind::kDelete;
    op.id = id;
    return store_->Write({container, pk, {op}});
  }

  void WaitPublished(Lsn lsn) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (publisher_->GetStatus().published_lsn < lsn) {
      ASSERT_LT(std::chrono::steady_clock::now(), deadline)
          << "published " << publisher_->GetStatus().published_lsn << " < " << lsn
          << " state=" << publisher_->GetStatus().state;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  std::vector<std::string> Topics() const { return {"feedd.users", "feedd.posts", "feedd.feed"}; }

  // Every change of the store's feed, by LSN.
  std::map<Lsn, ChangeRecord> Feed() {
    std::map<Lsn, ChangeRecord> all;
    FeedReadSpec spec;
    spec.from = store_->OldestRetainedLsn();
    spec.limit = 100000;
    FeedPage page;
    EXPECT_TRUE(store_->ReadFeed(spec, &page).ok());
    for (auto& r : page.records) all[r.lsn] = r;
    return all;
  }

  // Each change exactly once, right topic, key (per kafka_.message_key),
  // headers and value, in the partition of its partition key, and increasing
  // LSNs per partition key.
  void ExpectExactlyOnce(const std::vector<Message>& messages) {
    auto feed = Feed();
    std::map<Lsn, int> seen;
    std::map<std::string, Lsn> last_per_key;
    const Lsn oldest = store_->OldestRetainedLsn();
    for (const auto& m : messages) {
      if (!m.value) continue;  // tombstones are checked separately
      ASSERT_EQ(++seen[m.lsn], 1) << "LSN " << m.lsn << " delivered twice";
      if (m.lsn < oldest) continue;  // dropped by retention after delivery
      ASSERT_EQ(feed.count(m.lsn), 1u) << m.lsn;
      const ChangeRecord& r = feed[m.lsn];
      EXPECT_EQ(m.topic, "feedd." + r.container);
      EXPECT_EQ(m.key, MessageKeyFor(kafka_, r));
      EXPECT_EQ(m.partition, KafkaPartitionOf(r.partition_key, 3)) << "LSN " << m.lsn;
      EXPECT_EQ(m.headers.at("feedd-op"), ChangeOpName(r.op));
      EXPECT_EQ(m.headers.at("feedd-container"), r.container);
      EXPECT_EQ(m.headers.at("feedd-id"), r.id);
      EXPECT_EQ(m.headers.at("feedd-partition-key"), r.partition_key);
      EXPECT_EQ(*m.value, r.envelope_json);
      std::string key = m.topic + "/" + r.partition_key;
      EXPECT_GT(m.lsn, last_per_key[key]) << "LSNs must increase per key " << key;
      last_per_key[key] = m.lsn;
    }
    for (const auto& [lsn, r] : feed) EXPECT_EQ(seen[lsn], 1) << "LSN " << lsn;
  }

  std::string dir_;
  ManualClock clock_{1'800'000'000'000};
  StoreOptions options_;
  KafkaOptions kafka_;
  std::unique_ptr<DocumentStore> store_;
  std::unique_ptr<EmbeddedBroker> broker_;
  std::unique_ptr<Publisher> publisher_;
};

TEST_F(PublisherTest, EveryChangeArrivesOnceInOrder) {
  kafka_.message_key = MessageKey::kItem;
  kafka_.tombstones = true;
  StartPublisher();
  int deletes = 0;
  for (int i = 0; i < 300; ++i) {
    std::string post = "p" + std::to_string(i % 17);
    ASSERT_TRUE(Upsert("posts", R"({"id":"c)" + std::to_string(i % 100) + R"(","postId":")" + post +
                                    R"(","userId":"u1","n":)" + std::to_string(i) + "}")
                    .status.ok());
    if (i % 10 == 0) {
      ASSERT_TRUE(Upsert("users", R"({"id":"u1","userId":"u1","v":)" + std::to_string(i) + "}")
                      .status.ok());
    }
    if (i % 25 == 24 && Delete("posts", post, "c" + std::to_string(i % 100)).status.ok()) ++deletes;
  }
  WaitPublished(store_->HeadLsn());
  auto messages = ConsumeAll(broker_->bootstrap(), Topics(), store_->HeadLsn() + deletes);
  ExpectExactlyOnce(messages);
  size_t tombstones = 0;
  for (const auto& m : messages) {
    if (!m.value) {
      ++tombstones;
      EXPECT_EQ(m.headers.at("feedd-op"), "delete");
      // Keyed by the deleted item alone, in its partition key's partition.
      const std::string& pk = m.headers.at("feedd-partition-key");
      EXPECT_EQ(m.key, boost::json::serialize(
                           boost::json::array{boost::json::string_view(pk),
                                              boost::json::string_view(m.headers.at("feedd-id"))}));
      EXPECT_EQ(m.partition, KafkaPartitionOf(pk, 3));
    }
  }
  EXPECT_EQ(tombstones, static_cast<size_t>(deletes));
  PublisherStatus s = publisher_->GetStatus();
  EXPECT_EQ(s.lag_changes, 0u);
  EXPECT_EQ(s.delivery_errors, 0u);
}

// Item keys are spread over partitions by hash; the partition must still
// follow the partition key, or the changes of one post (and their order)
// would be split across partitions.
TEST_F(PublisherTest, ItemKeysKeepAPartitionKeyInOnePartition) {
  kafka_.message_key = MessageKey::kItem;
  StartPublisher();
  for (int i = 0; i < 60; ++i) {
    ASSERT_TRUE(Upsert("posts", R"({"id":"c)" + std::to_string(i) +
                                    R"(","postId":"p1","userId":"u1","n":)" + std::to_string(i) +
                                    "}")
                    .status.ok());
  }
  WaitPublished(store_->HeadLsn());
  auto messages = ConsumeAll(broker_->bootstrap(), Topics(), store_->HeadLsn());
  ExpectExactlyOnce(messages);
  std::set<int> partitions;
  for (const auto& m : messages) partitions.insert(m.partition);
  EXPECT_EQ(partitions, std::set<int>{KafkaPartitionOf("p1", 3)});
}

TEST_F(PublisherTest, TombstonesWithPartitionKeysAreRefused) {
  kafka_.tombstones = true;
  auto p = Publisher::Start(store_.get(), kafka_, broker_->bootstrap(), true);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("kafka.message_key=item"), std::string::npos);
}

// A commit that lands between the publisher's last read and its head watch
// makes the watch fire at once, on the publisher's own thread: it must not
// stall (it once deadlocked on the publisher's wake mutex).
TEST_F(PublisherTest, ACommitJustBeforeTheHeadWatchIsPublished) {
  testutil::ForwardingStore racing(store_.get());
  int injected = 0;
  racing.before_head_watch = [&](Lsn awaited) {
    if (injected < 20 && store_->HeadLsn() < awaited) {
      ++injected;
      ASSERT_TRUE(
          Upsert("users", R"({"id":"u1","userId":"u1","n":)" + std::to_string(injected) + "}")
              .status.ok());
    }
  };
  auto p = Publisher::Start(&racing, kafka_, broker_->bootstrap(), true);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  publisher_ = std::move(*p);
  ASSERT_TRUE(Upsert("users", R"({"id":"u0","userId":"u0"})").status.ok());
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (injected < 20 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(injected, 20);
  WaitPublished(store_->HeadLsn());
  publisher_->Stop();
  publisher_.reset();
}

TEST_F(PublisherTest, BrokerOutageBuffersAndDrainsInOrder) {
  StartPublisher();
  ASSERT_TRUE(Upsert("posts", R"({"id":"a","postId":"p1"})").status.ok());
  WaitPublished(1);
  rd_kafka_mock_broker_set_down(broker_->cluster(), 1);
  for (int i = 0; i < 200; ++i) {
    auto r = Upsert("posts", R"({"id":"c)" + std::to_string(i) + R"(","postId":"p)" +
                                 std::to_string(i % 7) + R"("})");
    ASSERT_TRUE(r.status.ok()) << "writes must succeed while Kafka is down";
  }
  // Until the publisher has handed every change to librdkafka, none delivered.
  const Lsn head = store_->HeadLsn();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (publisher_->GetStatus().produced < head) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline)
        << "produced " << publisher_->GetStatus().produced << " of " << head;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // polling, not a wait
  }
  PublisherStatus during = publisher_->GetStatus();
  EXPECT_EQ(during.published_lsn, 1u);
  EXPECT_EQ(during.lag_changes, head - 1);
  // The lag is the age of the oldest unpublished change on the store's clock.
  EXPECT_EQ(during.lag_seconds, 0.0);
  clock_.Advance(2500);
  EXPECT_EQ(publisher_->GetStatus().lag_seconds, 2.5);
  // Retention must not drop what Kafka has not received.
  clock_.Advance(30ull * 24 * 3600 * 1000);
  ASSERT_TRUE(store_->EnforceRetention().ok());
  EXPECT_LE(store_->OldestRetainedLsn(), during.published_lsn + 1);

  rd_kafka_mock_broker_set_up(broker_->cluster(), 1);
  WaitPublished(store_->HeadLsn());
  ExpectExactlyOnce(ConsumeAll(broker_->bootstrap(), Topics(), store_->HeadLsn()));
}

TEST_F(PublisherTest, RestartWithLostCheckpointSendsNoDuplicates) {
  StartPublisher();
  for (int i = 0; i < 150; ++i) {
    ASSERT_TRUE(Upsert("posts", R"({"id":"c)" + std::to_string(i) + R"(","postId":"p)" +
                                    std::to_string(i % 5) + R"("})")
                    .status.ok());
  }
  WaitPublished(store_->HeadLsn());
  publisher_->Stop();
  publisher_.reset();
  // As if the process died after delivery but before recording its
  // checkpoint: the checkpoint is back at 0 while Kafka holds everything.
  ASSERT_TRUE(store_->UnregisterConsumer(Publisher::kConsumerName).ok());
  StartPublisher();
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(Upsert("users", R"({"id":"u)" + std::to_string(i) + R"(","userId":"u)" +
                                    std::to_string(i) + R"("})")
                    .status.ok());
  }
  WaitPublished(store_->HeadLsn());
  EXPECT_EQ(publisher_->GetStatus().duplicates_skipped, 150u);
  ExpectExactlyOnce(ConsumeAll(broker_->bootstrap(), Topics(), store_->HeadLsn()));
}

TEST_F(PublisherTest, LargeItemIsSentAsReferenceAndTheFeedMovesOn) {
  StartPublisher();
  std::string blob(static_cast<size_t>(1.9 * 1024 * 1024), 'x');
  for (size_t i = 0; i < blob.size(); i += 7) blob[i] = static_cast<char>('a' + (i * 31) % 26);
  ASSERT_TRUE(
      Upsert("posts", R"({"id":"big","postId":"p1","blob":")" + blob + R"("})").status.ok());
  ASSERT_TRUE(Upsert("posts", R"({"id":"after","postId":"p1"})").status.ok());
  WaitPublished(store_->HeadLsn());
  auto messages = ConsumeAll(broker_->bootstrap(), Topics(), 2);
  ASSERT_EQ(messages.size(), 2u);
  auto big = boost::json::parse(*messages[0].value).as_object();
  EXPECT_EQ(big["id"].as_string(), "big");
  EXPECT_TRUE(big["after"].is_null());
  EXPECT_EQ(big["afterOmitted"], true);
  EXPECT_EQ(publisher_->GetStatus().envelopes_shrunk, 1u);
  auto next = boost::json::parse(*messages[1].value).as_object();
  EXPECT_EQ(next["id"].as_string(), "after");
}

}  // namespace
}  // namespace feedd
