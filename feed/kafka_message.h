// KafkaMessage: the Kafka record for one change record, in the native or the
// Debezium envelope, with the contract's headers and the size policy for
// large items (docs/kafka.md).
//
// Thread-safety: free functions, no shared state.
#pragma once

#include <optional>
#include <string>

#include "feed/kafka_options.h"
#include "storage/change_record.h"

namespace feedd {

enum class EnvelopeSize {
  kFull,           // as stored
  kBeforeOmitted,  // before-image dropped, "beforeOmitted": true
  kReferenceOnly,  // before and after dropped, "beforeOmitted"/"afterOmitted": true
};

struct KafkaMessage {
  std::string topic;
  std::string key;                   // the partition key
  std::optional<std::string> value;  // nullopt: a tombstone
  EnvelopeSize size_class = EnvelopeSize::kFull;
  // Set when the stored envelope could not be parsed for re-encoding; the
  // message is then the reference-only envelope built from the record's key
  // fields (docs/kafka.md, "Undecodable envelopes").
  std::optional<std::string> decode_error;
};

std::string TopicFor(const KafkaOptions& options, const std::string& container);

// The value message for `record`, shrunk to fit options.max_envelope_bytes.
// Never throws: an envelope that does not parse is sent reference-only.
KafkaMessage EncodeChange(const KafkaOptions& options, const ChangeRecord& record);

// The tombstone that follows a delete when options.tombstones is set.
KafkaMessage EncodeTombstone(const KafkaOptions& options, const ChangeRecord& record);

}  // namespace feedd
