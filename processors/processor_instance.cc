#include "processors/processor_instance.h"

#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <thread>

#include "processors/concern_filter.h"
#include "processors/keyed_applier.h"
#include "processors/progress_view_context.h"
#include "processors/source_pump.h"
#include "processors/staged_reads_view_context.h"
#include "processors/status_cell.h"
#include "processors/store_view_context.h"
#include "processors/view_read_memo.h"
#include "util/clock.h"
#include "util/logging.h"
#include "util/lsn_watchers.h"

namespace feedd {
namespace {

constexpr size_t kReadBatch = 1000;
// How long an idle instance waits for a change before its turn
// acknowledges (records) W again; it gets turns at this rate only.
constexpr auto kIdleWait = std::chrono::seconds(1);
// Held back (Config::max_in_flight): the next turn comes when W moves, or
// after this.
constexpr auto kBackPressureWait = std::chrono::milliseconds(100);
// After a failed read of the source.
constexpr auto kSourceRetryWait = std::chrono::seconds(1);

ViewReadMemo::GenerationFn PartitionGenerationOf(const DocumentStore* store) {
  return
      [store](const std::string& container, const std::string& partition_key, const std::string&) {
        return store->PartitionGeneration(container, partition_key);
      };
}

ViewReadMemo::GenerationFn ItemGenerationOf(const DocumentStore* store) {
  return [store](const std::string& container, const std::string& partition_key,
                 const std::string& id) {
    return store->ItemGeneration(container, partition_key, id);
  };
}

}  // namespace

class ProcessorInstance::Impl final : public SourcePump::Member {
 public:
  Impl(DocumentStore* store, SourcePump* pump, ProcessorConfig config,
       std::unique_ptr<ProcessorKind> kind, std::unique_ptr<ChangeSource> source)
      : store_(store),
        pump_(pump),
        config_(std::move(config)),
        kind_(std::move(kind)),
        source_(std::move(source)),
        consumer_name_(ConsumerName(config_.name)),
        query_memo_(PartitionGenerationOf(store),
                    ViewReadMemo::QueryLimits(config_.read_memo_bytes)),
        item_memo_(ItemGenerationOf(store), ViewReadMemo::ItemLimits(config_.read_memo_bytes)) {
    for (const auto& c : kind_->SourceContainers()) {
      sources_.emplace(c, ConcernFilter(kind_->ConcernFilters(c)));
    }
    for (const auto& c : kind_->TargetContainers()) targets_.insert(c);
    source_->SetReadyCallback([pump] { pump->Wake(); });
    applier_ = std::make_unique<KeyedApplier>(
        kind_.get(),
        KeyedApplier::Options{
            config_.name, config_.parallelism, config_.max_attempts, config_.retry_backoff,
            // The store below its disk reserve or recovering: wait for it.
            [](const Status& s) {
              return s.code() == ErrorCode::kInsufficientStorage ||
                     s.code() == ErrorCode::kUnavailable;
            },
            &IsCollision,
            [this](const Change& change, const std::string& error) { OnParked(change, error); }},
        [this](const Change& change) { return Apply(std::span<const Change>(&change, 1)); },
        [this](const Change& change) {
          ++applied_count_;
          Unpark(change.lsn);
          Done(change.lsn);
        },
        [this](const std::string& error) { SetError(error); },
        [this](const std::vector<Change>& changes) { return Apply(changes); });
  }

  ~Impl() override { Stop(); }

  Status Start() {
    bool registered = false;
    for (const auto& c : store_->Consumers()) {
      if (c.name == consumer_name_) {
        registered = true;
        SetWatermark(c.acked);
      }
    }
    if (!registered) {
      // A new view on existing data: derive it once, then follow the feed.
      if (Status s = store_->RegisterConsumer(consumer_name_, store_->HeadLsn()); !s.ok()) return s;
      if (Status s = RebuildLocked(AdminRun{}); !s.ok()) return s;
    }
    if (Status s = RestoreParked(); !s.ok()) return s;
    StartThreads();
    FEEDD_LOG(kInfo, "processor") << config_.name << " (" << config_.kind << ") running from LSN "
                                  << applied_.value() + 1;
    return Status::Ok();
  }

  void Stop() {
    std::lock_guard<std::mutex> control(control_mutex_);
    if (stopped_) return;
    stopped_ = true;
    StopThreads();
    SetState(ProcessorState::kStopped);
    applied_.Clear();
  }

