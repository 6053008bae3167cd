// The headers of a consumed Kafka message as feedd's publisher writes them
// (feedd-lsn, feedd-op, feedd-container, feedd-id, feedd-partition-key, and
// feedd-resolved on resolved markers; docs/kafka.md), for the
// components that read feedd's topics back: publisher recovery, processor
// instances and feedd worker.
//
// Thread-safety: free functions; the views returned live as long as the
// message.
#pragma once

#include <librdkafka/rdkafka.h>

#include <charconv>
#include <string>
#include <string_view>

#include "storage/change_record.h"

namespace feedd {

// The last value of header `name`, or "" when the message has none.
inline std::string_view HeaderValue(const rd_kafka_message_t* m, const char* name) {
  rd_kafka_headers_t* headers = nullptr;
  const void* value = nullptr;
  size_t size = 0;
  if (rd_kafka_message_headers(m, &headers) != RD_KAFKA_RESP_ERR_NO_ERROR ||
      rd_kafka_header_get_last(headers, name, &value, &size) != RD_KAFKA_RESP_ERR_NO_ERROR ||
      value == nullptr) {
    return {};
  }
  return {static_cast<const char*>(value), size};
}

// A decimal LSN (a header or offset metadata), or 0 when it is not one.
inline Lsn ParseLsn(std::string_view text) {
  Lsn lsn = 0;
  if (std::from_chars(text.data(), text.data() + text.size(), lsn).ec != std::errc()) return 0;
  return lsn;
}

// The partition key of the item a message is about: its feedd-partition-key
// header, or, for messages of feedd versions without that header (which keyed
// every message by partition key), the message key.
inline std::string PartitionKeyOf(const rd_kafka_message_t* m) {
  rd_kafka_headers_t* headers = nullptr;
  const void* value = nullptr;
  size_t size = 0;
  if (rd_kafka_message_headers(m, &headers) == RD_KAFKA_RESP_ERR_NO_ERROR &&
      rd_kafka_header_get_last(headers, "feedd-partition-key", &value, &size) ==
          RD_KAFKA_RESP_ERR_NO_ERROR) {
    return value == nullptr ? std::string() : std::string(static_cast<const char*>(value), size);
  }
  if (m->key == nullptr) return {};
  return std::string(static_cast<const char*>(m->key), m->key_len);
}

// The message's feedd-lsn header, or 0.
inline Lsn LsnHeader(const rd_kafka_message_t* m) { return ParseLsn(HeaderValue(m, "feedd-lsn")); }

// The LSN a resolved marker vouches for (its feedd-resolved header), or 0
// when the message is not a resolved marker.
inline Lsn ResolvedHeader(const rd_kafka_message_t* m) {
  return ParseLsn(HeaderValue(m, "feedd-resolved"));
}

}  // namespace feedd
