#include "daemon/options.h"

#include <algorithm>
#include <boost/program_options.hpp>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "daemon/default_config.h"
#include "storage/container_spec.h"
#include "util/split_list.h"

namespace feedd {
namespace {

namespace po = boost::program_options;

// ---- Value parsers (the validators of the table) ----

Status BadValue(std::string_view expected, std::string_view got) {
  std::string message = "expected ";
  message.append(expected);
  message += ", got '";
  message.append(got);
  message += "'";
  return Status(ErrorCode::kInvalidRequest, std::move(message));
}

Status ParseUint(std::string_view text, uint64_t min, uint64_t max, uint64_t* out) {
  std::string expected = "an integer in " + std::to_string(min) + ".." + std::to_string(max);
  if (text.empty() || text.size() > 20) return BadValue(expected, text);
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return BadValue(expected, text);
    uint64_t digit = static_cast<uint64_t>(c - '0');
    if (value > (UINT64_MAX - digit) / 10) return BadValue(expected, text);
    value = value * 10 + digit;
  }
  if (value < min || value > max) return BadValue(expected, text);
  *out = value;
  return Status::Ok();
}

template <typename T>
Status ParseUintInto(std::string_view text, uint64_t min, uint64_t max, T* out) {
  uint64_t value = 0;
  Status status = ParseUint(text, min, max, &value);
  if (status.ok()) *out = static_cast<T>(value);
  return status;
}

constexpr uint64_t kMiB = 1024 * 1024;

// A size given in MiB (`min`..`max` of them), stored in bytes.
template <typename T>
Status ParseMiBInto(std::string_view text, uint64_t min, uint64_t max, T* out) {
  uint64_t mb = 0;
  Status status = ParseUint(text, min, max, &mb);
  if (status.ok()) *out = static_cast<T>(mb * kMiB);
  return status;
}

Status ParseBool(std::string_view text, bool* out) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower == "true" || lower == "1" || lower == "yes" || lower == "on") {
    *out = true;
  } else if (lower == "false" || lower == "0" || lower == "no" || lower == "off") {
    *out = false;
  } else {
    return BadValue("true/false/1/0/yes/no/on/off", text);
  }
  return Status::Ok();
}

Status ParseHostPortInto(std::string_view text, HostPort* out) {
  Result<HostPort> parsed = ParseHostPort(text);
  if (!parsed.ok()) return parsed.status();
  *out = std::move(*parsed);
  return Status::Ok();
}

Status ParseNonEmpty(std::string_view text, std::string* out) {
  if (text.empty()) return BadValue("a non-empty string", text);
  *out = std::string(text);
  return Status::Ok();
}

Status ParseKafkaBrokers(std::string_view text, KafkaOptions* out) {
  out->bootstrap.clear();
  if (text == "embedded") {
    out->brokers = KafkaBrokers::kEmbedded;
    return Status::Ok();
  }
  if (text == "none") {
    out->brokers = KafkaBrokers::kNone;
    return Status::Ok();
  }
  std::vector<std::string_view> brokers = SplitList(text);
  if (brokers.empty()) brokers.emplace_back();
  for (std::string_view broker : brokers) {
    Result<HostPort> parsed = ParseHostPort(broker);
    if (!parsed.ok() || parsed->port == 0) {
      return BadValue("'embedded', 'none' or a list HOST:PORT,... with non-zero ports", text);
    }
  }
  out->brokers = KafkaBrokers::kCluster;
  out->bootstrap = std::string(text);
  return Status::Ok();
}

Status ParseTopicPrefix(std::string_view text, std::string* out) {
  // Kafka topic names are [a-zA-Z0-9._-]{1,249}; container names add <= 63.
  bool ok =
      text.size() <= 180 && std::all_of(text.begin(), text.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '_' || c == '-';
      });
  if (!ok) return BadValue("at most 180 characters of [a-zA-Z0-9._-]", text);
  *out = std::string(text);
  return Status::Ok();
}

// ---- The option table: every option, declared once ----

struct OptionSpec {
  const char* name;  // "section.key"
  const char* default_value;
  const char* description;
  Status (*apply)(std::string_view value, DaemonConfig& config);
};

