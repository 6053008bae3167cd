#include "feed/partition_recovery.h"

#include <librdkafka/rdkafka.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "feed/kafka_conf.h"
#include "feed/message_headers.h"
#include "util/logging.h"

namespace feedd {

Result<PublishedTail> ReadPublishedLsns(const std::map<std::string, std::string>& properties,
                                        const std::map<std::string, int>& partitions,
                                        uint64_t after_lsn, int64_t max_per_partition,
                                        std::chrono::milliseconds timeout) {
  std::map<std::string, std::string> props = properties;
  props["enable.auto.commit"] = "false";
  // consumer_poll() needs a group id; assign() never joins the group.
  props["group.id"] = "feedd-tail-reader-" + std::to_string(getpid());
  props["fetch.wait.max.ms"] = "10";
  Result<KafkaConfPtr> conf = NewKafkaConf(props);
  if (!conf.ok()) return conf.status();
  Result<rd_kafka_t*> client =
      NewKafkaClient(RD_KAFKA_CONSUMER, std::move(*conf), "recovery consumer");
  if (!client.ok()) return client.status();
  rd_kafka_t* consumer = *client;

  PublishedTail tail;
  std::map<std::pair<std::string, int>, int64_t> end_offsets;  // partitions still to read
  rd_kafka_topic_partition_list_t* assignment = rd_kafka_topic_partition_list_new(8);
  Status status;
  for (const auto& [topic, count] : partitions) {
    for (int p = 0; p < count && status.ok(); ++p) {
      int64_t low = 0, high = 0;
      rd_kafka_resp_err_t e = rd_kafka_query_watermark_offsets(
          consumer, topic.c_str(), p, &low, &high, static_cast<int>(timeout.count()));
      if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
        status =
            Status(ErrorCode::kUnavailable,
                   "watermarks of " + topic + "/" + std::to_string(p) + ": " + rd_kafka_err2str(e));
      } else if (high > low) {
        rd_kafka_topic_partition_list_add(assignment, topic.c_str(), p)->offset =
            std::max(low, high - max_per_partition);
        end_offsets[{topic, p}] = high;
      }
    }
  }
  if (status.ok() && !end_offsets.empty()) {
    if (rd_kafka_resp_err_t e = rd_kafka_assign(consumer, assignment);
        e != RD_KAFKA_RESP_ERR_NO_ERROR) {
      status = Status(ErrorCode::kUnavailable,
                      std::string("assigning the tail's partitions: ") + rd_kafka_err2str(e));
    }
  }
  if (status.ok() && !end_offsets.empty()) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!end_offsets.empty() && std::chrono::steady_clock::now() < deadline) {
      rd_kafka_message_t* msg = rd_kafka_consumer_poll(consumer, 50);
      if (msg == nullptr) continue;
      if (msg->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        if (Lsn lsn = LsnHeader(msg); lsn > after_lsn) tail.lsns.insert(lsn);
        tail.resolved = std::max(tail.resolved, ResolvedHeader(msg));
        auto it = end_offsets.find({rd_kafka_topic_name(msg->rkt), msg->partition});
        if (it != end_offsets.end() && msg->offset + 1 >= it->second) end_offsets.erase(it);
      }
      rd_kafka_message_destroy(msg);
    }
    if (!end_offsets.empty()) {
      status = Status(ErrorCode::kUnavailable, "could not read the tail of " +
                                                   std::to_string(end_offsets.size()) +
                                                   " partition(s) in time");
    }
    // Failing to unassign or to close is harmless: the consumer never joined
    // the group nor committed (assign() only, no auto commit), and
    // rd_kafka_destroy() below ends it either way; logged, not returned.
    if (rd_kafka_resp_err_t e = rd_kafka_assign(consumer, nullptr);
        e != RD_KAFKA_RESP_ERR_NO_ERROR) {
      FEEDD_LOG(kWarning, "kafka") << "recovery consumer: unassigning: " << rd_kafka_err2str(e);
    }
  }
  rd_kafka_topic_partition_list_destroy(assignment);
  if (rd_kafka_resp_err_t e = rd_kafka_consumer_close(consumer); e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    FEEDD_LOG(kWarning, "kafka") << "recovery consumer: closing: " << rd_kafka_err2str(e);
  }
  rd_kafka_destroy(consumer);
  if (!status.ok()) return status;
  return tail;
}

}  // namespace feedd
