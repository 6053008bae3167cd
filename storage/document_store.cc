#include "storage/document_store.h"

#include <future>

#include "storage/change_feed.h"
#include "storage/commit_pipeline.h"
#include "storage/commit_tail_budget.h"
#include "storage/key_format.h"
#include "storage/query_engine.h"
#include "storage/rocks_database.h"
#include "storage/space_reserve.h"
#include "util/logging.h"

namespace feedd {
namespace {

class RocksDocumentStore final : public DocumentStore {
 public:
  RocksDocumentStore(const StoreOptions& options, std::unique_ptr<RocksDatabase> db)
      : options_(options),
        db_(std::move(db)),
        cache_(options_.query_cache_bytes),
        item_generations_(db_->containers().size()),
        space_(db_->file_system(), options_.data_dir, options_.min_free_bytes, options_.clock),
        pipeline_(db_.get(), options_, db_->stored_head_lsn(), &cache_, &item_generations_,
                  &space_),
        feed_(
            db_.get(), options_, [this] { return pipeline_.head(); },
            [this] { return pipeline_.feed_bytes_appended(); }),
        queries_(db_.get()),
        commit_tail_budget_(std::make_shared<CommitTailBudget>(options_.commit_tail_bytes)) {
    for (const auto& c : db_->containers()) specs_.push_back(c.spec);
  }

  ~RocksDocumentStore() override { Close(); }

  Status Start() {
    if (Status s = feed_.Load(); !s.ok()) return s;
    pipeline_.Start();
    feed_.Start();
    return Status::Ok();
  }

  const std::vector<ContainerSpec>& containers() const override { return specs_; }

  const ContainerSpec* FindContainer(std::string_view name) const override {
    const ContainerHandle* c = db_->Find(name);
    return c ? &c->spec : nullptr;
  }

  const StoreOptions& options() const override { return options_; }

  Status Read(std::string_view container, std::string_view partition_key, std::string_view id,
              std::string* item_json, Lsn* item_lsn) const override {
    const ContainerHandle* c = db_->Find(container);
    if (c == nullptr) return ContainerNotFound(container);
    std::string value;
    auto s = db_->db()->Get(rocksdb::ReadOptions(), c->items,
                            key_format::ItemKey(partition_key, id), &value);
    if (s.IsNotFound()) {
      return Status(ErrorCode::kNotFound, "item '" + std::string(id) + "' does not exist");
    }
    if (!s.ok()) return FromRocks(s, ErrorCode::kStorageError, "read");
    uint64_t lsn;
    std::string_view json;
    if (!key_format::DecodeItemValue(value, &lsn, &json)) {
      return Status(ErrorCode::kStorageError, "corrupt stored item");
    }
    item_json->assign(json);
    if (item_lsn != nullptr) *item_lsn = lsn;
    return Status::Ok();
  }

  Result<QueryResult> Query(std::string_view container, const QuerySpec& spec,
                            QueryCost* spent) const override {
    if (spent != nullptr) *spent = QueryCost();
    const ContainerHandle* c = db_->Find(container);
    if (c == nullptr) return ContainerNotFound(container);
    if (Status s = QueryEngine::Admit(spec); !s.ok()) {
      if (s.code() == ErrorCode::kQueryTooExpensive) ++queries_too_many_filters_;
      return s;
    }
    if (!cache_.enabled() || !spec.partition_key) return RunQuery(*c, spec, spent);
    const size_t index = c->index;
    std::string key = QueryCache::Key(index, spec);
    if (auto kept = cache_.Find(key, index, *spec.partition_key)) {
      QueryResult result = *kept;
      result.cached = true;
      if (spent != nullptr) *spent = result.cost;
      return result;
    }
    const uint64_t generation =
        cache_.Generation(index, *spec.partition_key);  // before the query's iterator
    std::vector<QueryRow> rows;
    Result<QueryResult> result = RunQuery(*c, spec, spent, &rows);
    if (result.ok())
      cache_.Insert(std::move(key), index, spec, generation, *result, std::move(rows));
    return result;
  }

  std::optional<uint64_t> PartitionGeneration(std::string_view container,
                                              std::string_view partition_key) const override {
    const ContainerHandle* c = db_->Find(container);
    if (c == nullptr) return std::nullopt;
    return cache_.Generation(c->index, partition_key);
  }

  std::optional<uint64_t> ItemGeneration(std::string_view container, std::string_view partition_key,
                                         std::string_view id) const override {
    const ContainerHandle* c = db_->Find(container);
    if (c == nullptr) return std::nullopt;
    return item_generations_.Get(c->index, partition_key, id);
  }

  void Submit(WriteRequest request, WriteCallback done) override {
    pipeline_.Submit(std::move(request), std::move(done));
  }