const OptionSpec kOptions[] = {
    {"storage.data_dir", "./data", "directory of the RocksDB database",
     [](std::string_view v, DaemonConfig& c) { return ParseNonEmpty(v, &c.store.data_dir); }},
    {"storage.sync", "true", "acknowledge a write only once its WAL is fsynced",
     [](std::string_view v, DaemonConfig& c) { return ParseBool(v, &c.store.sync); }},
    {"storage.max_item_bytes", "2097152", "largest serialized item, in bytes (1024..268435456)",
     [](std::string_view v, DaemonConfig& c) {
       return ParseUintInto(v, 1024, 256 * kMiB, &c.store.max_item_bytes);
     }},
    {"storage.before_images", "true", "store the previous version of an item in its change record",
     [](std::string_view v, DaemonConfig& c) { return ParseBool(v, &c.store.before_images); }},
    {"storage.wal_compression", "false",
     "compress the WAL's records with zstd (experimental in RocksDB 7.8)",
     [](std::string_view v, DaemonConfig& c) { return ParseBool(v, &c.store.wal_compression); }},
    {"storage.max_wal_mb", "256",
     "write-ahead logs held before RocksDB flushes the memtables keeping the oldest, in MiB: what "
     "a restart after a crash replays, and how often logs are freed for reuse (16..65536)",
     [](std::string_view v, DaemonConfig& c) {
       return ParseMiBInto(v, 16, 65536, &c.store.max_total_wal_bytes);
     }},
    {"storage.wal_recycle_files", "8",
     "old write-ahead logs (at most 64 MiB each) kept for new logs to be written over, so that a "
     "commit's fsync does not also write the file's growth (0 = every log a new file, ..64)",
     [](std::string_view v, DaemonConfig& c) {
       return ParseUintInto(v, 0, 64, &c.store.wal_recycle_files);
     }},
    {"storage.idle_sync_delay_ms", "1",
     "writes synced by no fsync of their own (processors' view writes) wait this long on an idle "
     "store for a client's write to carry them in its fsync (0..1000)",
     [](std::string_view v, DaemonConfig& c) {
       uint64_t ms = 0;
       Status s = ParseUint(v, 0, 1000, &ms);
       if (s.ok()) c.store.idle_sync_delay = std::chrono::milliseconds(ms);
       return s;
     }},
    {"storage.block_cache_mb", "256", "RocksDB block cache, in MiB (1..65536)",
     [](std::string_view v, DaemonConfig& c) {
       return ParseMiBInto(v, 1, 65536, &c.store.block_cache_bytes);
     }},
    {"storage.query_cache_mb", "64",
     "memory for answers of single-partition queries, in MiB (0 = no query cache)",
     [](std::string_view v, DaemonConfig& c) {
       return ParseMiBInto(v, 0, 65536, &c.store.query_cache_bytes);
     }},
    {"storage.min_free_mb", "256",
     "free space kept on the data directory's file system, in MiB; below it writes answer 507 "
     "(0 = no reserve, ..1048576)",
     [](std::string_view v, DaemonConfig& c) {
       return ParseMiBInto(v, 0, 1024 * 1024, &c.store.min_free_bytes);
     }},
    {"feed.retention_hours", "168", "drop changes older than this many hours (0 = no age limit)",
     [](std::string_view v, DaemonConfig& c) {
       uint64_t hours = 0;
       Status s = ParseUint(v, 0, 10 * 365 * 24, &hours);
       if (s.ok()) c.store.retention_ms = hours * 3600 * 1000;
       return s;
     }},
    {"feed.retention_mb", "0", "keep at most this many MiB of changes (0 = no size limit)",
     [](std::string_view v, DaemonConfig& c) {
       return ParseMiBInto(v, 0, 1024 * 1024 * 1024, &c.store.retention_bytes);
     }},
    {"feed.retention_interval_ms", "10000", "how often retention runs, in ms (100..3600000)",
     [](std::string_view v, DaemonConfig& c) {
       return ParseUintInto(v, 100, 3600000, &c.store.retention_interval_ms);
     }},
    {"feed.max_page_bytes", "16777216",
     "a /v1/changefeed page ends before its changes pass this many bytes; it always holds at "
     "least one change (1024..1073741824)",
     [](std::string_view v, DaemonConfig& c) {
       return ParseUintInto(v, 1024, 1024 * kMiB, &c.feed_max_page_bytes);
     }},
    {"feed.in_process_mb", "256",
     "memory, in MiB, for committed changes queued for the processors and the publisher inside "
     "the daemon, shared; a reader further behind reads them from the durable feed (1..65536)",
     [](std::string_view v, DaemonConfig& c) {
       return ParseMiBInto(v, 1, 65536, &c.store.commit_tail_bytes);
     }},
    {"query.max_filters", "16", "filters one query may have; more is query_too_expensive (1..1024)",
     [](std::string_view v, DaemonConfig& c) {
       return ParseUintInto(v, 1, 1024, &c.query_limits.max_filters);
     }},
    {"query.max_items_read", "100000",
     "items plus index entries one query page may read; more is query_too_expensive "
     "(1..1000000000)",
     [](std::string_view v, DaemonConfig& c) {
       return ParseUintInto(v, 1, 1000000000, &c.query_limits.max_items_read);
     }},
    {"query.max_bytes_read", "67108864",
     "bytes one query page may read; more is query_too_expensive (1024..1099511627776)",
     [](std::string_view v, DaemonConfig& c) {
       return ParseUintInto(v, 1024, 1024 * 1024 * kMiB, &c.query_limits.max_bytes_read);
     }},
    {"query.max_page_bytes", "16777216",
     "a query page ends before its items pass this many bytes; it always holds at least one "
     "item (1024..1073741824)",
     [](std::string_view v, DaemonConfig& c) {
       return ParseUintInto(v, 1024, 1024 * kMiB, &c.query_limits.max_page_bytes);
     }},
    {"query.threads", "2",
     "threads that run cross-partition queries, apart from the HTTP I/O threads (1..64)",
     [](std::string_view v, DaemonConfig& c) { return ParseUintInto(v, 1, 64, &c.query_threads); }},
    {"query.max_queued", "64",
     "cross-partition queries waiting for a query thread, at most; more is 429 (1..100000)",
     [](std::string_view v, DaemonConfig& c) {
       return ParseUintInto(v, 1, 100000, &c.query_max_queued);
     }},
    {"http.listen", "127.0.0.1:8080", "HTTP API address HOST:PORT (port 0 picks a free port)",
     [](std::string_view v, DaemonConfig& c) { return ParseHostPortInto(v, &c.http_listen); }},
    {"http.threads", "2", "HTTP I/O threads (1..64)",
     [](std::string_view v, DaemonConfig& c) { return ParseUintInto(v, 1, 64, &c.http_threads); }},
    {"http.max_request_bytes", "8388608",
     "largest request body, in bytes; larger is 413 (1024..1073741824)",
     [](std::string_view v, DaemonConfig& c) {
       return ParseUintInto(v, 1024, 1024 * kMiB, &c.http_max_request_bytes);
     }},
    {"http.idle_timeout_seconds", "60", "close a connection idle this long (1..86400)",
     [](std::string_view v, DaemonConfig& c) {
       return ParseUintInto(v, 1, 86400, &c.http_idle_timeout_seconds);
     }},
    {"http.shutdown_grace_seconds", "10",
     "on stop, wait this long for in-flight requests (0..3600)",
     [](std::string_view v, DaemonConfig& c) {
       return ParseUintInto(v, 0, 3600, &c.http_shutdown_grace_seconds);
     }},
    {"http.max_connections", "512",
     "open API connections, at most; more are answered 503 and closed. With the reserve for "
     "storage and Kafka it must fit the open-files limit (ulimit -n) (1..1000000)",
     [](std::string_view v, DaemonConfig& c) {
       return ParseUintInto(v, 1, 1000000, &c.http_max_connections);
     }},
    {"http.max_buffered_bytes", "268435456",
     "request body bytes held by all connections together; a request over it is 503 "
     "(at least http.max_request_bytes, at most 68719476736)",
     [](std::string_view v, DaemonConfig& c) {
       return ParseUintInto(v, 1024, 64 * 1024 * kMiB, &c.http_max_buffered_bytes);
     }},
    {"http.tls_cert_file", "",
     "PEM certificate chain (leaf first): with http.tls_key_file the API speaks HTTPS only "
     "(TLS >= 1.2). Reloaded on SIGHUP",
     [](std::string_view v, DaemonConfig& c) {
       c.http_tls_cert_file = std::string(v);
       return Status::Ok();
     }},
    {"http.tls_key_file", "", "PEM private key of http.tls_cert_file. Reloaded on SIGHUP",
     [](std::string_view v, DaemonConfig& c) {
       c.http_tls_key_file = std::string(v);
       return Status::Ok();
     }},
    {"http.tls_client_ca_file", "",
     "PEM CAs: HTTPS clients must present a certificate they sign (mTLS)",
     [](std::string_view v, DaemonConfig& c) {
       c.http_tls_client_ca_file = std::string(v);
       return Status::Ok();
     }},
    {"auth.tokens_file", "",
     "bearer tokens and their roles, one 'NAME ROLE sha256:HEX' a line; the API then answers "
     "only requests with a known token (docs/security.md). Reloaded on SIGHUP",
     [](std::string_view v, DaemonConfig& c) {
       c.auth_tokens_file = std::string(v);
       return Status::Ok();
     }},
    {"auth.allow_unauthenticated", "false",
     "serve the API without auth.tokens_file on a non-loopback http.listen (anyone who can "
     "reach it may do anything)",
     [](std::string_view v, DaemonConfig& c) {
       return ParseBool(v, &c.auth_allow_unauthenticated);
     }},
    {"import.batch_mb", "4",
     "a bulk import writes its items in WriteBatches of about this many MiB (1..256)",
     [](std::string_view v, DaemonConfig& c) {
       return ParseMiBInto(v, 1, 256, &c.import_batch_bytes);
     }},
    {"import.sync_mb", "64",
     "a bulk import syncs the WAL once per this many MiB written, and at its end (1..65536)",
     [](std::string_view v, DaemonConfig& c) {
       return ParseMiBInto(v, 1, 65536, &c.import_sync_bytes);
     }},
    {"import.max_concurrent", "2",
     "bulk imports running at once, at most; more are answered 503 (1..64)",
     [](std::string_view v, DaemonConfig& c) {
       return ParseUintInto(v, 1, 64, &c.import_max_concurrent);
     }},
    {"import.spool_max_mb", "4096",
     "an import job (job=true) spools its body under the data directory, at most this many MiB; "
     "a larger body is answered 413 (1..1048576)",
     [](std::string_view v, DaemonConfig& c) {
       Status s = ParseUintInto(v, 1, 1048576, &c.import_spool_max_bytes);
       c.import_spool_max_bytes *= kMiB;
       return s;
     }},
    {"metrics.listen", "127.0.0.1:9464", "Prometheus metrics address HOST:PORT (port 0 = any)",
     [](std::string_view v, DaemonConfig& c) { return ParseHostPortInto(v, &c.metrics_listen); }},
    {"metrics.authenticate", "false",
     "with auth.tokens_file: /metrics needs HTTP basic authentication, user a token's NAME "
     "and password its secret (any role)",
     [](std::string_view v, DaemonConfig& c) { return ParseBool(v, &c.metrics_authenticate); }},
    {"metrics.request_timeout_ms", "3000",
     "the metrics server drops a client that sends or reads nothing for this long (100..600000)",
     [](std::string_view v, DaemonConfig& c) {
       return ParseUintInto(v, 100, 600000, &c.metrics_request_timeout_ms);
     }},
    {"metrics.tls_cert_file", "",
     "PEM certificate chain (leaf first): with metrics.tls_key_file the metrics port speaks "
     "HTTPS only (TLS >= 1.2). Reloaded on SIGHUP",
     [](std::string_view v, DaemonConfig& c) {
       c.metrics_tls_cert_file = std::string(v);
       return Status::Ok();
     }},
    {"metrics.tls_key_file", "", "PEM private key of metrics.tls_cert_file. Reloaded on SIGHUP",
     [](std::string_view v, DaemonConfig& c) {
       c.metrics_tls_key_file = std::string(v);
       return Status::Ok();
     }},
    {"metrics.tls_client_ca_file", "",
     "PEM CAs: scrapers must present a certificate they sign (mTLS)",
     [](std::string_view v, DaemonConfig& c) {
       c.metrics_tls_client_ca_file = std::string(v);
       return Status::Ok();
     }},
    {"log.level", "info", "debug, info, warning or error",
     [](std::string_view v, DaemonConfig& c) {
       return ParseLogLevel(v, &c.log_level) ? Status::Ok()
                                             : BadValue("debug, info, warning or error", v);
     }},
    {"kafka.brokers", "embedded",
     "'embedded' (in-process broker on loopback), 'none' (no publishing) or a bootstrap list "
     "HOST:PORT,...",
     [](std::string_view v, DaemonConfig& c) { return ParseKafkaBrokers(v, &c.kafka); }},
    {"kafka.topic_prefix", "feedd.", "Kafka topic of a container: <prefix><container>",
     [](std::string_view v, DaemonConfig& c) {
       return ParseTopicPrefix(v, &c.kafka.topic_prefix);
     }},
    {"kafka.envelope", "native", "message value: 'native' (the change envelope) or 'debezium'",
     [](std::string_view v, DaemonConfig& c) {
       if (v == "native")
         c.kafka.envelope = EnvelopeFormat::kNative;
       else if (v == "debezium")
         c.kafka.envelope = EnvelopeFormat::kDebezium;
       else
         return BadValue("native or debezium", v);
       return Status::Ok();
     }},
    {"kafka.message_key", "partition_key",
     "message key: 'partition_key' (the partition key value) or 'item' "
     "(JSON [partitionKey, id]); the Kafka partition follows the partition key either way",
     [](std::string_view v, DaemonConfig& c) {
       if (v == "partition_key")
         c.kafka.message_key = MessageKey::kPartitionKey;
       else if (v == "item")
         c.kafka.message_key = MessageKey::kItem;
       else
         return BadValue("partition_key or item", v);
       return Status::Ok();
     }},
    {"kafka.tombstones", "false",
     "follow each delete with a null-value message of the same key (needs "
     "kafka.message_key=item)",
     [](std::string_view v, DaemonConfig& c) { return ParseBool(v, &c.kafka.tombstones); }},
    {"kafka.create_topics", "true", "create missing topics",
     [](std::string_view v, DaemonConfig& c) { return ParseBool(v, &c.kafka.create_topics); }},
    {"kafka.partitions", "3", "partitions of a created topic (1..10000)",
     [](std::string_view v, DaemonConfig& c) {
       return ParseUintInto(v, 1, 10000, &c.kafka.partitions);
     }},
    {"kafka.replication_factor", "1", "replication factor of a created topic (1..32)",
     [](std::string_view v, DaemonConfig& c) {
       return ParseUintInto(v, 1, 32, &c.kafka.replication_factor);
     }},
    {"kafka.max_envelope_bytes", "921600",
     "larger envelopes lose their images (docs/kafka.md, 'Large items') (1024..104857600)",
     [](std::string_view v, DaemonConfig& c) {
       return ParseUintInto(v, 1024, 100 * kMiB, &c.kafka.max_envelope_bytes);
     }},
    {"kafka.max_inflight_messages", "20000", "messages awaiting delivery, at most (1..1000000)",
     [](std::string_view v, DaemonConfig& c) {
       return ParseUintInto(v, 1, 1000000, &c.kafka.max_inflight_messages);
     }},
    {"kafka.max_inflight_mb", "64", "MiB of messages awaiting delivery, at most (1..4096)",
     [](std::string_view v, DaemonConfig& c) {
       return ParseMiBInto(v, 1, 4096, &c.kafka.max_inflight_bytes);
     }},
    {"kafka.resolved_interval_ms", "0",
     "resolved markers to every partition at most this often, when something was published "
     "(docs/kafka.md, 'Resolved markers'); 0: none (0..3600000)",
     [](std::string_view v, DaemonConfig& c) {
       return ParseUintInto(v, 0, 3600000, &c.kafka.resolved_interval_ms);
     }},
    {"kafka.heartbeat_interval_ms", "0",
     "a heartbeat to <topic_prefix>__heartbeat this often, written or not (docs/kafka.md, "
     "'Heartbeats'); 0: none (0..3600000)",
     [](std::string_view v, DaemonConfig& c) {
       return ParseUintInto(v, 0, 3600000, &c.kafka.heartbeat_interval_ms);
     }},
    {"kafka.embedded_port", "0", "bootstrap port of the embedded broker; 0: a free port (0..65535)",
     [](std::string_view v, DaemonConfig& c) {
       return ParseUintInto(v, 0, 65535, &c.kafka.embedded_port);
     }},
    {"processors.enabled", "true", "run the processors ([processor.<name>] sections)",
     [](std::string_view v, DaemonConfig& c) { return ParseBool(v, &c.processors_enabled); }},
    {"processors.max_admin_tasks", "2",
     "rebuilds and verifies running at once (1..64); more are answered 429, a second one on "
     "the same processor 409",
     [](std::string_view v, DaemonConfig& c) {
       return ParseUintInto(v, 1, 64, &c.processors_max_admin_tasks);
     }},
    {"ready_file", "", "once serving, write the bound addresses to this file (JSON)",
     [](std::string_view v, DaemonConfig& c) {
       c.ready_file = std::string(v);
       return Status::Ok();
     }},
    {"worker.api", "127.0.0.1:8080",
     "feedd worker: the daemon's HTTP API, HOST:PORT or http://HOST:PORT",
     [](std::string_view v, DaemonConfig& c) {
       Result<HostPort> parsed = ParseApiAddress(v);
       if (parsed.ok()) c.worker_api = parsed->ToString();
       return parsed.status();
     }},
    {"worker.token_file", "",
     "feedd worker: file whose first line is the bearer token sent to worker.api (else "
     "$FEEDD_TOKEN_FILE, else $FEEDD_TOKEN)",
     [](std::string_view v, DaemonConfig& c) {
       c.worker_token_file = std::string(v);
       return Status::Ok();
     }},
    {"worker.tls_ca_file", "",
     "feedd worker: PEM CAs of the API's certificate; set, the worker speaks HTTPS",
     [](std::string_view v, DaemonConfig& c) {
       c.worker_tls_ca_file = std::string(v);
       return Status::Ok();
     }},
    {"worker.tls_cert_file", "", "feedd worker: PEM client certificate for an mTLS API",
     [](std::string_view v, DaemonConfig& c) {
       c.worker_tls_cert_file = std::string(v);
       return Status::Ok();
     }},
    {"worker.tls_key_file", "", "feedd worker: PEM key of worker.tls_cert_file",
     [](std::string_view v, DaemonConfig& c) {
       c.worker_tls_key_file = std::string(v);
       return Status::Ok();
     }},
    {"worker.processors", "",
     "feedd worker: processors to run, comma-separated (default: those with run = worker)",
     [](std::string_view v, DaemonConfig& c) {
       c.worker_processors.clear();
       for (std::string_view name : SplitList(v)) {
         if (!name.empty()) c.worker_processors.emplace_back(name);
       }
       return Status::Ok();
     }},
    {"worker.metrics_listen", "127.0.0.1:9465",
     "feedd worker: Prometheus metrics address HOST:PORT (port 0 = any), with metrics.tls_* and "
     "metrics.authenticate; non-loopback needs authentication as metrics.listen does",
     [](std::string_view v, DaemonConfig& c) {
       return ParseHostPortInto(v, &c.worker_metrics_listen);
     }},
    {"worker.verify", "false",
     "feedd worker: recompute the views of its processors, print every difference and exit "
     "(0: none)",
     [](std::string_view v, DaemonConfig& c) { return ParseBool(v, &c.worker_verify); }},
    {"instance.name", "feedd", "name of this daemon (Kafka source.name, metrics)",
     [](std::string_view v, DaemonConfig& c) {
       Status s = ParseNonEmpty(v, &c.instance_name);
       c.kafka.instance_name = c.instance_name;
       return s;
     }},
};

