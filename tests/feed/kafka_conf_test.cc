// NewKafkaConf: every property is checked, and librdkafka's log lines come
// out through feedd's logger.
#include "feed/kafka_conf.h"

#include <gtest/gtest.h>

#include <string>

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
  char err[512];
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf->get(), err, sizeof(err));
  ASSERT_NE(rk, nullptr) << err;
  conf->release();  // rd_kafka_new() took it
  rd_kafka_destroy(rk);
  const std::string out = testing::internal::GetCapturedStderr();
  SetLogLevel(LogLevel::kInfo);
  EXPECT_NE(out.find(" DEBUG kafka: conf-test#producer-"), std::string::npos) << out;
}

}  // namespace
}  // namespace feedd
