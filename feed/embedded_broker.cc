#include "feed/embedded_broker.h"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include "feed/kafka_conf.h"
#include "util/logging.h"

namespace feedd {

Result<std::unique_ptr<EmbeddedBroker>> EmbeddedBroker::Start(int brokers) {
  std::unique_ptr<EmbeddedBroker> broker(new EmbeddedBroker());
  // The hosting handle never connects anywhere; keep it quiet.
  Result<KafkaConfPtr> conf = NewKafkaConf({{"log_level", "3"}});
  if (!conf.ok()) return conf.status();
  char err[512];
  broker->host_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf->get(), err, sizeof(err));
  if (broker->host_ == nullptr) {
    return Status(ErrorCode::kUnavailable, std::string("embedded broker: ") + err);
  }
  conf->release();  // rd_kafka_new() took it
  broker->cluster_ = rd_kafka_mock_cluster_new(broker->host_, brokers);
  if (broker->cluster_ == nullptr) {
    return Status(ErrorCode::kUnavailable, "embedded broker: cannot create the mock cluster");
  }
  broker->bootstrap_ = rd_kafka_mock_cluster_bootstraps(broker->cluster_);
  FEEDD_LOG(kInfo, "kafka") << "embedded broker (in-memory, for development and tests) at "
                            << broker->bootstrap_;
  return broker;
}

Status EmbeddedBroker::CreateTopic(const std::string& topic, int partitions) {
  rd_kafka_resp_err_t e = rd_kafka_mock_topic_create(cluster_, topic.c_str(), partitions, 1);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR && e != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
    return Status(ErrorCode::kUnavailable,
                  "embedded broker: cannot create " + topic + ": " + rd_kafka_err2str(e));
  }
  return Status::Ok();
}

EmbeddedBroker::~EmbeddedBroker() {
  if (cluster_ != nullptr) rd_kafka_mock_cluster_destroy(cluster_);
  if (host_ != nullptr) rd_kafka_destroy(host_);
}

}  // namespace feedd