// Command-line spellings from the contract, and the option each stands for.
struct Alias {
  const char* name;
  const char* option;
  const char* value_name;  // in --help
};
const Alias kAliases[] = {
    {"data-dir", "storage.data_dir", "DIR"},
    {"listen", "http.listen", "HOST:PORT"},
    {"metrics-listen", "metrics.listen", "HOST:PORT"},
    {"ready-file", "ready_file", "PATH"},
};

std::string EnvName(std::string_view option) {
  std::string out = "FEEDD_";
  for (char c : option) {
    out += c == '.' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return out;
}

Status ConfigError(std::string message) {
  return Status(ErrorCode::kInvalidRequest, std::move(message));
}

po::options_description ConfigDescription() {
  po::options_description desc("Configuration options");
  for (const OptionSpec& spec : kOptions) {
    desc.add_options()(
        spec.name, po::value<std::string>()->value_name("VALUE")->default_value(spec.default_value),
        spec.description);
  }
  return desc;
}

po::options_description CommandLineOnlyDescription() {
  po::options_description desc("Command line");
  desc.add_options()                                           //
      ("help", "print this help and exit")                     //
      ("version", "print the version and exit")                //
      ("check-config", "validate the configuration and exit")  //
      ("config", po::value<std::string>()->value_name("FILE"), "INI configuration file");
  for (const Alias& alias : kAliases) {
    std::string help = "same as --";
    help += alias.option;
    desc.add_options()(alias.name, po::value<std::string>()->value_name(alias.value_name),
                       help.c_str());
  }
  return desc;
}

// A key that is not in the table: container.*, kafka.* or processor.*.
struct DynamicKey {
  std::string name;
  std::string value;
};

// Splits "container.<name>.<key>" into name and key; false when malformed.
bool SplitContainerKey(std::string_view key, std::string* name, std::string* field) {
  std::string_view rest = key.substr(std::string_view("container.").size());
  size_t dot = rest.rfind('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 == rest.size()) return false;
  *name = std::string(rest.substr(0, dot));
  *field = std::string(rest.substr(dot + 1));
  return true;
}

bool IsDynamic(std::string_view key) {
  return key.starts_with("container.") || key.starts_with("kafka.") ||
         key.starts_with("processor.");
}

// Adds `key` to `out`, rejecting a repeated key from the same source.
Status AddDynamic(const std::string& key, const std::vector<std::string>& values,
                  std::string_view source, std::vector<DynamicKey>* out) {
  if (values.size() != 1) {
    return ConfigError("option " + key + " needs a value (" + std::string(source) + ": use --" +
                       key + "=VALUE)");
  }
  for (const DynamicKey& existing : *out) {
    if (existing.name == key) {
      return ConfigError("option " + key + " is given more than once in " + std::string(source));
    }
  }
  out->push_back({key, values.front()});
  return Status::Ok();
}

// A container as its container.<name>.* keys declare it.
struct DeclaredContainer {
  std::string name;
  std::optional<std::string> partition_key;
  std::optional<std::string> indexes;
  std::optional<std::string> writers;
};

// The ContainerSpec of `declared`, validated.
Result<ContainerSpec> ContainerSpecOf(const DeclaredContainer& declared) {
  if (!declared.partition_key) {
    return ConfigError("invalid container " + declared.name + ": container." + declared.name +
                       ".partition_key is required");
  }
  ContainerSpec spec;
  spec.name = declared.name;
  spec.partition_key_path = *declared.partition_key;
  if (declared.indexes) {
    for (std::string_view path : SplitList(*declared.indexes)) {
      if (!path.empty()) spec.index_paths.emplace_back(path);
    }
  }
  if (declared.writers) {
    Result<ContainerWriters> writers = ParseContainerWriters(*declared.writers);
    if (!writers.ok()) {
      return ConfigError("invalid container " + declared.name + ": container." + declared.name +
                         "." + writers.status().message());
    }
    spec.writers = *writers;
  }
  Status status = ValidateContainerSpec(spec);
  if (!status.ok()) {
    return ConfigError("invalid container " + declared.name + ": " + status.message());
  }
  return spec;
}

// Adds the container.<name>.<field> key `key` to `containers` (in order of
// first declaration).
Status AddContainerKey(const DynamicKey& key, std::vector<DeclaredContainer>* containers) {
  std::string name;
  std::string field;
  if (!SplitContainerKey(key.name, &name, &field) ||
      (field != "partition_key" && field != "indexes" && field != "writers")) {
    return ConfigError("unknown option " + key.name +
                       " (a container takes container.<name>.partition_key, "
                       "container.<name>.indexes and container.<name>.writers)");
  }
  auto it = std::find_if(containers->begin(), containers->end(),
                         [&](const DeclaredContainer& d) { return d.name == name; });
  if (it == containers->end()) it = containers->insert(containers->end(), {name, {}, {}, {}});
  (field == "partition_key" ? it->partition_key
   : field == "indexes"     ? it->indexes
                            : it->writers) = key.value;
  return Status::Ok();
}

// Applies the dynamic keys (file first, then command line, which wins).
Status ApplyDynamic(const std::vector<DynamicKey>& keys, DaemonConfig* config) {
  std::vector<DeclaredContainer> containers;
  for (const DynamicKey& key : keys) {
    bool kafka = key.name.starts_with("kafka.");
    if (kafka || key.name.starts_with("processor.")) {
      std::string rest = key.name.substr(kafka ? 6 : 10);
      if (rest.empty()) return ConfigError("unknown option " + key.name);
      (kafka ? config->kafka.properties : config->processor_settings)[rest] = key.value;
      continue;
    }
    if (Status status = AddContainerKey(key, &containers); !status.ok()) return status;
  }
  config->store.containers.clear();
  for (const DeclaredContainer& declared : containers) {
    Result<ContainerSpec> spec = ContainerSpecOf(declared);
    if (!spec.ok()) return spec.status();
    config->store.containers.push_back(std::move(*spec));
  }
  return Status::Ok();
}

// The <section>.tls_* options go together: a certificate and its key, both
// or neither; client CAs only with them.
Status CheckTlsFiles(const std::string& section, const std::string& cert, const std::string& key,
                     const std::string& client_ca) {
  if (cert.empty() != key.empty()) {
    return ConfigError("invalid value for " + section + ".tls_key_file: " + section +
                       ".tls_cert_file and " + section +
                       ".tls_key_file go together (both set: HTTPS; neither: HTTP)");
  }
  if (!client_ca.empty() && cert.empty()) {
    return ConfigError("invalid value for " + section +
                       ".tls_client_ca_file: client certificates need HTTPS (" + section +
                       ".tls_cert_file and " + section + ".tls_key_file)");
  }
  return Status::Ok();
}

// A key that declares part of the scenario: a container or a processor.
bool IsScenarioKey(const DynamicKey& key) {
  return key.name.starts_with("container.") || key.name.starts_with("processor.");
}

// Applies every table option from `values` (defaults included).
Status ApplyTable(const po::variables_map& values, DaemonConfig* config) {
  for (const OptionSpec& spec : kOptions) {
    const std::string& text = values[spec.name].as<std::string>();
    Status status = spec.apply(text, *config);
    if (!status.ok()) {
      return ConfigError(std::string("invalid value for ") + spec.name + ": " + status.message());
    }
  }
  if (config->http_max_buffered_bytes < config->http_max_request_bytes) {
    return ConfigError("invalid value for http.max_buffered_bytes: " +
                       std::to_string(config->http_max_buffered_bytes) +
                       " is less than http.max_request_bytes (" +
                       std::to_string(config->http_max_request_bytes) + ")");
  }
  if (Status s = CheckTlsFiles("http", config->http_tls_cert_file, config->http_tls_key_file,
                               config->http_tls_client_ca_file);
      !s.ok()) {
    return s;
  }
  if (Status s = CheckTlsFiles("metrics", config->metrics_tls_cert_file,
                               config->metrics_tls_key_file, config->metrics_tls_client_ca_file);
      !s.ok()) {
    return s;
  }
  if (config->metrics_authenticate && config->auth_tokens_file.empty()) {
    return ConfigError("invalid value for metrics.authenticate: true needs auth.tokens_file");
  }
  if (config->auth_tokens_file.empty() && !config->auth_allow_unauthenticated &&
      !IsLoopbackHost(config->http_listen.host)) {
    return ConfigError("invalid value for http.listen: " + config->http_listen.ToString() +
                       " is not a loopback address, and without auth.tokens_file anyone who "
                       "reaches it may read, write and administer everything; set "
                       "auth.tokens_file (docs/security.md) or, to serve it open, "
                       "auth.allow_unauthenticated = true");
  }
  // A metrics port off loopback needs authentication or an explicit opt-out.
  // worker.metrics_listen is checked in every mode (the options do not know
  // whether this is `feedd worker`): a daemon sharing a worker's
  // configuration refuses it too.
  const bool metrics_guarded = config->metrics_authenticate ||
                               !config->metrics_tls_client_ca_file.empty() ||
                               config->auth_allow_unauthenticated;
  for (auto [option, listen] :
       {std::pair{"metrics.listen", &config->metrics_listen},
        std::pair{"worker.metrics_listen", &config->worker_metrics_listen}}) {
    if (metrics_guarded || IsLoopbackHost(listen->host)) continue;
    return ConfigError(std::string("invalid value for ") + option + ": " + listen->ToString() +
                       " is not a loopback address, and without authentication anyone who "
                       "reaches it may read the metrics; set metrics.authenticate = true (basic "
                       "authentication with auth.tokens_file) or metrics.tls_client_ca_file "
                       "(client certificates), or, to serve it open, "
                       "auth.allow_unauthenticated = true (docs/security.md)");
  }
  if (config->http_listen.port != 0 && config->http_listen.port == config->metrics_listen.port &&
      config->http_listen.host == config->metrics_listen.host) {
    return ConfigError("invalid value for metrics.listen: " + config->metrics_listen.ToString() +
                       " is also http.listen");
  }
  return Status::Ok();
}

// Reads the command line: the flags and --config into `flags` and `config`,
// table options into `table` (aliases resolved), dynamic keys into
// `dynamic`.
Status ReadCommandLine(int argc, const char* const* argv,
                       const po::options_description& config_desc, DaemonConfig* config,
                       CommandFlags* flags, po::parsed_options* table,
                       std::vector<DynamicKey>* dynamic) {
  po::options_description cli_desc;
  cli_desc.add(CommandLineOnlyDescription()).add(config_desc);
  int style = po::command_line_style::default_style & ~po::command_line_style::allow_guessing;
  po::parsed_options cli =
      po::command_line_parser(argc, argv).options(cli_desc).style(style).allow_unregistered().run();
  for (po::option& option : cli.options) {
    const std::string& key = option.string_key;
    if (option.position_key != -1) {
      return ConfigError("unexpected argument '" + option.value.front() +
                         "' (options take the form --NAME=VALUE)");
    }
    if (option.unregistered) {
      if (!IsDynamic(key)) {
        std::string token = option.original_tokens.empty() ? key : option.original_tokens.front();
        return ConfigError("unknown option " + token.substr(0, token.find('=')));
      }
      Status status = AddDynamic(key, option.value, "command line", dynamic);
      if (!status.ok()) return status;
      continue;
    }
    if (key == "help") {
      flags->help = true;
    } else if (key == "version") {
      flags->version = true;
    } else if (key == "check-config") {
      flags->check_config = true;
    } else if (key == "config") {
      config->config_file = option.value.front();
    } else {
      auto alias = std::find_if(std::begin(kAliases), std::end(kAliases),
                                [&](const Alias& a) { return key == a.name; });
      if (alias != std::end(kAliases)) option.string_key = alias->option;
      table->options.push_back(std::move(option));
    }
  }
  return Status::Ok();
}

// The table options set in the environment (FEEDD_SECTION_KEY).
po::parsed_options ReadEnvironment(const char* const* envp,
                                   const po::options_description& config_desc) {
  std::unordered_map<std::string, std::string> env_to_option;
  for (const OptionSpec& spec : kOptions) env_to_option.emplace(EnvName(spec.name), spec.name);
  po::parsed_options env(&config_desc);
  for (const char* const* entry = envp; entry != nullptr && *entry != nullptr; ++entry) {
    std::string_view var(*entry);
    size_t eq = var.find('=');
    if (eq == std::string_view::npos || !var.starts_with("FEEDD_")) continue;
    auto it = env_to_option.find(std::string(var.substr(0, eq)));
    if (it == env_to_option.end()) continue;
    env.options.emplace_back(it->second, std::vector<std::string>{std::string(var.substr(eq + 1))});
  }
  return env;
}

// Reads INI text named `source` (in messages): table options into `table`,
// dynamic keys into `dynamic`.
Status ReadConfigText(std::istream& in, const std::string& source,
                      const po::options_description& config_desc, po::parsed_options* table,
                      std::vector<DynamicKey>* dynamic) {
  po::parsed_options parsed = po::parse_config_file(in, config_desc, true);
  for (po::option& option : parsed.options) {
    if (!option.unregistered) {
      table->options.push_back(std::move(option));
      continue;
    }
    if (!IsDynamic(option.string_key)) {
      return ConfigError("unknown option " + option.string_key + " in " + source);
    }
    Status status = AddDynamic(option.string_key, option.value, source, dynamic);
    if (!status.ok()) return status;
  }
  return Status::Ok();
}

// ReadConfigText() of the file at `path`.
Status ReadConfigFile(const std::string& path, const po::options_description& config_desc,
                      po::parsed_options* table, std::vector<DynamicKey>* dynamic) {
  std::ifstream file(path);
  if (!file) return ConfigError("cannot open config file " + path + ": " + std::strerror(errno));
  return ReadConfigText(file, path, config_desc, table, dynamic);
}

// The [container.*] and [processor.*] keys of the built-in configs/feedd.conf.
Result<std::vector<DynamicKey>> DefaultScenarioKeys(const po::options_description& config_desc) {
  std::istringstream text{std::string(DefaultConfigText())};
  po::parsed_options table(&config_desc);
  std::vector<DynamicKey> keys;
  Status status =
      ReadConfigText(text, "the built-in configs/feedd.conf", config_desc, &table, &keys);
  if (!status.ok()) return status;
  std::erase_if(keys, [](const DynamicKey& key) { return !IsScenarioKey(key); });
  return keys;
}

// The dynamic keys of the file with those of the command line over them.
std::vector<DynamicKey> MergeDynamic(std::vector<DynamicKey> file_keys,
                                     std::vector<DynamicKey> cli_keys) {
  std::vector<DynamicKey> merged = std::move(file_keys);
  for (DynamicKey& key : cli_keys) {
    auto it = std::find_if(merged.begin(), merged.end(),
                           [&](const DynamicKey& k) { return k.name == key.name; });
    if (it != merged.end()) {
      it->value = std::move(key.value);
    } else {
      merged.push_back(std::move(key));
    }
  }
  return merged;
}

// True when `key` is processor.<name>.<setting> for a processor of the
// built-in scenario (`defaults`) and a setting other than its kind: it tunes
// that processor (parallelism, say) and declares nothing new.
bool TunesBuiltInProcessor(const DynamicKey& key, const std::vector<DynamicKey>& defaults) {
  constexpr std::string_view kPrefix = "processor.";
  if (!key.name.starts_with(kPrefix)) return false;
  const size_t dot = key.name.find('.', kPrefix.size());
  if (dot == std::string::npos || key.name.substr(dot + 1) == "kind") return false;
  const std::string_view instance = std::string_view(key.name).substr(0, dot + 1);
  return std::any_of(defaults.begin(), defaults.end(),
                     [&](const DynamicKey& d) { return d.name.starts_with(instance); });
}

// The scenario rule (options.h): when no container.* or processor.* key is
// declared, or each declared one only tunes a built-in processor, those of
// the built-in configs/feedd.conf, with the tuning keys over them.
Status AddDefaultScenario(const po::options_description& config_desc,
                          std::vector<DynamicKey>* dynamic, DaemonConfig* config) {
  Result<std::vector<DynamicKey>> defaults = DefaultScenarioKeys(config_desc);
  if (!defaults.ok()) return defaults.status();
  config->default_scenario =
      std::all_of(dynamic->begin(), dynamic->end(), [&](const DynamicKey& key) {
        return !IsScenarioKey(key) || TunesBuiltInProcessor(key, *defaults);
      });
  if (!config->default_scenario) return Status::Ok();
  *dynamic = MergeDynamic(std::move(*defaults), std::move(*dynamic));
  return Status::Ok();
}

// Validates and applies the table options in `values` (defaults filled in)
// and the dynamic keys, the default scenario's when none is declared.
Status ApplyAll(const po::options_description& config_desc, const po::variables_map& values,
                std::vector<DynamicKey> dynamic, DaemonConfig* config) {
  if (Status status = ApplyTable(values, config); !status.ok()) return status;
  if (Status status = AddDefaultScenario(config_desc, &dynamic, config); !status.ok()) {
    return status;
  }
  if (Status status = ApplyDynamic(dynamic, config); !status.ok()) return status;
  return ValidateKafkaOptions(config->kafka);
}

Result<DaemonConfig> LoadConfigOrThrow(int argc, const char* const* argv, const char* const* envp,
                                       CommandFlags* flags) {
  po::options_description config_desc = ConfigDescription();
  DaemonConfig config;
  po::parsed_options cli_table(&config_desc);
  std::vector<DynamicKey> cli_keys;
  Status status = ReadCommandLine(argc, argv, config_desc, &config, flags, &cli_table, &cli_keys);
  if (!status.ok()) return status;

  po::variables_map values;             // the first source stored sets an option
  if (flags->help || flags->version) {  // the defaults only
    po::store(po::parsed_options(&config_desc), values);
    status = ApplyAll(config_desc, values, {}, &config);
    if (!status.ok()) return status;
    return config;
  }
  po::store(cli_table, values);
  po::store(ReadEnvironment(envp, config_desc), values);
  std::vector<DynamicKey> file_keys;
  if (!config.config_file.empty()) {
    po::parsed_options file_table(&config_desc);
    status = ReadConfigFile(config.config_file, config_desc, &file_table, &file_keys);
    if (!status.ok()) return status;
    po::store(file_table, values);
  }
  status = ApplyAll(config_desc, values, MergeDynamic(std::move(file_keys), std::move(cli_keys)),
                    &config);
  if (!status.ok()) return status;
  return config;
}

}  // namespace

Result<DaemonConfig> LoadConfig(int argc, const char* const* argv, const char* const* envp,
                                CommandFlags* flags) {
  *flags = CommandFlags();
  try {
    return LoadConfigOrThrow(argc, argv, envp, flags);
  } catch (const po::error& e) {
    return ConfigError(e.what());
  } catch (const std::exception& e) {
    return ConfigError(std::string("cannot read the configuration: ") + e.what());
  }
}

std::string OptionsHelp() {
  std::ostringstream out;
  out << "Usage: feedd [--config FILE] [--data-dir DIR] [--listen HOST:PORT] [OPTION]...\n"
         "  or:  feedd --check-config [--config FILE] [OPTION]...\n"
         "  or:  feedd worker [--config FILE] [--worker.api HOST:PORT] [OPTION]...\n"
         "A JSON document store over HTTP whose every write is appended to a durable,\n"
         "LSN-ordered change feed, published to Kafka and kept in views by processors.\n"
         "\n"
         "Each configuration option section.key is the INI key `key` under [section],\n"
         "the command-line option --section.key=VALUE and the environment variable\n"
         "FEEDD_SECTION_KEY; the command line wins over the environment, which wins\n"
         "over the file.\n\n"
      << CommandLineOnlyDescription() << "\n"
      << ConfigDescription() << "\n"
      << "Dynamic keys (INI or --KEY=VALUE on the command line):\n"
         "  container.<name>.partition_key  JSON Pointer of the partition key\n"
         "  container.<name>.indexes        comma-separated JSON Pointers to index\n"
         "  container.<name>.writers        any (default) | processors: only processors\n"
         "                                  write it, clients get 403 derived_container\n"
         "  kafka.<property>                librdkafka property, passed through\n"
         "  processor.<name>.<key>          processor settings\n"
         "Containers and processors are the scenario: declare one and only the declared\n"
         "ones exist; declare none and they are those of the built-in configs/feedd.conf\n"
         "(docs/configuration.md).\n"
         "\n"
         "Exit status:\n"
         "  0    stopped by SIGTERM or SIGINT; --help, --version, --check-config passed\n"
         "  1    start-up failure: a port taken, storage or Kafka cannot start;\n"
         "       feedd worker --worker.verify=true: a view differs\n"
         "  2    bad configuration (systemd does not restart it)\n"
         "\n"
         "Environment:\n"
         "  FEEDD_<SECTION>_<KEY>    any option of the table, e.g. FEEDD_HTTP_LISTEN\n"
         "  NOTIFY_SOCKET            systemd notification (READY=1, WATCHDOG=1)\n"
         "  JOURNAL_STREAM           log lines carry the syslog priority, not the time\n"
         "\n"
         "Files:\n"
         "  /etc/feedd/feedd.conf    the configuration of the packaged service\n";
  return out.str();
}

}  // namespace feedd