  const std::string& name() const { return config_.name; }
  const ProcessorKind& kind() const { return *kind_; }
  Lsn applied() const { return applied_.value(); }
  uint64_t OnApplied(Lsn lsn, std::function<void()> fn) {
    return applied_.Watch(lsn, std::move(fn));
  }
  void CancelApplied(uint64_t token) { applied_.Cancel(token); }

  ProcessorStatus GetStatus() const {
    ProcessorStatus s;
    s.name = config_.name;
    s.kind = config_.kind;
    s.source = "local";
    s.applied_lsn = applied_.value();
    Lsn head = store_->HeadLsn();
    s.lag_changes = head > s.applied_lsn ? head - s.applied_lsn : 0;
    {
      std::lock_guard<std::mutex> lock(track_mutex_);
      s.pending = 0;
      uint64_t oldest_ts = 0;
      for (const auto& [lsn, entry] : pending_) {
        if (entry.done) continue;
        ++s.pending;
        if (oldest_ts == 0 || entry.ts_ms < oldest_ts) oldest_ts = entry.ts_ms;
      }
      if (s.lag_changes > 0) {
        // The oldest unapplied change is W+1, received or not.
        FeedPage page;
        FeedReadSpec spec;
        spec.from = s.applied_lsn + 1;
        spec.limit = 1;
        if (store_->ReadFeed(spec, &page).ok() && !page.records.empty()) {
          oldest_ts =
              oldest_ts == 0 ? page.records[0].ts_ms : std::min(oldest_ts, page.records[0].ts_ms);
        }
      }
      uint64_t now = config_.clock->NowMillis();
      if (oldest_ts > 0 && now > oldest_ts) s.lag_seconds = (now - oldest_ts) / 1000.0;
    }
    { std::tie(s.state, s.last_error) = status_.Get(); }
    {
      std::lock_guard<std::mutex> lock(parked_mutex_);
      s.parked = parked_.size();
    }
    s.parked_total = applier_->parked_total();
    s.rebuilds = rebuilds_.load();
    s.paused = paused_.load();
    if (s.state == ProcessorState::kRunning && s.paused) s.state = ProcessorState::kPaused;
    if (s.state == ProcessorState::kRunning && s.parked > 0) s.state = ProcessorState::kDegraded;
    s.applied = applied_count_.load();
    s.view_writes = view_writes_.load();
    s.passed_over_outside_concern = outside_concern_.load();
    s.passed_over_applied_already = applied_already_.load();
    s.errors = applier_->errors();
    s.batches = applier_->batches();
    const ChangeSourceCounts counts = source_->counts();
    s.from_commit_path = counts.in_process;
    s.from_durable_feed = counts.from_feed;
    s.collisions = collisions_.load();
    s.view_query_memo = {query_memo_.hits(), query_memo_.misses(), query_memo_.bytes()};
    s.view_item_memo = {item_memo_.hits(), item_memo_.misses(), item_memo_.bytes()};
    return s;
  }

  std::vector<ParkedChange> Parked() const {
    std::lock_guard<std::mutex> lock(parked_mutex_);
    std::vector<ParkedChange> out;
    out.reserve(parked_.size());
    for (const auto& [lsn, p] : parked_) out.push_back(p);
    return out;
  }

  std::optional<ParkedChange> OldestParked(Lsn at_or_below) const {
    std::lock_guard<std::mutex> lock(parked_mutex_);
    if (parked_.empty() || parked_.begin()->first > at_or_below) return std::nullopt;
    return parked_.begin()->second;
  }

  void Pause(bool pause) {
    {
      std::lock_guard<std::mutex> lock(turns_mutex_);
      if (paused_.exchange(pause) == pause) return;
      // Out of the pump once its turn is over: nothing committed after
      // this is taken until the instance is back.
      UpdateTurnsLocked();
    }
    FEEDD_LOG(kInfo, "processor") << config_.name << (pause ? ": paused" : ": resumed")
                                  << " at LSN " << applied_.value();
  }

