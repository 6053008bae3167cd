// PublisherProbe: a scrape reports the publisher's status under the names,
// types and labels of docs/metrics.md ("Change feed and Kafka").
#include "feed/publisher_probe.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <boost/json.hpp>
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "feed/embedded_broker.h"
#include "storage/prepared_item.h"
#include "tests/blog_scenario.h"
#include "tests/metric_samples.h"

namespace feedd {
namespace {

using prometheus::MetricFamily;
using prometheus::MetricType;

using testutil::SampleValue;

TEST(PublisherProbeTest, ReportsThePublishersStatus) {
  char tmpl[] = "/tmp/feedd-publisher-probe-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  StoreOptions options;
  options.data_dir = dir;
  options.containers = BlogContainers();
  options.sync = false;
  auto store = DocumentStore::Open(options);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto broker = EmbeddedBroker::Start();
  ASSERT_TRUE(broker.ok()) << broker.status().ToString();
  KafkaOptions kafka;
  kafka.heartbeat_interval_ms = 0;
  for (const auto& c : (*store)->containers()) {
    ASSERT_TRUE((*broker)->CreateTopic(kafka.topic_prefix + c.name, 3).ok());
  }
  auto publisher = Publisher::Start(store->get(), kafka, (*broker)->bootstrap(), true);
  ASSERT_TRUE(publisher.ok()) << publisher.status().ToString();

  for (int i = 0; i < 5; ++i) {
    const std::string id = "u" + std::to_string(i);
    auto item = PrepareItem(
        *(*store)->FindContainer("users"),
        boost::json::parse(R"({"id":")" + id + R"(","userId":")" + id + "\"}").as_object(),
        std::nullopt, std::nullopt, 1 << 20);
    ASSERT_TRUE(item.ok()) << item.status().ToString();
    WriteOp op;
    op.kind = WriteOpKind::kCreate;
    op.id = id;
    op.item = *item;
    ASSERT_TRUE((*store)->Write({"users", id, {op}}).status.ok());
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while ((*publisher)->GetStatus().published_lsn < (*store)->HeadLsn()) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  (*publisher)->Stop();  // the status holds still from here

  const PublisherStatus s = (*publisher)->GetStatus();
  const std::vector<MetricFamily> f = PublisherProbe(publisher->get()).Collect();
  const auto counter = MetricType::Counter;
  const auto gauge = MetricType::Gauge;
  EXPECT_EQ(SampleValue(f, "feedd_feed_published_lsn", gauge), 5);
  EXPECT_EQ(SampleValue(f, "feedd_feed_publish_lag_changes", gauge), 0);
  EXPECT_EQ(SampleValue(f, "feedd_feed_publish_lag_seconds", gauge), s.lag_seconds);
  EXPECT_GE(SampleValue(f, "feedd_kafka_messages_produced_total", counter).value_or(0), 5);
  EXPECT_EQ(SampleValue(f, "feedd_kafka_messages_produced_total", counter), s.produced);
  EXPECT_EQ(SampleValue(f, "feedd_kafka_messages_delivered_total", counter), s.delivered);
  EXPECT_EQ(SampleValue(f, "feedd_kafka_produce_errors_total", counter, {{"kind", "delivery"}}),
            s.delivery_errors);
  EXPECT_EQ(SampleValue(f, "feedd_kafka_produce_errors_total", counter, {{"kind", "fatal"}}),
            s.fatal_errors);
  EXPECT_EQ(SampleValue(f, "feedd_kafka_resolved_lsn", gauge), s.resolved_lsn);
  EXPECT_EQ(SampleValue(f, "feedd_kafka_resolved_markers_total", counter), s.resolved_markers);
  EXPECT_EQ(SampleValue(f, "feedd_kafka_heartbeats_total", counter), 0);
  EXPECT_EQ(SampleValue(f, "feedd_kafka_inflight_messages", gauge), s.inflight_messages);
  EXPECT_EQ(SampleValue(f, "feedd_kafka_broker_up", gauge), s.connected ? 1 : 0);
  EXPECT_TRUE(SampleValue(f, "feedd_kafka_embedded_relay_refused_total", counter).has_value());

  publisher->reset();
  (*store)->Close();
  store->reset();
  broker->reset();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace feedd
