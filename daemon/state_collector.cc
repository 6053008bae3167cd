#include "daemon/state_collector.h"

#include <dirent.h>
#include <librdkafka/rdkafka.h>
#include <rocksdb/version.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "daemon/metric_families.h"
#include "feed/bootstrap_relay.h"

namespace feedd {
namespace {

using metrics::Families;
using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

void CollectProcess(Families& f) {
  static const long ticks = sysconf(_SC_CLK_TCK);
  static const long page = sysconf(_SC_PAGESIZE);
  std::ifstream stat("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  // Fields after the command name (which may hold spaces) start past ')'.
  std::istringstream fields(text.substr(text.rfind(')') + 2));
  std::vector<std::string> v;
  for (std::string s; fields >> s;) v.push_back(s);
  if (v.size() > 21) {
    double cpu = (std::stod(v[11]) + std::stod(v[12])) / static_cast<double>(ticks);
    f.Counter("process_cpu_seconds_total", "User and system CPU time, seconds", cpu);
    f.Gauge("process_virtual_memory_bytes", "Virtual memory size, bytes", std::stod(v[20]));
    f.Gauge("process_resident_memory_bytes", "Resident set size, bytes",
            std::stod(v[21]) * static_cast<double>(page));
    std::ifstream uptime("/proc/uptime");
    double up = 0;
    uptime >> up;
    double boot = static_cast<double>(time(nullptr)) - up;
    f.Gauge("process_start_time_seconds", "Start time of the process, Unix epoch seconds",
            boot + std::stod(v[19]) / static_cast<double>(ticks));
  }
  int fds = 0;
  if (DIR* dir = opendir("/proc/self/fd")) {
    while (readdir(dir) != nullptr) ++fds;
    closedir(dir);
    fds -= 3;  // ".", ".." and the directory's own descriptor
  }
  f.Gauge("process_open_fds", "Open file descriptors", fds);
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0) {
    f.Gauge("process_max_fds", "The open-files limit", static_cast<double>(limit.rlim_cur));
  }
}

}  // namespace

StateCollector::StateCollector(const DocumentStore* store, const Publisher* publisher,
                               const ProcessorManager* processors, std::string data_dir)
    : store_(store),
      publisher_(publisher),
      processors_(processors),
      data_dir_(std::move(data_dir)) {}

std::vector<MetricFamily> StateCollector::Collect() const {
  Families f;
  f.Gauge("feedd_up", "1 while the daemon serves", 1);
  f.Gauge("feedd_build_info", "Build information", 1,
          {{"version", FEEDD_VERSION},
           {"rocksdb", std::to_string(ROCKSDB_MAJOR) + "." + std::to_string(ROCKSDB_MINOR) + "." +
                           std::to_string(ROCKSDB_PATCH)},
           {"librdkafka", rd_kafka_version_str()}});
  CollectProcess(f);

  // ---- storage ----
  StoreStats stats = store_->Stats();
  static const char* kOps[] = {"create", "replace", "delete"};
  for (const auto& [container, counts] : stats.changes_by_container) {
    for (size_t op = 0; op < 3; ++op) {
      f.Counter("feedd_storage_writes_total", "Committed mutations (change records)",
                static_cast<double>(counts[op]), {{"container", container}, {"op", kOps[op]}});
    }
  }
  const char* help_requests = "Write requests (a batch is one), by outcome";
  f.Counter("feedd_storage_write_requests_total", help_requests,
            static_cast<double>(stats.requests_committed), {{"outcome", "committed"}});
  f.Counter("feedd_storage_write_requests_total", help_requests,
            static_cast<double>(stats.requests_rejected), {{"outcome", "rejected"}});
  f.Counter("feedd_storage_write_requests_total", help_requests,
            static_cast<double>(stats.requests_failed), {{"outcome", "failed"}});
  const char* help_cache = "Single-partition queries by query cache outcome";
  f.Counter("feedd_query_cache_requests_total", help_cache,
            static_cast<double>(stats.query_cache_hits), {{"outcome", "hit"}});
  f.Counter("feedd_query_cache_requests_total", help_cache,
            static_cast<double>(stats.query_cache_misses), {{"outcome", "miss"}});
  f.Gauge("feedd_query_cache_bytes", "Memory held by kept query answers, bytes",
          static_cast<double>(stats.query_cache_bytes));
  const char* help_rejected = "Queries refused or stopped by their limits (query.*), by reason";
  f.Counter("feedd_query_rejected_total", help_rejected,
            static_cast<double>(stats.queries_too_many_filters), {{"reason", "too_many_filters"}});
  f.Counter("feedd_query_rejected_total", help_rejected,
            static_cast<double>(stats.queries_over_budget), {{"reason", "over_budget"}});
  f.Counter("feedd_query_pages_cut_total",
            "Query pages ended before their limit by query.max_page_bytes",
            static_cast<double>(stats.query_pages_cut));
  f.Counter("feedd_feed_pages_cut_total",
            "Change-feed pages ended before their limit by feed.max_page_bytes",
            static_cast<double>(stats.feed_pages_cut));
  f.Counter("feedd_rocksdb_churn_flushes_total",
            "Memtable flushes of containers whose recent writes were mostly deletes and overwrites",
            static_cast<double>(stats.churn_flushes));
  for (const auto& u : store_->Usage()) {
    f.Gauge("feedd_storage_items", "Items per container (RocksDB estimate)",
            static_cast<double>(u.estimated_items), {{"container", u.container}});
    f.Gauge("feedd_storage_live_bytes", "Live data bytes per container (RocksDB estimate)",
            static_cast<double>(u.estimated_live_bytes), {{"container", u.container}});
  }
  RocksDbHealth h = store_->RocksHealth();
  f.Gauge("feedd_rocksdb_pending_compaction_bytes", "Bytes compaction still has to rewrite",
          static_cast<double>(h.pending_compaction_bytes));
  f.Gauge("feedd_rocksdb_memtable_bytes", "Size of all memtables, bytes",
          static_cast<double>(h.memtable_bytes));
  f.Gauge("feedd_rocksdb_background_errors", "RocksDB background errors since open",
          static_cast<double>(h.background_errors));
  f.Gauge("feedd_rocksdb_write_stopped", "1 while RocksDB stops writes", h.write_stopped ? 1 : 0);
  f.Gauge("feedd_rocksdb_delayed_write_rate_bytes",
          "Write rate RocksDB throttles to while delaying writes, bytes/s",
          static_cast<double>(h.delayed_write_rate));
  const Status health = store_->Health();
  f.Gauge("feedd_storage_healthy", "1 while storage is open and writable", health.ok() ? 1 : 0);
  const char* state = health.ok()                                        ? "writable"
                      : health.code() == ErrorCode::kInsufficientStorage ? "no_space"
                      : health.code() == ErrorCode::kStorageError        ? "failed"
                                                                         : "recovering";
  for (const char* s : {"writable", "no_space", "recovering", "failed"}) {
    f.Gauge("feedd_storage_state", "1 for the state storage is in", std::strcmp(s, state) == 0,
            {{"state", s}});
  }
  f.Counter("feedd_storage_writes_refused_total", "Write requests refused before RocksDB",
            static_cast<double>(stats.requests_refused_no_space), {{"reason", "no_space"}});
  f.Gauge("feedd_storage_min_free_bytes",
          "Free-space reserve of the data directory's file system (storage.min_free_mb), bytes",
          static_cast<double>(store_->options().min_free_bytes));
  struct statvfs fs {};
  if (statvfs(data_dir_.c_str(), &fs) == 0) {
    f.Gauge("feedd_disk_free_bytes", "Free bytes on the data directory's file system",
            static_cast<double>(fs.f_bavail) * static_cast<double>(fs.f_frsize));
    f.Gauge("feedd_disk_size_bytes", "Size of the data directory's file system, bytes",
            static_cast<double>(fs.f_blocks) * static_cast<double>(fs.f_frsize));
  }

  // ---- change feed and Kafka ----
  f.Gauge("feedd_feed_head_lsn", "Last committed LSN", static_cast<double>(stats.head_lsn));
  f.Gauge("feedd_feed_oldest_retained_lsn", "Oldest LSN still readable",
          static_cast<double>(stats.oldest_retained_lsn));
  if (publisher_ != nullptr) {
    PublisherStatus p = publisher_->GetStatus();
    f.Gauge("feedd_feed_published_lsn", "Every change up to this LSN is in Kafka",
            static_cast<double>(p.published_lsn));
    f.Gauge("feedd_feed_publish_lag_changes", "Changes committed and not yet in Kafka",
            static_cast<double>(p.lag_changes));
    f.Gauge("feedd_feed_publish_lag_seconds", "Age of the oldest change not yet in Kafka",
            p.lag_seconds);
    f.Counter("feedd_kafka_messages_produced_total", "Messages handed to librdkafka",
              static_cast<double>(p.produced));
    f.Counter("feedd_kafka_messages_delivered_total", "Messages acknowledged by the broker",
              static_cast<double>(p.delivered));
    f.Counter("feedd_kafka_produce_errors_total", "Failed Kafka deliveries",
              static_cast<double>(p.delivery_errors), {{"kind", "delivery"}});
    f.Counter("feedd_kafka_produce_errors_total", "Failed Kafka deliveries",
              static_cast<double>(p.fatal_errors), {{"kind", "fatal"}});
    f.Counter("feedd_kafka_envelopes_shrunk_total", "Large items sent without images",
              static_cast<double>(p.envelopes_shrunk));
    f.Counter("feedd_kafka_envelopes_undecodable_total",
              "Stored change envelopes that did not parse, sent reference-only",
              static_cast<double>(p.envelopes_undecodable));
    f.Counter("feedd_kafka_duplicates_skipped_total",
              "Changes found already in Kafka on recovery, not sent again",
              static_cast<double>(p.duplicates_skipped));
    f.Gauge("feedd_kafka_resolved_lsn",
            "LSN of the last resolved-marker round every partition acknowledged",
            static_cast<double>(p.resolved_lsn));
    f.Counter("feedd_kafka_resolved_markers_total", "Resolved markers acknowledged by the broker",
              static_cast<double>(p.resolved_markers));
    f.Counter("feedd_kafka_heartbeats_total", "Heartbeats acknowledged by the broker",
              static_cast<double>(p.heartbeats));
    f.Counter("feedd_kafka_embedded_relay_refused_total",
              "Connections to kafka.embedded_port refused over the relay's limit",
              static_cast<double>(BootstrapRelay::RefusedTotal()));
    f.Gauge("feedd_kafka_inflight_messages", "Messages awaiting delivery",
            static_cast<double>(p.inflight_messages));
    f.Gauge("feedd_kafka_broker_up", "1 while a Kafka broker answers", p.connected ? 1 : 0);
  }

  // ---- processors ----
  if (processors_ != nullptr) {
    const AdminTasks& admin = processors_->admin_tasks();
    f.Gauge("feedd_admin_tasks_running", "Processor rebuilds and verifies running",
            static_cast<double>(admin.running()));
    const char* help_refused = "Rebuilds and verifies refused, by reason";
    f.Counter("feedd_admin_tasks_refused_total", help_refused,
              static_cast<double>(admin.refused_in_progress()), {{"reason", "in_progress"}});
    f.Counter("feedd_admin_tasks_refused_total", help_refused,
              static_cast<double>(admin.refused_too_many()), {{"reason", "too_many"}});
    const JobRegistry& jobs = processors_->jobs();
    f.Gauge("feedd_jobs_running", "Jobs (rebuilds, verifies) running",
            static_cast<double>(jobs.running()));
    // Every type and final state from 0, and whatever else has finished.
    std::map<std::pair<std::string, std::string>, uint64_t> finished;
    for (const char* type : {"rebuild", "verify"}) {
      for (JobState job_state : {JobState::kSucceeded, JobState::kFailed, JobState::kCancelled}) {
        finished[{type, std::string(JobStateName(job_state))}] = 0;
      }
    }
    for (const auto& [key, count] : jobs.finished_counts()) finished[key] = count;
    for (const auto& [key, count] : finished) {
      f.Counter("feedd_jobs_finished_total", "Jobs finished, by type and final state",
                static_cast<double>(count), {{"type", key.first}, {"state", key.second}});
    }
    for (const auto& instance : processors_->instances()) {
      ProcessorStatus s = instance->GetStatus();
      std::vector<ClientMetric::Label> l = {{"processor", s.name}};
      f.Gauge("feedd_processor_applied_lsn", "Every change up to this LSN is applied",
              static_cast<double>(s.applied_lsn), l);
      f.Gauge("feedd_processor_lag_changes", "Head LSN minus applied LSN",
              static_cast<double>(s.lag_changes), l);
      f.Gauge("feedd_processor_lag_seconds", "Age of the oldest unapplied change", s.lag_seconds,
              l);
      f.Gauge("feedd_processor_parked_changes", "Changes parked after failing",
              static_cast<double>(s.parked), l);
      f.Gauge("feedd_processor_rebuilding", "1 while the view is rebuilt",
              s.state == ProcessorState::kRebuilding ? 1 : 0, l);
      f.Gauge("feedd_processor_paused", "1 while an operator has paused it", s.paused ? 1 : 0, l);
      const char* help_taken = "Changes taken, by where they came from";
      f.Counter("feedd_processor_changes_taken_total", help_taken,
                static_cast<double>(s.from_commit_path),
                {{"processor", s.name}, {"from", "commit_path"}});
      f.Counter("feedd_processor_changes_taken_total", help_taken,
                static_cast<double>(s.from_durable_feed),
                {{"processor", s.name}, {"from", "durable_feed"}});
      const char* help_applies = "Apply attempts by outcome";
      f.Counter("feedd_processor_applies_total", help_applies, static_cast<double>(s.applied),
                {{"processor", s.name}, {"outcome", "applied"}});
      f.Counter("feedd_processor_applies_total", help_applies, static_cast<double>(s.errors),
                {{"processor", s.name}, {"outcome", "failed"}});
      f.Counter("feedd_processor_applies_total", help_applies, static_cast<double>(s.parked_total),
                {{"processor", s.name}, {"outcome", "parked"}});
      f.Counter("feedd_processor_view_writes_total", "Derived items written",
                static_cast<double>(s.view_writes), l);
      f.Counter("feedd_processor_batches_total",
                "Runs of queued changes of one key applied with one commit",
                static_cast<double>(s.batches), l);
      f.Counter("feedd_processor_rebuilds_total", "Rebuilds finished",
                static_cast<double>(s.rebuilds), l);
      f.Counter("feedd_processor_view_collisions_total",
                "Copies refused because their target item is not derived from the same source",
                static_cast<double>(s.collisions), l);
    }
  }
  return f.Take();
}

}  // namespace feedd
