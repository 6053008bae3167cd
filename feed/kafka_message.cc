#include "feed/kafka_message.h"

#include <librdkafka/rdkafka.h>

#include <boost/json.hpp>

#include "util/json_parse.h"

namespace feedd {
namespace {

std::string_view DebeziumOp(ChangeOp op) {
  switch (op) {
    case ChangeOp::kCreate:
      return "c";
    case ChangeOp::kReplace:
      return "u";
    case ChangeOp::kDelete:
      return "d";
  }
  return "c";
}

boost::json::object Debezium(const KafkaOptions& options, const ChangeRecord& record,
                             boost::json::object& native) {
  boost::json::object out;
  out["before"] = native["before"];
  out["after"] = native["after"];
  // An imported item is Debezium's snapshot read: op "r", source.snapshot.
  const bool imported = native.contains("import");
  out["op"] = imported ? "r" : DebeziumOp(record.op);
  out["ts_ms"] = record.ts_ms;
  boost::json::object source;
  source["connector"] = "feedd";
  source["name"] = options.instance_name;
  source["container"] = record.container;
  source["lsn"] = record.lsn;
  source["partitionKey"] = record.partition_key;
  source["id"] = record.id;
  if (imported) source["snapshot"] = "true";
  // Debezium has no fields for a shrunk envelope: the flags go in `source`.
  if (native.contains("beforeOmitted")) source["beforeOmitted"] = true;
  if (native.contains("afterOmitted")) source["afterOmitted"] = true;
  out["source"] = std::move(source);
  return out;
}

}  // namespace

std::string TopicFor(const KafkaOptions& options, const std::string& container) {
  return options.topic_prefix + container;
}

std::string MessageKeyFor(const KafkaOptions& options, const ChangeRecord& record) {
  if (options.message_key == MessageKey::kPartitionKey) return record.partition_key;
  return boost::json::serialize(boost::json::array{boost::json::string_view(record.partition_key),
                                                   boost::json::string_view(record.id)});
}

int32_t KafkaPartitionOf(std::string_view partition_key, int32_t partition_count) {
  // librdkafka's murmur2 partitioner reads neither the topic nor the opaques.
  return rd_kafka_msg_partitioner_murmur2(nullptr, partition_key.data(), partition_key.size(),
                                          partition_count, nullptr, nullptr);
}

KafkaMessage EncodeChange(const KafkaOptions& options, const ChangeRecord& record) {
  KafkaMessage m;
  m.topic = TopicFor(options, record.container);
  m.key = MessageKeyFor(options, record);
  if (options.envelope == EnvelopeFormat::kNative &&
      record.envelope_json.size() <= options.max_envelope_bytes) {
    m.value = record.envelope_json;  // the stored bytes, as /v1/changefeed serves them
    return m;
  }
  Result<boost::json::value> parsed = ParseJson(record.envelope_json);
  boost::json::object native;
  if (parsed.ok() && parsed->is_object()) {
    native = std::move(parsed->as_object());
  } else {
    // Stored by an older version (e.g. an Infinity) or damaged: the record's
    // key fields are still known, so send the reference-only envelope.
    m.decode_error = parsed.ok() ? "the envelope is not a JSON object" : parsed.status().message();
    native = {{"lsn", record.lsn},
              {"op", std::string(ChangeOpName(record.op))},
              {"container", record.container},
              {"partitionKey", record.partition_key},
              {"id", record.id},
              {"ts", record.ts_ms},
              {"before", nullptr},
              {"after", nullptr},
              {"beforeOmitted", true},
              {"afterOmitted", true}};
    m.size_class = EnvelopeSize::kReferenceOnly;
  }
  auto encode = [&]() {
    if (options.envelope == EnvelopeFormat::kNative) return boost::json::serialize(native);
    return boost::json::serialize(Debezium(options, record, native));
  };
  std::string value = encode();
  if (value.size() > options.max_envelope_bytes && !native["before"].is_null()) {
    native["before"] = nullptr;
    native["beforeOmitted"] = true;
    m.size_class = EnvelopeSize::kBeforeOmitted;
    value = encode();
  }
  if (value.size() > options.max_envelope_bytes) {
    native["before"] = nullptr;
    native["after"] = nullptr;
    native["beforeOmitted"] = true;
    native["afterOmitted"] = true;
    m.size_class = EnvelopeSize::kReferenceOnly;
    value = encode();
  }
  m.value = std::move(value);
  return m;
}

KafkaMessage EncodeTombstone(const KafkaOptions& options, const ChangeRecord& record) {
  KafkaMessage m;
  m.topic = TopicFor(options, record.container);
  m.key = MessageKeyFor(options, record);
  return m;
}

std::string HeartbeatTopic(const KafkaOptions& options) {
  return options.topic_prefix + "__heartbeat";
}

KafkaMessage EncodeHeartbeat(const KafkaOptions& options, uint64_t now_ms, Lsn published) {
  KafkaMessage m;
  m.topic = HeartbeatTopic(options);
  m.key = boost::json::serialize(boost::json::object{{"serverName", options.instance_name}});
  m.value =
      boost::json::serialize(boost::json::object{{"ts_ms", now_ms}, {"publishedLsn", published}});
  return m;
}

KafkaMessage EncodeResolvedMarker(const KafkaOptions& options, const std::string& container,
                                  Lsn resolved) {
  KafkaMessage m;
  m.topic = TopicFor(options, container);
  m.key = std::string(kResolvedKey);
  m.value = boost::json::serialize(boost::json::object{{"resolved", resolved}});
  return m;
}

}  // namespace feedd