  void SubmitView(ViewWrite view, WriteCallback done) override {
    if (!feed_.IsRegistered(view.consumer)) {
      WriteResult r;
      r.status =
          Status(ErrorCode::kInvalidRequest, "consumer '" + view.consumer + "' is not registered");
      return done(std::move(r));
    }
    std::string consumer = view.consumer;
    Lsn acked = view.consumer_acked;
    pipeline_.SubmitView(std::move(view),
                         [this, consumer, acked, done = std::move(done)](WriteResult r) {
                           if (r.status.ok())
                             feed_.NoteAcked(consumer, acked);  // durable with the view
                           done(std::move(r));
                         });
  }

  void SubmitImport(ImportBatch batch, ImportCallback done) override {
    pipeline_.SubmitImport(std::move(batch), std::move(done));
  }

  Lsn HeadLsn() const override { return pipeline_.head(); }
  Lsn OldestRetainedLsn() const override { return feed_.oldest_retained(); }
  Status ReadFeed(const FeedReadSpec& spec, FeedPage* page) const override {
    Status s = feed_.Read(spec, page);
    if (s.ok() && page->cut_by_bytes) ++feed_pages_cut_;
    return s;
  }
  uint64_t OnHeadReached(Lsn lsn, std::function<void()> fn) override {
    return pipeline_.OnHeadReached(lsn, std::move(fn));
  }
  void CancelHeadWatch(uint64_t token) override { pipeline_.CancelHeadWatch(token); }
  uint64_t AddCommitListener(CommitListener listener) override {
    return pipeline_.AddCommitListener(std::move(listener));
  }
  void RemoveCommitListener(uint64_t token) override { pipeline_.RemoveCommitListener(token); }
  std::shared_ptr<CommitTailBudget> commit_tail_budget() const override {
    return commit_tail_budget_;
  }

  Status RegisterConsumer(const std::string& name, Lsn acked) override {
    return feed_.RegisterConsumer(name, acked);
  }
  Status AckConsumer(const std::string& name, Lsn acked) override {
    return feed_.AckConsumer(name, acked);
  }
  Status UnregisterConsumer(const std::string& name) override {
    return feed_.UnregisterConsumer(name);
  }
  std::vector<ConsumerWatermark> Consumers() const override { return feed_.Consumers(); }
  Status PutParked(const std::string& consumer, const ParkedRecord& parked) override {
    return feed_.PutParked(consumer, parked);
  }
  Status DeleteParked(const std::string& consumer, Lsn lsn) override {
    return feed_.DeleteParked(consumer, lsn);
  }
  Result<std::vector<ParkedRecord>> ListParked(const std::string& consumer) const override {
    return feed_.ListParked(consumer);
  }
  Status EnforceRetention() override { return feed_.EnforceRetention(); }

  Status Health() const override {
    if (closed_) return Status(ErrorCode::kUnavailable, "the store is closed");
    if (Status s = pipeline_.health(); !s.ok()) return s;
    return space_.Check();
  }

  StoreStats Stats() const override {
    StoreStats stats;
    stats.head_lsn = pipeline_.head();
    stats.oldest_retained_lsn = feed_.oldest_retained();
    stats.groups_committed = pipeline_.groups_committed();
    stats.requests_committed = pipeline_.requests_committed();
    stats.changes_committed = pipeline_.changes_committed();
    stats.requests_rejected = pipeline_.requests_rejected();
    stats.requests_failed = pipeline_.requests_failed();
    stats.requests_refused_no_space = space_.refused();
    stats.churn_flushes = pipeline_.churn_flushes();
    stats.wal_logs_recycled = db_->recycled_wal()->logs_recycled();
    stats.wal_logs_new = db_->recycled_wal()->logs_new();
    stats.wal_files_kept = db_->recycled_wal()->files_kept();
    stats.query_cache_hits = cache_.hits();
    stats.query_cache_misses = cache_.misses();
    stats.query_cache_bytes = cache_.bytes();
    stats.query_cache_updates = cache_.updates();
    stats.commit_tail_bytes = commit_tail_budget_->used_bytes();
    stats.commit_tail_queues_given_up = commit_tail_budget_->queues_given_up();
    stats.queries_too_many_filters = queries_too_many_filters_.load();
    stats.queries_over_budget = queries_over_budget_.load();
    stats.query_pages_cut = query_pages_cut_.load();
    stats.feed_pages_cut = feed_pages_cut_.load();
    const auto& containers = db_->containers();
    for (size_t i = 0; i < containers.size(); ++i) {
      stats.changes_by_container[containers[i].spec.name] = pipeline_.changes_of(i);
    }
    return stats;
  }

  std::vector<ContainerUsage> Usage() const override {
    std::vector<ContainerUsage> usage;
    for (const auto& c : db_->containers()) {
      ContainerUsage u;
      u.container = c.spec.name;
      db_->db()->GetIntProperty(c.items, "rocksdb.estimate-num-keys", &u.estimated_items);
      db_->db()->GetIntProperty(c.items, "rocksdb.estimate-live-data-size",
                                &u.estimated_live_bytes);
      usage.push_back(u);
    }
    return usage;
  }

