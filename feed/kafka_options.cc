#include "feed/kafka_options.h"

#include <librdkafka/rdkafka.h>

#include <memory>

namespace feedd {

Status ValidateKafkaOptions(const KafkaOptions& options) {
  if (options.tombstones && options.message_key != MessageKey::kItem) {
    return Status(ErrorCode::kInvalidRequest,
                  "invalid value for kafka.tombstones: true needs kafka.message_key=item; with "
                  "partition-key message keys a tombstone shares its key with every other item "
                  "of the partition, and log compaction would delete them all");
  }
  std::unique_ptr<rd_kafka_conf_t, decltype(&rd_kafka_conf_destroy)> conf(rd_kafka_conf_new(),
                                                                          &rd_kafka_conf_destroy);
  for (const auto& [key, value] : options.properties) {
    char err[512];
    if (rd_kafka_conf_set(conf.get(), key.c_str(), value.c_str(), err, sizeof(err)) !=
        RD_KAFKA_CONF_OK) {
      return Status(ErrorCode::kInvalidRequest,
                    "invalid option kafka." + key + ": " + err +
                        " (a kafka.* key that is not a feedd option is passed to librdkafka)");
    }
  }
  return Status::Ok();
}

}  // namespace feedd
