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
#include "feed/retained_tail.h"
#include "tests/blog_scenario.h"
#include "tests/feed/forwarding_store.h"

namespace feedd {
namespace {

struct Message {
  std::string topic;
  int partition = 0;
  std::string key;
  std::optional<std::string> value;
  std::map<std::string, std::string> headers;
  Lsn lsn = 0;       // feedd-lsn; 0 for a resolved marker
  Lsn resolved = 0;  // feedd-resolved of a resolved marker
  int64_t offset = 0;
};

// Reads every topic from the beginning until `expected` changes (messages
// that are not resolved markers) and `expected_markers` resolved markers
// arrived (or `timeout`), then keeps reading briefly to catch duplicates.
std::vector<Message> ConsumeAll(const std::string& bootstrap,
                                const std::vector<std::string>& topics, size_t expected,
                                std::chrono::seconds timeout = std::chrono::seconds(30),
                                size_t expected_markers = 0) {
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
  size_t changes = 0;
  size_t markers = 0;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::chrono::steady_clock::time_point settle{};
  for (;;) {
    auto now = std::chrono::steady_clock::now();
    if (now > deadline) break;
    if (changes >= expected && markers >= expected_markers) {
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
      msg.offset = m->offset;
      if (auto marker = msg.headers.find("feedd-resolved"); marker != msg.headers.end()) {
        msg.resolved = std::stoull(marker->second);
        ++markers;
      } else if (auto lsn = msg.headers.find("feedd-lsn"); lsn != msg.headers.end()) {
        msg.lsn = std::stoull(lsn->second);
        ++changes;
      }  // else a heartbeat
      out.push_back(std::move(msg));
    }
    rd_kafka_message_destroy(m);
  }
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  return out;
}

// The changes (and tombstones) among `messages`: no resolved markers.
std::vector<Message> WithoutMarkers(std::vector<Message> messages) {
  std::erase_if(messages, [](const Message& m) { return m.resolved != 0; });
  return messages;
}

class PublisherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/feedd-publisher-XXXXXX";
    dir_ = mkdtemp(tmpl);
    options_.data_dir = dir_;
    options_.containers = BlogContainers();
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