  RocksDbHealth RocksHealth() const override {
    RocksDbHealth h;
    rocksdb::DB* db = db_->db();
    db->GetAggregatedIntProperty("rocksdb.estimate-pending-compaction-bytes",
                                 &h.pending_compaction_bytes);
    db->GetAggregatedIntProperty("rocksdb.cur-size-all-mem-tables", &h.memtable_bytes);
    db->GetIntProperty("rocksdb.background-errors", &h.background_errors);
    uint64_t stopped = 0;
    db->GetAggregatedIntProperty("rocksdb.is-write-stopped", &stopped);
    h.write_stopped = stopped != 0;
    db->GetIntProperty("rocksdb.actual-delayed-write-rate", &h.delayed_write_rate);
    return h;
  }

  void Close() override {
    std::lock_guard<std::mutex> lock(close_mutex_);
    if (closed_) return;
    pipeline_.Stop();
    feed_.Stop();
    // After a failed write RocksDB's WAL writer may hold an error, and
    // syncing it trips an assertion of Debian's build: leave the WAL alone.
    if (Status health = pipeline_.health(); !health.ok()) {
      FEEDD_LOG(kWarning, "storage") << "closing without a final flush: " << health.message();
    } else {
      // Every memtable: the write-ahead logs are then obsolete (kept for
      // reuse, storage.wal_recycle_files), the next open replays nothing,
      // and what is left for RocksDB's own tools to read is an empty log.
      rocksdb::FlushOptions fo;
      if (auto s = db_->db()->Flush(fo, db_->families()); !s.ok()) {
        FEEDD_LOG(kWarning, "storage") << "flush on close: " << s.ToString();
      }
      if (auto s = db_->db()->FlushWAL(true); !s.ok()) {
        FEEDD_LOG(kWarning, "storage") << "WAL sync on close: " << s.ToString();
      }
    }
    closed_ = true;
    FEEDD_LOG(kInfo, "storage") << "closed at LSN " << pipeline_.head();
  }

 private:
  // The engine, counting what its limits did.
  Result<QueryResult> RunQuery(const ContainerHandle& c, const QuerySpec& spec, QueryCost* spent,
                               std::vector<QueryRow>* rows = nullptr) const {
    Result<QueryResult> result = queries_.Run(c, spec, spent, rows);
    if (!result.ok()) {
      if (result.status().code() == ErrorCode::kQueryTooExpensive) ++queries_over_budget_;
    } else if (result->cut_by_bytes) {
      ++query_pages_cut_;
    }
    return result;
  }

  static Status ContainerNotFound(std::string_view name) {
    return Status(ErrorCode::kContainerNotFound,
                  "container '" + std::string(name) + "' does not exist");
  }

  const StoreOptions options_;
  std::unique_ptr<RocksDatabase> db_;
  std::vector<ContainerSpec> specs_;
  mutable QueryCache cache_;  // thread-safe; Query() is const
  ItemGenerations item_generations_;
  mutable SpaceReserve space_;  // thread-safe; Health() is const
  CommitPipeline pipeline_;
  ChangeFeed feed_;
  QueryEngine queries_;
  const std::shared_ptr<CommitTailBudget> commit_tail_budget_;
  mutable std::atomic<uint64_t> queries_too_many_filters_{0};
  mutable std::atomic<uint64_t> queries_over_budget_{0};
  mutable std::atomic<uint64_t> query_pages_cut_{0};
  mutable std::atomic<uint64_t> feed_pages_cut_{0};
  std::mutex close_mutex_;
  std::atomic<bool> closed_{false};
};

}  // namespace

Result<std::unique_ptr<DocumentStore>> DocumentStore::Open(const StoreOptions& options) {
  auto db = RocksDatabase::Open(options);
  if (!db.ok()) return db.status();
  auto store = std::make_unique<RocksDocumentStore>(options, std::move(*db));
  if (Status s = store->Start(); !s.ok()) return s;
  FEEDD_LOG(kInfo, "storage") << "opened " << options.data_dir << " at LSN " << store->HeadLsn()
                              << " (sync=" << (options.sync ? "on" : "off") << ")";
  return std::unique_ptr<DocumentStore>(std::move(store));
}

WriteResult DocumentStore::WriteView(ViewWrite view) {
  std::promise<WriteResult> promise;
  auto future = promise.get_future();
  SubmitView(std::move(view), [&promise](WriteResult r) { promise.set_value(std::move(r)); });
  return future.get();
}

ImportResult DocumentStore::WriteImport(ImportBatch batch) {
  std::promise<ImportResult> promise;
  auto future = promise.get_future();
  SubmitImport(std::move(batch), [&promise](ImportResult r) { promise.set_value(std::move(r)); });
  return future.get();
}

WriteResult DocumentStore::Write(WriteRequest request) {
  std::promise<WriteResult> promise;
  auto future = promise.get_future();
  Submit(std::move(request), [&promise](WriteResult r) { promise.set_value(std::move(r)); });
  return future.get();
}

}  // namespace feedd
