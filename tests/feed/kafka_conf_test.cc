// NewKafkaConf: every property is checked, and librdkafka's log lines come
// out through feedd's logger. NewKafkaClient: a configuration rd_kafka_new()
// refuses is an error naming the client.
#include "feed/kafka_conf.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "util/logging.h"

namespace feedd {
namespace {

TEST(KafkaConfTest, APropertyLibrdkafkaRefusesIsAnErrorNamingIt) {
  auto unknown = NewKafkaConf({{"linger.ms", "1"}, {"no.such.property", "1"}});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), ErrorCode::kInvalidRequest);
  EXPECT_EQ(unknown.status().message().rfind("kafka.no.such.property: ", 0), 0u)
      << unknown.status().message();
  auto bad_value = NewKafkaConf({{"linger.ms", "-5"}});
  ASSERT_FALSE(bad_value.ok());
  EXPECT_EQ(bad_value.status().message().rfind("kafka.linger.ms: ", 0), 0u)
      << bad_value.status().message();
}

TEST(KafkaConfTest, LibrdkafkasLinesGoThroughFeeddsLogger) {
  auto conf = NewKafkaConf({{"client.id", "conf-test"}, {"debug", "generic"}});
  ASSERT_TRUE(conf.ok()) << conf.status().ToString();
  SetLogLevel(LogLevel::kDebug);
  testing::internal::CaptureStderr();
  auto rk = NewKafkaClient(RD_KAFKA_PRODUCER, std::move(*conf), "conf test");
  ASSERT_TRUE(rk.ok()) << rk.status().ToString();
  rd_kafka_destroy(*rk);
  const std::string out = testing::internal::GetCapturedStderr();
  SetLogLevel(LogLevel::kInfo);
  EXPECT_NE(out.find(" DEBUG kafka: conf-test#producer-"), std::string::npos) << out;
}

TEST(KafkaConfTest, AConfigurationRdKafkaNewRefusesIsAnErrorNamingTheClient) {
  // Each property is valid alone (NewKafkaConf takes them); rd_kafka_new()
  // checks them together: an idempotent producer needs acks=all.
  auto conf = NewKafkaConf({{"enable.idempotence", "true"}, {"acks", "1"}});
  ASSERT_TRUE(conf.ok()) << conf.status().ToString();
  auto rk = NewKafkaClient(RD_KAFKA_PRODUCER, std::move(*conf), "kafka producer");
  ASSERT_FALSE(rk.ok());
  EXPECT_EQ(rk.status().code(), ErrorCode::kUnavailable);
  EXPECT_EQ(rk.status().message().rfind("kafka producer: ", 0), 0u) << rk.status().message();
  EXPECT_NE(rk.status().message().find("acks"), std::string::npos) << rk.status().message();
}

}  // namespace
}  // namespace feedd