  // Waits until every partition acknowledged a resolved marker >= `lsn`.
  void WaitResolved(Lsn lsn) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (publisher_->GetStatus().resolved_lsn < lsn) {
      ASSERT_LT(std::chrono::steady_clock::now(), deadline)
          << "resolved " << publisher_->GetStatus().resolved_lsn << " < " << lsn;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

  void WriteSome(int n, int seed) {
    for (int i = 0; i < n; ++i) {
      const std::string k = std::to_string(seed * 1000 + i);
      if (i % 3 == 0) {
        ASSERT_TRUE(Upsert("users",
                           R"({"id":"u)" + k + R"(","userId":"u)" + std::to_string(i % 4) + R"("})")
                        .status.ok());
      } else {
        ASSERT_TRUE(Upsert("posts",
                           R"({"id":"c)" + k + R"(","postId":"p)" + std::to_string(i % 7) + R"("})")
                        .status.ok());
      }
    }
  }

  // Per topic partition, in offset order: every resolved marker is above
  // the one before, at most the head, and after every change of that
  // partition at or below its LSN. Returns the number of markers.
  size_t ExpectMarkersFollowTheirChanges(const std::vector<Message>& messages) {
    std::map<std::pair<std::string, int>, std::vector<Lsn>> feed_of;  // LSNs, ascending
    for (const auto& [lsn, r] : Feed()) {
      feed_of[{"feedd." + r.container, KafkaPartitionOf(r.partition_key, 3)}].push_back(lsn);
    }
    std::map<std::pair<std::string, int>, std::vector<const Message*>> in;
    for (const auto& m : messages) in[{m.topic, m.partition}].push_back(&m);
    const Lsn head = store_->HeadLsn();
    size_t markers = 0;
    for (auto& [where, list] : in) {
      std::sort(list.begin(), list.end(),
                [](const Message* a, const Message* b) { return a->offset < b->offset; });
      const std::string at = where.first + "/" + std::to_string(where.second);
      Lsn last = 0;
      std::set<Lsn> before;  // changes at lower offsets
      for (const Message* m : list) {
        if (m->resolved == 0) {
          before.insert(m->lsn);
          continue;
        }
        ++markers;
        EXPECT_GT(m->resolved, last) << at << " offset " << m->offset;
        EXPECT_LE(m->resolved, head) << at;
        EXPECT_EQ(m->key, "feedd-resolved");
        EXPECT_EQ(m->value.value_or(""), R"({"resolved":)" + std::to_string(m->resolved) + "}");
        EXPECT_EQ(m->headers.count("feedd-lsn"), 0u);
        EXPECT_EQ("feedd." + m->headers.at("feedd-container"), where.first);
        for (Lsn lsn : feed_of[where]) {
          if (lsn > m->resolved) break;
          EXPECT_EQ(before.count(lsn), 1u) << at << ": the marker " << m->resolved << " at offset "
                                           << m->offset << " is not after LSN " << lsn;
        }
        last = m->resolved;
      }
    }
    return markers;
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
      if (!m.value || m.resolved != 0) continue;  // tombstones and markers: separately
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
  for (const auto& m : WithoutMarkers(messages)) partitions.insert(m.partition);
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
  auto messages = WithoutMarkers(ConsumeAll(broker_->bootstrap(), Topics(), 2));
  ASSERT_EQ(messages.size(), 2u);
  auto big = boost::json::parse(*messages[0].value).as_object();
  EXPECT_EQ(big["id"].as_string(), "big");
  EXPECT_TRUE(big["after"].is_null());
  EXPECT_EQ(big["afterOmitted"], true);
  EXPECT_EQ(publisher_->GetStatus().envelopes_shrunk, 1u);
  auto next = boost::json::parse(*messages[1].value).as_object();
  EXPECT_EQ(next["id"].as_string(), "after");
}

// Resolved markers: every partition of every topic (feed, which gets no
// change here, too), increasing, never ahead of the changes in front of them.
TEST_F(PublisherTest, ResolvedMarkersFollowTheChangesTheyVouchFor) {
  kafka_.resolved_interval_ms = 20;
  StartPublisher();
  constexpr int kRounds = 4;
  for (int round = 0; round < kRounds; ++round) {
    WriteSome(40, round);
    WaitResolved(store_->HeadLsn());  // a round for each burst: distinct LSNs
  }
  const Lsn head = store_->HeadLsn();
  // Every marker the broker acknowledged, not only the changes: under load
  // the last round's markers can come after the last change.
  auto messages = ConsumeAll(broker_->bootstrap(), Topics(), head, std::chrono::seconds(30),
                             publisher_->GetStatus().resolved_markers);
  ExpectExactlyOnce(messages);
  const size_t markers = ExpectMarkersFollowTheirChanges(messages);
  std::map<std::pair<std::string, int>, Lsn> last;
  for (const auto& m : messages) {
    if (m.resolved != 0)
      last[{m.topic, m.partition}] = std::max(last[{m.topic, m.partition}], m.resolved);
  }
  EXPECT_EQ(last.size(), 9u) << "a marker in each of 3 partitions of 3 topics";
  for (const auto& [where, lsn] : last) EXPECT_EQ(lsn, head) << where.first << "/" << where.second;
  EXPECT_GE(markers, 9u * kRounds);
  PublisherStatus s = publisher_->GetStatus();
  EXPECT_EQ(s.resolved_markers, markers);
  EXPECT_EQ(s.resolved_lsn, head);
  EXPECT_EQ(s.delivered, head) << "markers are not counted as delivered changes";
}

// While nothing is published there is no marker: over many intervals, none
// before the first change, one round after it, none after that.
TEST_F(PublisherTest, NoResolvedMarkerWhileNothingIsPublished) {
  kafka_.resolved_interval_ms = 10;
  StartPublisher();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (publisher_->GetStatus().state != "running") {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  // The property is an absence, so it is watched over a window: 30 intervals.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(publisher_->GetStatus().resolved_markers, 0u);
  EXPECT_TRUE(ConsumeAll(broker_->bootstrap(), Topics(), 0).empty());

  ASSERT_TRUE(Upsert("posts", R"({"id":"a","postId":"p1"})").status.ok());
  WaitResolved(1);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(publisher_->GetStatus().resolved_markers, 9u) << "one round, not one per interval";
  auto messages = ConsumeAll(broker_->bootstrap(), Topics(), 1);
  EXPECT_EQ(messages.size(), 10u);
  EXPECT_EQ(ExpectMarkersFollowTheirChanges(messages), 9u);
}

// A restarted publisher starts at its persisted checkpoint, which no marker
// of the earlier run passed: its markers stay above the earlier ones.
TEST_F(PublisherTest, ResolvedMarkersStayMonotonicAcrossARestart) {
  kafka_.resolved_interval_ms = 10;
  StartPublisher();
  WriteSome(30, 1);
  WaitResolved(store_->HeadLsn());
  publisher_->Stop();
  publisher_.reset();
  WriteSome(30, 2);
  auto p = Publisher::Start(store_.get(), kafka_, broker_->bootstrap(), false);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  publisher_ = std::move(*p);
  WaitResolved(store_->HeadLsn());
  auto messages = ConsumeAll(broker_->bootstrap(), Topics(), store_->HeadLsn());
  ExpectExactlyOnce(messages);
  EXPECT_GE(ExpectMarkersFollowTheirChanges(messages), 18u);
}

// With its checkpoint lost, a publisher starts from the oldest change: it
// recognises only what the partition tails hold (max_inflight_messages each)
// and sends the older changes again, its checkpoint climbing as they are
// delivered. Its markers must still not fall below the earlier run's, which
// it reads from the partition tails.
TEST_F(PublisherTest, ResolvedMarkersStayMonotonicWithALostCheckpoint) {
  kafka_.resolved_interval_ms = 1;
  kafka_.max_inflight_messages = 20;
  StartPublisher();
  WriteSome(600, 1);
  WaitPublished(store_->HeadLsn());
  WaitResolved(store_->HeadLsn());
  publisher_->Stop();
  publisher_.reset();
  ASSERT_TRUE(store_->UnregisterConsumer(Publisher::kConsumerName).ok());
  StartPublisher();
  WriteSome(10, 2);
  WaitPublished(store_->HeadLsn());
  WaitResolved(store_->HeadLsn());
  EXPECT_GT(publisher_->GetStatus().produced, 10u) << "older changes were sent again";
  auto messages = ConsumeAll(broker_->bootstrap(), Topics(), store_->HeadLsn());
  EXPECT_GE(ExpectMarkersFollowTheirChanges(messages), 18u);
}

// Heartbeats (Debezium's model): at the interval whether or not anything is
// written, each with the publisher's checkpoint, in one partition.
TEST_F(PublisherTest, HeartbeatsGoOnWhileNothingIsWritten) {
  kafka_.heartbeat_interval_ms = 20;
  kafka_.resolved_interval_ms = 0;
  ASSERT_TRUE(broker_->CreateTopic(HeartbeatTopic(kafka_), 1).ok());
  StartPublisher();
  auto wait_heartbeats = [&](uint64_t n) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (publisher_->GetStatus().heartbeats < n) {
      ASSERT_LT(std::chrono::steady_clock::now(), deadline);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  };
  wait_heartbeats(5);
  ASSERT_TRUE(Upsert("posts", R"({"id":"a","postId":"p1"})").status.ok());
  WaitPublished(1);
  wait_heartbeats(publisher_->GetStatus().heartbeats + 10);
  // Every heartbeat counted was acknowledged by the broker: read until at
  // least 15 arrived, not for a fixed while (which a loaded box can outlast).
  auto messages = ConsumeAll(broker_->bootstrap(), {"feedd.__heartbeat"}, 15);
  ASSERT_GE(messages.size(), 15u);
  uint64_t last_ts = 0;
  Lsn last_lsn = 0;
  for (const auto& m : messages) {
    EXPECT_EQ(m.partition, 0);
    EXPECT_EQ(m.key, R"({"serverName":"feedd"})");
    auto value = boost::json::parse(m.value.value_or("null")).as_object();
    const uint64_t ts = value.at("ts_ms").to_number<uint64_t>();
    const Lsn lsn = value.at("publishedLsn").to_number<Lsn>();
    EXPECT_GE(ts, last_ts);
    EXPECT_GE(lsn, last_lsn);
    EXPECT_LE(lsn, 1u);
    last_ts = ts;
    last_lsn = lsn;
  }
  EXPECT_EQ(boost::json::parse(*messages.front().value).at("publishedLsn"), 0);
  EXPECT_EQ(last_lsn, 1u);
  EXPECT_EQ(publisher_->GetStatus().delivered, 1u) << "heartbeats are not counted as changes";
}

// The tail of the retained feed that fits a per-partition budget: contiguous
// up to the head, and as long as the fullest partition allows.
TEST_F(PublisherTest, RetainedTailStartKeepsEveryPartitionWithinTheBudget) {
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(
        Upsert("users", R"({"id":"u)" + std::to_string(i) + R"(","userId":"u1"})").status.ok());
  }
  const std::string blob(10000, 'x');
  for (int i = 0; i < 30; ++i) {
    ASSERT_TRUE(Upsert("posts", R"({"id":"c)" + std::to_string(i) + R"(","postId":"p1","blob":")" +
                                    blob + R"("})")
                    .status.ok());
  }
  const Lsn head = store_->HeadLsn();
  ASSERT_EQ(head, 35u);
  auto everything = RetainedTailStart(*store_, kafka_, 3, 10 << 20);
  ASSERT_TRUE(everything.ok()) << everything.status().ToString();
  EXPECT_EQ(*everything, 1u);
  auto nothing = RetainedTailStart(*store_, kafka_, 3, 100);
  ASSERT_TRUE(nothing.ok());
  EXPECT_EQ(*nothing, head + 1);
  // ~10.2 KB per post message: 9 fit in 100,000 bytes, 10 do not.
  auto tail = RetainedTailStart(*store_, kafka_, 3, 100000);
  ASSERT_TRUE(tail.ok());
  EXPECT_EQ(*tail, head - 8);
}

// The embedded broker starts empty: a publisher starting on a fresh one
// republishes the retained tail that fits its window (not just what
// registered consumers still need, which here is nothing), all of it kept.
TEST_F(PublisherTest, AFreshEmbeddedBrokerGetsTheRetainedTailThatFitsItsWindow) {
  kafka_.resolved_interval_ms = 0;
  StartPublisher();
  std::string blob(100 * 1024, 'x');
  for (size_t i = 0; i < blob.size(); ++i) blob[i] = static_cast<char>('a' + (i * 7919) % 26);
  for (int i = 0; i < 60; ++i) {  // ~6 MiB in one partition: more than the window
    ASSERT_TRUE(Upsert("posts", R"({"id":"c)" + std::to_string(i) + R"(","postId":"p1","n":)" +
                                    std::to_string(i) + R"(,"blob":")" + blob + R"("})")
                    .status.ok());
    if (i % 6 == 0) {
      ASSERT_TRUE(
          Upsert("users", R"({"id":"u)" + std::to_string(i) + R"(","userId":"u1"})").status.ok());
    }
  }
  const Lsn head = store_->HeadLsn();
  WaitPublished(head);
  publisher_->Stop();
  publisher_.reset();

  broker_.reset();
  auto broker = EmbeddedBroker::Start();
  ASSERT_TRUE(broker.ok()) << broker.status().ToString();
  broker_ = std::move(*broker);
  for (const auto& c : store_->containers()) {
    ASSERT_TRUE(broker_->CreateTopic(kafka_.topic_prefix + c.name, 3).ok());
  }
  StartPublisher();
  auto first = RetainedTailStart(*store_, kafka_, 3, EmbeddedBroker::kRepublishBytesPerPartition);
  ASSERT_TRUE(first.ok());
  EXPECT_GT(*first, 10u) << "the whole feed does not fit the window";
  EXPECT_LT(*first, head - 20) << "a good part of it does";
  WaitPublished(head);
  auto messages = ConsumeAll(broker_->bootstrap(), Topics(), head - *first + 1);
  std::vector<Lsn> lsns;
  std::map<std::pair<std::string, int>, int64_t> lowest_offset;
  for (const auto& m : messages) {
    lsns.push_back(m.lsn);
    auto [it, added] = lowest_offset.try_emplace({m.topic, m.partition}, m.offset);
    if (!added) it->second = std::min(it->second, m.offset);
  }
  std::sort(lsns.begin(), lsns.end());
  std::vector<Lsn> expected;
  for (Lsn lsn = *first; lsn <= head; ++lsn) expected.push_back(lsn);
  EXPECT_EQ(lsns, expected) << "the tail from LSN " << *first << ", each change once";
  for (const auto& [where, offset] : lowest_offset) {
    EXPECT_EQ(offset, 0) << where.first << "/" << where.second << ": the broker dropped some";
  }
}

// The producer's properties: the publisher's defaults (idempotent, acks
// all, batches of 20 ms, uncompressed, no message timeout), with every
// kafka.<property> of the configuration over them.
TEST(PublisherProducerPropertiesTest, TheDefaultsAndTheConfigurationOverThem) {
  KafkaOptions options;
  options.instance_name = "a";
  std::map<std::string, std::string> props = PublisherProducerProperties(options, "h:9092");
  EXPECT_EQ(props["linger.ms"], "20");
  EXPECT_EQ(props["compression.type"], "none");
  EXPECT_EQ(props["enable.idempotence"], "true");
  EXPECT_EQ(props["acks"], "all");
  EXPECT_EQ(props["message.timeout.ms"], "0");
  EXPECT_EQ(props["bootstrap.servers"], "h:9092");
  EXPECT_EQ(props["client.id"], "feedd-a");

  options.properties = {{"linger.ms", "5"}, {"compression.type", "zstd"}};
  props = PublisherProducerProperties(options, "h:9092");
  EXPECT_EQ(props["linger.ms"], "5");
  EXPECT_EQ(props["compression.type"], "zstd");
  EXPECT_EQ(props["acks"], "all");
}

TEST(PublisherPollIntervalTest, AQuarterOfTheLingerWithinBounds) {
  KafkaOptions options;
  EXPECT_EQ(PublisherPollInterval(PublisherProducerProperties(options, "h:1")).count(), 5);
  EXPECT_EQ(PublisherPollInterval({{"linger.ms", "40"}}).count(), 10);
  EXPECT_EQ(PublisherPollInterval({{"linger.ms", "0"}}).count(), 1);
  EXPECT_EQ(PublisherPollInterval({{"linger.ms", "2.5"}}).count(), 1);
  EXPECT_EQ(PublisherPollInterval({{"linger.ms", "1000"}}).count(), 25);
  EXPECT_EQ(PublisherPollInterval({{"linger.ms", "1e300"}}).count(), 25);
  EXPECT_EQ(PublisherPollInterval({{"linger.ms", "x"}}).count(), 1);
  EXPECT_EQ(PublisherPollInterval({{"linger.ms", "-4"}}).count(), 1);
  EXPECT_EQ(PublisherPollInterval({{"linger.ms", "nan"}}).count(), 1);
  EXPECT_EQ(PublisherPollInterval({}).count(), 1);
}

}  // namespace
}  // namespace feedd
