#include "feed/embedded_broker.h"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <charconv>
#include <utility>

#include "feed/kafka_conf.h"
#include "util/logging.h"

namespace feedd {

Result<std::unique_ptr<EmbeddedBroker>> EmbeddedBroker::Start(int brokers, uint16_t port) {
  std::unique_ptr<EmbeddedBroker> broker(new EmbeddedBroker());
  // The hosting handle never connects anywhere; keep it quiet.
  Result<KafkaConfPtr> conf = NewKafkaConf({{"log_level", "3"}});
  if (!conf.ok()) return conf.status();
  Result<rd_kafka_t*> host = NewKafkaClient(RD_KAFKA_PRODUCER, std::move(*conf), "embedded broker");
  if (!host.ok()) return host.status();
  broker->host_ = *host;
  broker->cluster_ = rd_kafka_mock_cluster_new(broker->host_, brokers);
  if (broker->cluster_ == nullptr) {
    return Status(ErrorCode::kUnavailable, "embedded broker: cannot create the mock cluster");
  }
  broker->bootstrap_ = rd_kafka_mock_cluster_bootstraps(broker->cluster_);
  if (port != 0) {
    // "127.0.0.1:PORT[,...]": relay to the first broker.
    const std::string first = broker->bootstrap_.substr(0, broker->bootstrap_.find(','));
    const size_t colon = first.rfind(':');
    uint16_t target = 0;
    if (colon == std::string::npos ||
        std::from_chars(first.data() + colon + 1, first.data() + first.size(), target).ec !=
            std::errc() ||
        target == 0) {
      return Status(ErrorCode::kInternal, "embedded broker: unexpected address " + first);
    }
    Result<std::unique_ptr<BootstrapRelay>> relay = BootstrapRelay::Start(port, target);
    if (!relay.ok()) return relay.status();
    broker->relay_ = std::move(*relay);
    broker->bootstrap_ = "127.0.0.1:" + std::to_string(port);
  }
  FEEDD_LOG(kInfo, "kafka")
      << "embedded broker (in-memory, for development and tests) at " << broker->bootstrap_
      << (port != 0 ? " (a relay to " +
                          std::string(rd_kafka_mock_cluster_bootstraps(broker->cluster_)) + ")"
                    : "");
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
  relay_.reset();  // no new connection to a broker going away
  if (cluster_ != nullptr) rd_kafka_mock_cluster_destroy(cluster_);
  if (host_ != nullptr) rd_kafka_destroy(host_);
}

}  // namespace feedd
