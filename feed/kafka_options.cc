#include "feed/kafka_options.h"

#include "feed/kafka_conf.h"

namespace feedd {

Status ValidateKafkaOptions(const KafkaOptions& options) {
  if (options.tombstones && options.message_key != MessageKey::kItem) {
    return Status(ErrorCode::kInvalidRequest,
                  "invalid value for kafka.tombstones: true needs kafka.message_key=item; with "
                  "partition-key message keys a tombstone shares its key with every other item "
                  "of the partition, and log compaction would delete them all");
  }
  if (Result<KafkaConfPtr> conf = NewKafkaConf(options.properties); !conf.ok()) {
    return Status(ErrorCode::kInvalidRequest,
                  "invalid option " + conf.status().message() +
                      " (a kafka.* key that is not a feedd option is passed to librdkafka)");
  }
  return Status::Ok();
}

}  // namespace feedd
