// NewKafkaConf: the one place feedd builds a librdkafka configuration, for
// the publisher's producer, `feedd worker`'s consumer, the recovery reader
// and the embedded broker's host handle.
//
// Contract
//   Sets `properties` (feedd's defaults for that client, with the user's
//   kafka.* keys already merged over them) and checks every
//   rd_kafka_conf_set() result: a property librdkafka refuses is an
//   invalid_request naming it, e.g. "kafka.linger.ms: ...". Routes
//   librdkafka's log lines through feedd's logger (component "kafka",
//   prefixed with the client's name), so they carry feedd's format and
//   level filter.
//
// NewKafkaClient: rd_kafka_new() with such a configuration, the one place
// its ownership passes to librdkafka: the new handle owns it; on failure it
// is destroyed and the Status (kUnavailable) gives `what` and librdkafka's
// reason, e.g. "kafka consumer: ...".
//
// Thread-safety: no shared state.
// Ownership: the caller owns the configuration until NewKafkaClient() takes
// it, and owns the handle it returns (rd_kafka_destroy()).
#pragma once

#include <librdkafka/rdkafka.h>

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "util/status.h"

namespace feedd {

struct KafkaConfDeleter {
  void operator()(rd_kafka_conf_t* conf) const { rd_kafka_conf_destroy(conf); }
};
using KafkaConfPtr = std::unique_ptr<rd_kafka_conf_t, KafkaConfDeleter>;

Result<KafkaConfPtr> NewKafkaConf(const std::map<std::string, std::string>& properties);

Result<rd_kafka_t*> NewKafkaClient(rd_kafka_type_t type, KafkaConfPtr conf, std::string_view what);

}  // namespace feedd