  Status ResetTo(Lsn lsn) {
    // Answered at once, on an I/O thread: it does not wait for a rebuild.
    std::unique_lock<std::mutex> control(control_mutex_, std::try_to_lock);
    if (!control.owns_lock()) {
      return Status(ErrorCode::kOperationInProgress,
                    config_.name + " is being rebuilt or stopped; reset it afterwards");
    }
    if (stopped_) return Status(ErrorCode::kUnavailable, "the processor is stopped");
    StopThreads();
    Status s;
    const Lsn position = Position();
    if (lsn > position) {
      s = Status(ErrorCode::kInvalidRequest,
                 config_.name + " has applied up to LSN " + std::to_string(position) +
                     "; a reset goes back, not past changes it has not applied (rebuild instead)");
    } else {
      // Refused when the feed no longer holds lsn + 1.
      s = store_->RegisterConsumer(consumer_name_, lsn);
    }
    if (s.ok()) {
      std::lock_guard<std::mutex> lock(track_mutex_);
      watermark_ = lsn;
    }
    StartThreads();
    if (s.ok()) {
      FEEDD_LOG(kInfo, "processor")
          << config_.name << ": reset to LSN " << lsn << ", applying the changes after it again";
    }
    return s;
  }

  size_t ReplayParked() {
    std::lock_guard<std::mutex> control(control_mutex_);  // the applier stays up
    if (stopped_) return 0;
    return applier_->ReplayParked();
  }

  Status Rebuild(const AdminRun& run) {
    std::lock_guard<std::mutex> control(control_mutex_);
    if (stopped_) return Status(ErrorCode::kUnavailable, "the processor is stopped");
    StopThreads();
    Status s = RebuildLocked(run);
    StartThreads();
    return s;
  }

  uint64_t EstimatedSourceItems() const {
    uint64_t total = 0;
    for (const ContainerUsage& usage : store_->Usage()) {
      if (sources_.contains(usage.container)) total += usage.estimated_items;
    }
    return total;
  }

