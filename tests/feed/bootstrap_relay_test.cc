// The embedded broker's fixed bootstrap port (a relay, feed/bootstrap_relay.h):
// a Kafka client bootstraps through it, and it holds at most
// kMaxConnections connections at once.
#include "feed/bootstrap_relay.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <vector>

#include "feed/embedded_broker.h"

namespace feedd {
namespace {

uint16_t FreePort() {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(bind(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  socklen_t len = sizeof(a);
  EXPECT_EQ(getsockname(s, reinterpret_cast<sockaddr*>(&a), &len), 0);
  close(s);
  return ntohs(a.sin_port);
}

int Connect(uint16_t port) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  EXPECT_EQ(connect(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  return s;
}

// True when the peer closed `s` within `ms`.
bool ClosedWithin(int s, int ms) {
  pollfd p{s, POLLIN, 0};
  if (poll(&p, 1, ms) != 1) return false;
  char c;
  return recv(s, &c, 1, 0) == 0;
}

TEST(BootstrapRelayTest, AKafkaClientBootstrapsThroughTheFixedPort) {
  const uint16_t port = FreePort();
  auto broker = EmbeddedBroker::Start(1, port);
  ASSERT_TRUE(broker.ok()) << broker.status().ToString();
  EXPECT_EQ((*broker)->bootstrap(), "127.0.0.1:" + std::to_string(port));
  ASSERT_TRUE((*broker)->CreateTopic("relayed", 2).ok());
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  ASSERT_EQ(rd_kafka_conf_set(conf, "bootstrap.servers", (*broker)->bootstrap().c_str(), err,
                              sizeof(err)),
            RD_KAFKA_CONF_OK);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
  ASSERT_NE(rk, nullptr) << err;
  const rd_kafka_metadata_t* md = nullptr;
  ASSERT_EQ(rd_kafka_metadata(rk, 1, nullptr, &md, 10000), RD_KAFKA_RESP_ERR_NO_ERROR);
  bool found = false;
  for (int i = 0; i < md->topic_cnt; ++i) {
    if (std::string(md->topics[i].topic) == "relayed") {
      found = true;
      EXPECT_EQ(md->topics[i].partition_cnt, 2);
    }
  }
  EXPECT_TRUE(found);
  rd_kafka_metadata_destroy(md);
  rd_kafka_destroy(rk);
}

TEST(BootstrapRelayTest, ConnectionsOverTheLimitAreClosedAndCounted) {
  const uint16_t port = FreePort();
  auto broker = EmbeddedBroker::Start(1, port);
  ASSERT_TRUE(broker.ok()) << broker.status().ToString();
  const uint64_t refused_before = BootstrapRelay::RefusedTotal();
  std::vector<int> open;
  for (size_t i = 0; i < BootstrapRelay::kMaxConnections; ++i) open.push_back(Connect(port));
  int over = Connect(port);
  EXPECT_TRUE(ClosedWithin(over, 5000)) << "connection " << open.size() + 1 << " was kept";
  close(over);
  EXPECT_EQ(BootstrapRelay::RefusedTotal(), refused_before + 1);
  for (int s : open) EXPECT_FALSE(ClosedWithin(s, 0));
  // One leaves: another is relayed again (the broker keeps it open).
  close(open.back());
  open.pop_back();
  // Until the relay notices the close (bounded in time, not in attempts: a
  // refusal is answered at once, so a loaded box can run through any count).
  int again = -1;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    again = Connect(port);
    if (!ClosedWithin(again, 100)) break;
    close(again);
    again = -1;
  }
  EXPECT_NE(again, -1) << "no connection accepted after one left";
  if (again != -1) close(again);
  for (int s : open) close(s);
}

TEST(BootstrapRelayTest, ATakenPortIsAnErrorNamingIt) {
  const uint16_t port = FreePort();
  auto first = EmbeddedBroker::Start(1, port);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  auto second = EmbeddedBroker::Start(1, port);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("kafka.embedded_port: cannot listen on 127.0.0.1:" +
                                           std::to_string(port)),
            std::string::npos)
      << second.status().message();
}

}  // namespace
}  // namespace feedd
