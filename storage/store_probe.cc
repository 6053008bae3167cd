#include "storage/store_probe.h"

#include <sys/statvfs.h>

#include <cstring>

#include "util/metric_families.h"

namespace feedd {
namespace {

using metrics::Families;

void CollectWrites(const StoreStats& stats, Families& f) {
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
}

void CollectQueries(const StoreStats& stats, Families& f) {
  const char* help_cache = "Single-partition queries by query cache outcome";
  f.Counter("feedd_query_cache_requests_total", help_cache,
            static_cast<double>(stats.query_cache_hits), {{"outcome", "hit"}});
  f.Counter("feedd_query_cache_requests_total", help_cache,
            static_cast<double>(stats.query_cache_misses), {{"outcome", "miss"}});
  f.Gauge("feedd_query_cache_bytes", "Memory held by kept query answers, bytes",
          static_cast<double>(stats.query_cache_bytes));
  f.Counter("feedd_query_cache_updates_total",
            "Changes of a partition taken into its kept query answers instead of dropping them",
            static_cast<double>(stats.query_cache_updates));
  f.Gauge("feedd_feed_in_process_bytes",
          "Committed changes queued in memory for the in-process readers of the feed "
          "(feed.in_process_mb), each counted once, bytes",
          static_cast<double>(stats.commit_tail_bytes));
  f.Counter("feedd_feed_in_process_queues_given_up_total",
            "Queues of in-process feed readers given up to make room for readers further ahead",
            static_cast<double>(stats.commit_tail_queues_given_up));
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
}

void CollectRocksDb(const DocumentStore& store, const StoreStats& stats, Families& f) {
  f.Counter("feedd_rocksdb_churn_flushes_total",
            "Memtable flushes of containers whose recent writes were mostly deletes and overwrites",
            static_cast<double>(stats.churn_flushes));
  const char* help_wal = "New write-ahead logs, by how they started (storage.wal_recycle_files)";
  f.Counter("feedd_storage_wal_files_total", help_wal, static_cast<double>(stats.wal_logs_recycled),
            {{"start", "recycled"}});
  f.Counter("feedd_storage_wal_files_total", help_wal, static_cast<double>(stats.wal_logs_new),
            {{"start", "new"}});
  f.Gauge("feedd_storage_wal_files_kept",
          "Old write-ahead logs kept in the data directory for new logs to be written over",
          static_cast<double>(stats.wal_files_kept));
  for (const auto& u : store.Usage()) {
    f.Gauge("feedd_storage_items", "Items per container (RocksDB estimate)",
            static_cast<double>(u.estimated_items), {{"container", u.container}});
    f.Gauge("feedd_storage_live_bytes", "Live data bytes per container (RocksDB estimate)",
            static_cast<double>(u.estimated_live_bytes), {{"container", u.container}});
  }
  RocksDbHealth h = store.RocksHealth();
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
}

// The storage state of docs/metrics.md, from the store's health.
const char* StateName(const Status& health) {
  if (health.ok()) return "writable";
  if (health.code() == ErrorCode::kInsufficientStorage) return "no_space";
  if (health.code() == ErrorCode::kStorageError) return "failed";
  return "recovering";
}

void CollectHealth(const DocumentStore& store, const StoreStats& stats, Families& f) {
  const Status health = store.Health();
  f.Gauge("feedd_storage_healthy", "1 while storage is open and writable", health.ok() ? 1 : 0);
  const char* state = StateName(health);
  for (const char* s : {"writable", "no_space", "recovering", "failed"}) {
    f.Gauge("feedd_storage_state", "1 for the state storage is in", std::strcmp(s, state) == 0,
            {{"state", s}});
  }
  f.Counter("feedd_storage_writes_refused_total", "Write requests refused before RocksDB",
            static_cast<double>(stats.requests_refused_no_space), {{"reason", "no_space"}});
  f.Gauge("feedd_storage_min_free_bytes",
          "Free-space reserve of the data directory's file system (storage.min_free_mb), bytes",
          static_cast<double>(store.options().min_free_bytes));
}

void CollectDisk(const std::string& data_dir, Families& f) {
  struct statvfs fs {};
  if (statvfs(data_dir.c_str(), &fs) != 0) return;  // the families are left out
  f.Gauge("feedd_disk_free_bytes", "Free bytes on the data directory's file system",
          static_cast<double>(fs.f_bavail) * static_cast<double>(fs.f_frsize));
  f.Gauge("feedd_disk_size_bytes", "Size of the data directory's file system, bytes",
          static_cast<double>(fs.f_blocks) * static_cast<double>(fs.f_frsize));
}

void CollectFeed(const StoreStats& stats, Families& f) {
  f.Gauge("feedd_feed_head_lsn", "Last committed LSN", static_cast<double>(stats.head_lsn));
  f.Gauge("feedd_feed_oldest_retained_lsn", "Oldest LSN still readable",
          static_cast<double>(stats.oldest_retained_lsn));
}

}  // namespace

std::vector<prometheus::MetricFamily> StoreProbe::Collect() const {
  Families f;
  const StoreStats stats = store_->Stats();
  CollectWrites(stats, f);
  CollectQueries(stats, f);
  CollectRocksDb(*store_, stats, f);
  CollectHealth(*store_, stats, f);
  CollectDisk(store_->options().data_dir, f);
  CollectFeed(stats, f);
  return f.Take();
}

}  // namespace feedd
