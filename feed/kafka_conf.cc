#include "feed/kafka_conf.h"

#include "util/logging.h"

namespace feedd {
namespace {

// librdkafka logs with syslog levels: 0-3 errors, 4 warnings, 5-6 notices
// and information, 7 debugging.
LogLevel FromSyslog(int level) {
  if (level <= 3) return LogLevel::kError;
  if (level == 4) return LogLevel::kWarning;
  if (level <= 6) return LogLevel::kInfo;
  return LogLevel::kDebug;
}

void LogToFeedd(const rd_kafka_t* rk, int level, const char* facility, const char* line) {
  const LogLevel feedd_level = FromSyslog(level);
  if (!LogEnabled(feedd_level)) return;
  Log(feedd_level, "kafka",
      std::string(rk != nullptr ? rd_kafka_name(rk) : "librdkafka") + " " + facility + ": " + line);
}

}  // namespace

Result<KafkaConfPtr> NewKafkaConf(const std::map<std::string, std::string>& properties) {
  KafkaConfPtr conf(rd_kafka_conf_new());
  for (const auto& [key, value] : properties) {
    char err[512];
    if (rd_kafka_conf_set(conf.get(), key.c_str(), value.c_str(), err, sizeof(err)) !=
        RD_KAFKA_CONF_OK) {
      return Status(ErrorCode::kInvalidRequest, "kafka." + key + ": " + err);
    }
  }
  rd_kafka_conf_set_log_cb(conf.get(), &LogToFeedd);
  return conf;
}

Result<rd_kafka_t*> NewKafkaClient(rd_kafka_type_t type, KafkaConfPtr conf, std::string_view what) {
  char err[512];
  rd_kafka_t* client = rd_kafka_new(type, conf.get(), err, sizeof(err));
  if (client == nullptr) {
    return Status(ErrorCode::kUnavailable, std::string(what) + ": " + err);
  }
  // rd_kafka_new() took the configuration: the handle destroys it, so the
  // pointer released here is no longer ours to use.
  static_cast<void>(conf.release());
  return client;
}

}  // namespace feedd