  Result<std::vector<std::string>> Verify(std::chrono::milliseconds wait, const AdminRun& run) {
    Lsn target = store_->HeadLsn();
    auto deadline = std::chrono::steady_clock::now() + wait;
    while (applied_.value() < target) {
      if (run.stop.stop_requested()) {
        return Status(ErrorCode::kCancelled, "the job was cancelled");
      }
      if (std::chrono::steady_clock::now() > deadline) {
        return Status(ErrorCode::kLsnWaitTimeout, config_.name + " has applied up to LSN " +
                                                      std::to_string(applied_.value()) +
                                                      ", not yet " + std::to_string(target));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    StoreViewContext store_ctx(store_, consumer_name_, [this] { return Position(); });
    ProgressViewContext ctx(&store_ctx, kind_->SourceContainers(), run);
    std::vector<std::string> differences;
    if (Status s = kind_->Verify(ctx, &differences); !s.ok()) return s;
    return differences;
  }

 private:
  struct PendingEntry {
    bool done = false;
    uint64_t ts_ms = 0;
  };

  // ---- lifecycle ----
  void StartThreads() {
    applier_->Start();
    source_->Seek(Position() + 1);
    retry_at_ = {};
    {
      std::lock_guard<std::mutex> lock(turns_mutex_);
      running_ = true;
      UpdateTurnsLocked();
    }
    SetState(ProcessorState::kRunning);
  }

  void StopThreads() {
    {
      std::lock_guard<std::mutex> lock(turns_mutex_);
      running_ = false;
      UpdateTurnsLocked();  // the turn in progress is over
    }
    CancelProgressWatch();
    applier_->Stop();
    Acknowledge(true);
    std::lock_guard<std::mutex> lock(track_mutex_);
    pending_.clear();
    in_flight_ = 0;
  }

  // A cancelled run (AdminRun::stop) commits nothing more; it keeps what
  // its earlier steps committed (views::kRebuildWritesPerCommit), its
  // parked changes and the watermark.
  Status RebuildLocked(const AdminRun& run) {
    SetState(ProcessorState::kRebuilding);
    const Lsn head = store_->HeadLsn();
    FEEDD_LOG(kInfo, "processor") << config_.name << ": rebuilding from the current data (head LSN "
                                  << head << ")";
    // Flushes during the rebuild keep the old watermark; the last commit
    // records the head: changes after it are applied again (idempotently).
    Lsn keep = Position();
    StoreViewContext store_ctx(store_, consumer_name_, [&keep] { return keep; });
    ProgressViewContext ctx(&store_ctx, kind_->SourceContainers(), run);
    Status s = kind_->Rebuild(ctx);
    if (s.ok()) {
      // The view is derived from the current data: nothing stays parked.
      applier_->ClearParked();
      s = DropParked();
    }
    if (s.ok()) {
      keep = head;
      s = ctx.Flush();  // refused once the run is cancelled
    }
    if (s.ok()) {
      ViewWrite mark;
      mark.consumer = consumer_name_;
      mark.consumer_acked = head;
      s = store_->WriteView(std::move(mark)).status;
    }
    view_writes_ += store_ctx.writes_committed();
    if (s.code() == ErrorCode::kCancelled) {
      FEEDD_LOG(kInfo, "processor")
          << config_.name << ": rebuild cancelled after " << store_ctx.writes_committed()
          << " view writes; continuing after LSN " << applied_.value();
      return s;
    }
    if (!s.ok()) {
      SetError("rebuild failed: " + s.ToString());
      return s;
    }
    for (const std::string& collision : ctx.collisions()) {
      ++collisions_;
      FEEDD_LOG(kWarning, "processor") << config_.name << " rebuild: " << collision;
    }
    ++rebuilds_;
    SetWatermark(head);
    FEEDD_LOG(kInfo, "processor") << config_.name << ": rebuilt (" << store_ctx.writes_committed()
                                  << " view writes), continuing after LSN " << head;
    return Status::Ok();
  }

  // ---- tracking: W = every change <= W is applied ----
  // W, where the source goes on from and what is recorded with view
  // writes. applied_ (what read-your-writes waits for) is the highest W
  // there has been: it stays put when a reset moves W back.
  Lsn Position() {
    std::lock_guard<std::mutex> lock(track_mutex_);
    return watermark_;
  }

  // Moves W (under track_mutex_, then for the watchers).
  void SetWatermark(Lsn w) {
    {
      std::lock_guard<std::mutex> lock(track_mutex_);
      watermark_ = std::max(watermark_, w);
    }
    applied_.Advance(w);
  }

  // Starts tracking `lsn`; false when it is applied or tracked already.
  bool Track(Lsn lsn, uint64_t ts_ms) {
    std::lock_guard<std::mutex> lock(track_mutex_);
    if (lsn <= watermark_) return false;
    if (!pending_.emplace(lsn, PendingEntry{false, ts_ms}).second) return false;
    ++in_flight_;
    return true;
  }

  bool SourceMustWait() {
    std::lock_guard<std::mutex> lock(track_mutex_);
    return in_flight_ >= config_.max_in_flight || pending_.size() >= config_.max_tracked;
  }

  void Done(Lsn lsn) {
    Lsn advance_to = 0;
    {
      // W moves under the same lock as pending_, so an LSN is always either
      // <= W or pending: never tracked twice.
      std::lock_guard<std::mutex> lock(track_mutex_);
      auto it = pending_.find(lsn);
      if (it != pending_.end() && !it->second.done) {
        it->second.done = true;
        --in_flight_;
      }
      while (!pending_.empty() && pending_.begin()->second.done &&
             pending_.begin()->first == watermark_ + 1) {
        watermark_ = pending_.begin()->first;
        pending_.erase(pending_.begin());
      }
      advance_to = watermark_;
    }
    applied_.Advance(advance_to);
  }

  // ---- parked changes: kept in the store, so W (and retention) moves on ----
  // Options::on_parked: keeps the change in the store, then counts it as
  // done for W. If it cannot be kept, W waits for it (as for a change being
  // applied) until a replay applies it.
  void OnParked(const Change& change, const std::string& error) {
    {
      std::lock_guard<std::mutex> lock(parked_mutex_);
      parked_[change.lsn] = ParkedChange{kind_->OrderingKey(change), change.lsn, change.container,
                                         change.partition_key,       change.id,  error};
    }
    Status s = store_->PutParked(consumer_name_, ParkedRecord{ToChangeRecord(change), error});
    if (!s.ok()) {
      SetError("keeping parked LSN " + std::to_string(change.lsn) + ": " + s.ToString());
      return;
    }
    Done(change.lsn);
  }

  // After `lsn` was applied: forgets it if it was parked.
  void Unpark(Lsn lsn) {
    {
      std::lock_guard<std::mutex> lock(parked_mutex_);
      if (parked_.erase(lsn) == 0) return;
    }
    if (Status s = store_->DeleteParked(consumer_name_, lsn); !s.ok()) {
      // Kept: after a restart it is parked again, and a replay applies it
      // again, which changes nothing.
      SetError("forgetting replayed LSN " + std::to_string(lsn) + ": " + s.ToString());
    }
  }

  // Parks again what was parked before the restart (all <= W).
  Status RestoreParked() {
    Result<std::vector<ParkedRecord>> kept = store_->ListParked(consumer_name_);
    if (!kept.ok()) return kept.status();
    for (ParkedRecord& p : *kept) {
      Result<Change> parsed = ParseChange(p.change.envelope_json);
      Change change = parsed.ok() ? std::move(*parsed) : Change{p.change.lsn,
                                                                p.change.op,
                                                                p.change.container,
                                                                p.change.partition_key,
                                                                p.change.id,
                                                                p.change.ts_ms,
                                                                {},
                                                                {}};
      {
        std::lock_guard<std::mutex> lock(parked_mutex_);
        parked_[change.lsn] = ParkedChange{kind_->OrderingKey(change), change.lsn, change.container,
                                           change.partition_key,       change.id,  p.error};
      }
      applier_->Restore(std::move(change), p.error);
    }
    if (!kept->empty()) {
      FEEDD_LOG(kWarning, "processor") << config_.name << ": " << kept->size()
                                       << " changes are still parked (replay them to retry)";
    }
    return Status::Ok();
  }

  // A rebuild derives the view from the current data: nothing stays parked.
  Status DropParked() {
    std::map<Lsn, ParkedChange> parked;
    {
      std::lock_guard<std::mutex> lock(parked_mutex_);
      parked.swap(parked_);
    }
    for (const auto& [lsn, p] : parked) {
      if (Status s = store_->DeleteParked(consumer_name_, lsn); !s.ok()) return s;
    }
    return Status::Ok();
  }

  // Tells the source how far W is; `sync`: and has it recorded now.
  void Acknowledge(bool sync) {
    Status s = source_->Acknowledge(Position());
    if (s.ok() && sync) s = source_->Sync();
    if (!s.ok()) SetError("recording the applied watermark: " + s.ToString());
  }

  // ---- applying ----
  // Applies `changes` in order and commits their effects together. They go
  // through a StagedReadsViewContext, so each sees the writes of those before
  // it (ProcessorKind::MaxBatch()), and what one batch read is carried to
  // the next ones in the memos instead of being read again.
  Status Apply(std::span<const Change> changes) {
    StoreViewContext ctx(store_, consumer_name_, [this] { return Position(); });
    StagedReadsViewContext view(&ctx, &query_memo_, &item_memo_, &targets_);
    std::vector<bool> wrote;
    wrote.reserve(changes.size());
    for (const Change& change : changes) {
      const size_t before = ctx.writes_made();
      view.Applying(change);
      if (Status s = kind_->Apply(change, view); !s.ok()) return CountCollision(changes, s);
      wrote.push_back(ctx.writes_made() != before);
    }
    if (Status s = ctx.Commit(); !s.ok()) return CountCollision(changes, s);
    view.Committed(ctx.writes_without_effect() == 0);
    for (const std::string& collision : view.collisions()) {
      ++collisions_;
      FEEDD_LOG(kWarning, "processor") << config_.name << ": " << collision;
    }
    // What the store wrote: not the conditional copies and the deletes it
    // found nothing to do for.
    view_writes_ += ctx.writes_committed() - ctx.writes_without_effect();
    for (size_t i = 0; i < changes.size(); ++i) {
      ObserveViewCommitted(config_, changes[i], wrote[i] ? 1 : 0);
    }
    return Status::Ok();
  }

  // A collision refused by a single change (a failed batch is applied
  // again change by change, so it is counted there) is counted once per
  // attempt; the applier parks it at once.
  Status CountCollision(std::span<const Change> changes, Status s) {
    if (changes.size() == 1 && IsCollision(s)) ++collisions_;
    return s;
  }

  // ---- the source: turns on the pump ----
  // In the pump while started and not paused. Under turns_mutex_.
  void UpdateTurnsLocked() {
    const bool want = running_ && !paused_;
    if (want == in_pump_) return;
    if (want) {
      pump_->Add(this);
    } else {
      pump_->Remove(this);
    }
    in_pump_ = want;
  }

  // Takes what the source holds now and dispatches it.
  SourcePump::Clock::time_point Turn() override {
    const auto now = SourcePump::Clock::now();
    Acknowledge(false);
    CancelProgressWatch();
    if (now < retry_at_) return retry_at_;
    if (SourceMustWait()) {
      // Back-pressure: the next turn when W moves (or soon: in_flight_ can
      // fall without W moving).
      progress_watch_ = applied_.Watch(applied_.value() + 1, [pump = pump_] { pump->Wake(); });
      return now + kBackPressureWait;
    }
    Status s = source_->NextBatch(kReadBatch, &batch_);
    if (!s.ok()) {
      SetError("reading the change feed: " + s.ToString());
      retry_at_ = now + kSourceRetryWait;
      return retry_at_;
    }
    if (batch_.empty()) return now + kIdleWait;  // the source's ready callback wakes the pump
    std::vector<Change> changes;
    StoreViewContext store_reads(store_, consumer_name_, [this] { return Position(); });
    for (const SharedChangeRecord& record : batch_) Offer(*record, store_reads, &changes);
    applier_->Dispatch(std::move(changes));
    const bool full = batch_.size() == kReadBatch;
    batch_.clear();  // lets go of the groups it shares
    // A batch short of full was everything there was: the source's ready
    // callback wakes the pump for more.
    return full ? now : now + kIdleWait;
  }

  void CancelProgressWatch() {
    if (progress_watch_) applied_.Cancel(*progress_watch_);
    progress_watch_.reset();
  }

  // A record of the feed: tracked, and added to *changes when an applier
  // has something to do with it. `store_reads`: for the kind's
  // AppliedAlready().
  void Offer(const ChangeRecord& record, ViewContext& store_reads, std::vector<Change>* changes) {
    if (!Track(record.lsn, record.ts_ms)) return;
    auto source = sources_.find(record.container);
    if (source == sources_.end()) {
      Done(record.lsn);
      return;
    }
    const ConcernFilter& concern = source->second;
    if (!concern.MayConcern(record)) return PassOver(record.lsn, outside_concern_);
    if (AppliedAlready(record, store_reads)) return PassOver(record.lsn, applied_already_);
    auto change = ParseChange(record.envelope_json);
    if (!change.ok()) {
      SetError("LSN " + std::to_string(record.lsn) + ": " + change.status().ToString());
      // The earlier changes first, so that none of its key queues behind it.
      applier_->Dispatch(std::move(*changes));
      changes->clear();
      applier_->Park(Change{record.lsn,
                            record.op,
                            record.container,
                            record.partition_key,
                            record.id,
                            record.ts_ms,
                            {},
                            {}},
                     change.status().ToString());
      return;
    }
    if (!concern.Concerns(*change)) return PassOver(record.lsn, outside_concern_);
    change->item_generation = record.item_generation;
    changes->push_back(std::move(*change));
  }

  // The kind's AppliedAlready(), reading through the instance's memos. Only
  // while the record is the instance's one change in flight: an earlier one
  // being applied may have read its sources before this change, and will
  // write what it read after this check (a post's copy without the count
  // this change added); applied in order, this change would set it right.
  // A context per record: one kept for a batch would keep its answers for
  // the batch, and unlike an applier's batch, the store changes under a
  // turn's.
  bool AppliedAlready(const ChangeRecord& record, ViewContext& store_reads) {
    {
      std::lock_guard<std::mutex> lock(track_mutex_);
      if (in_flight_ != 1) return false;  // Track() counted this record
    }
    StagedReadsViewContext reads(&store_reads, &query_memo_, &item_memo_, &targets_);
    return kind_->AppliedAlready(record, reads);
  }

  // A change an applier has nothing to do for: applied, without one, and
  // counted in `why`.
  void PassOver(Lsn lsn, std::atomic<uint64_t>& why) {
    ++applied_count_;
    ++why;
    Done(lsn);
  }

  // ---- status ----
  void SetState(ProcessorState state) { status_.SetState(state); }
  void SetError(const std::string& error) { status_.SetError(error); }

  DocumentStore* const store_;
  SourcePump* const pump_;
  ProcessorConfig config_;
  const std::unique_ptr<ProcessorKind> kind_;
  const std::unique_ptr<ChangeSource> source_;
  const std::string consumer_name_;
  // The kind's source containers, with which of their changes can concern it.
  std::map<std::string, ConcernFilter> sources_;

  std::mutex control_mutex_;  // Stop / Rebuild
  bool stopped_ = false;      // GUARDED_BY(control_mutex_)
  std::mutex turns_mutex_;    // whether the instance is in the pump
  bool running_ = false;      // between StartThreads and StopThreads; GUARDED_BY(turns_mutex_)
  bool in_pump_ = false;      // GUARDED_BY(turns_mutex_)
  std::atomic<bool> paused_{false};  // written under turns_mutex_
  // The turns' own (one at a time, on the pump's thread, or while out of it).
  std::vector<SharedChangeRecord> batch_;
  SourcePump::Clock::time_point retry_at_;  // no turn reads the source before
  std::optional<uint64_t> progress_watch_;  // applied_'s token for the back-pressure wake
  std::unique_ptr<KeyedApplier> applier_;

  LsnWatchers applied_;  // W, for readers and watchers
  mutable std::mutex track_mutex_;
  Lsn watermark_ = 0;                    // W; GUARDED_BY(track_mutex_)
  std::map<Lsn, PendingEntry> pending_;  // LSNs above W being applied
  size_t in_flight_ = 0;                 // of them not done; GUARDED_BY(track_mutex_)

  std::atomic<uint64_t> rebuilds_{0};

  // The parked changes by LSN, as kept in the store: a replayed change stays
  // here until it is applied (Unpark), so the list, the count, the state and
  // X-Feedd-Parked all say the same thing.
  mutable std::mutex parked_mutex_;
  std::map<Lsn, ParkedChange> parked_;

  StatusCell status_{"processor", config_.name};
  std::atomic<uint64_t> applied_count_{0}, view_writes_{0};
  // Of applied_count_, passed over: outside the kind's concern, or already
  // applied (ProcessorKind::AppliedAlready()).
  std::atomic<uint64_t> outside_concern_{0}, applied_already_{0};
  std::atomic<uint64_t> collisions_{0};
  // What Apply() read, between batches: query answers and items.
  ViewReadMemo query_memo_, item_memo_;
  // The kind's target containers: they change with its own writes, so the
  // item memo does not keep reads of them.
  std::set<std::string> targets_;
};

void ObserveViewCommitted(const ProcessorConfig& config, const Change& change, size_t writes) {
  if (!config.on_view_committed || writes == 0 || change.ts_ms == 0) return;
  uint64_t now = config.clock->NowMillis();
  config.on_view_committed(now > change.ts_ms ? (now - change.ts_ms) / 1000.0 : 0.0);
}

ProcessorInstance::ProcessorInstance(DocumentStore* store, SourcePump* pump, ProcessorConfig config,
                                     std::unique_ptr<ProcessorKind> kind,
                                     std::unique_ptr<ChangeSource> source)
    : impl_(std::make_unique<Impl>(store, pump, std::move(config), std::move(kind),
                                   std::move(source))) {}
ProcessorInstance::~ProcessorInstance() = default;
Status ProcessorInstance::Start() { return impl_->Start(); }
void ProcessorInstance::Stop() { impl_->Stop(); }
const std::string& ProcessorInstance::name() const { return impl_->name(); }
const ProcessorKind& ProcessorInstance::kind() const { return impl_->kind(); }
ProcessorStatus ProcessorInstance::GetStatus() const { return impl_->GetStatus(); }
Lsn ProcessorInstance::applied() const { return impl_->applied(); }
uint64_t ProcessorInstance::OnApplied(Lsn lsn, std::function<void()> fn) {
  return impl_->OnApplied(lsn, std::move(fn));
}
void ProcessorInstance::CancelApplied(uint64_t token) { impl_->CancelApplied(token); }
std::vector<ParkedChange> ProcessorInstance::Parked() const { return impl_->Parked(); }
std::optional<ParkedChange> ProcessorInstance::OldestParked(Lsn at_or_below) const {
  return impl_->OldestParked(at_or_below);
}
size_t ProcessorInstance::ReplayParked() { return impl_->ReplayParked(); }
void ProcessorInstance::Pause() { impl_->Pause(true); }
void ProcessorInstance::Resume() { impl_->Pause(false); }
Status ProcessorInstance::Rebuild(const AdminRun& run) { return impl_->Rebuild(run); }
Status ProcessorInstance::ResetTo(Lsn lsn) { return impl_->ResetTo(lsn); }
Result<std::vector<std::string>> ProcessorInstance::Verify(std::chrono::milliseconds wait,
                                                           const AdminRun& run) {
  return impl_->Verify(wait, run);
}
uint64_t ProcessorInstance::EstimatedSourceItems() const { return impl_->EstimatedSourceItems(); }

}  // namespace feedd
