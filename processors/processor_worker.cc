#include "processors/processor_worker.h"

#include <algorithm>
#include <boost/json.hpp>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>

#include "feed/kafka_message.h"
#include "feed/message_headers.h"
#include "processors/applied_offsets.h"
#include "processors/http_view_context.h"
#include "processors/keyed_applier.h"
#include "processors/status_cell.h"
#include "util/json_parse.h"
#include "util/logging.h"
#include "util/thread_name.h"

namespace feedd {
namespace {

constexpr auto kCommitInterval = std::chrono::milliseconds(200);
constexpr size_t kMaxInFlight = 20000;  // back-pressure on the consumer
constexpr int kFeedPage = 1000;

}  // namespace

class ProcessorWorker::Impl final : public PartitionListener {
 public:
  Impl(ProcessorConfig config, std::unique_ptr<ProcessorKind> kind,
       std::vector<ContainerSpec> containers, WorkerOptions options,
       std::unique_ptr<PartitionedChangeSource> source)
      : config_(std::move(config)),
        kind_(std::move(kind)),
        containers_(std::move(containers)),
        options_(std::move(options)),
        source_(std::move(source)) {
    for (const auto& c : kind_->SourceContainers()) sources_.insert(c);
    applier_ = std::make_unique<KeyedApplier>(
        kind_.get(),
        KeyedApplier::Options{
            config_.name, config_.parallelism, config_.max_attempts, config_.retry_backoff,
            // The daemon unreachable or restarting: wait for it.
            [](const Status& s) { return s.code() == ErrorCode::kUnavailable; }, &IsCollision,
            // Parked: its offset moves on (docs/processors.md).
            [this](const Change& change, const std::string&) { Settle(change.lsn); }},
        [this](const Change& change) { return ApplyOnce(change); },
        [this](const Change& change) { OnApplied(change); },
        [this](const std::string& error) { SetError(error); });
  }

  ~Impl() override { Stop(); }

  Status Start() {
    std::vector<std::string> topics;
    for (const auto& c : sources_) topics.push_back(options_.kafka.topic_prefix + c);
    if (Status s = source_->Subscribe(topics, this); !s.ok()) return s;
    applier_->Start();
    stopping_ = false;
    SetState(ProcessorState::kRunning);
    poll_thread_ = std::thread([this] {
      SetThreadName("poll-" + config_.name);
      PollLoop();
    });
    FEEDD_LOG(kInfo, "worker") << config_.name << " (" << config_.kind << ") joined group "
                               << GroupId(config_) << " at " << options_.kafka.bootstrap
                               << ", writing to " << options_.api;
    return Status::Ok();
  }

  void Stop() {
    if (stopping_.exchange(true)) return;
    if (poll_thread_.joinable()) poll_thread_.join();
    applier_->Stop();
    LogForgottenParked();
    SetState(ProcessorState::kStopped);
  }

  const std::string& name() const { return config_.name; }

  // The consumer group of `config`'s instance, as an in-daemon instance
  // would name it.
  static std::string GroupId(const ProcessorConfig& config) {
    return "feedd-processor-" + config.name;
  }

  Result<std::vector<std::string>> Verify() {
    HttpClient client(options_.api, options_.http_timeout, options_.api_security);
    HttpViewContext ctx(&client, &containers_, 0);  // Verify() writes nothing
    std::vector<std::string> differences;
    if (Status s = kind_->Verify(ctx, &differences); !s.ok()) return s;
    return differences;
  }

  WorkerStatus GetStatus() const {
    WorkerStatus s;
    s.name = config_.name;
    s.kind = config_.kind;
    { std::tie(s.state, s.last_error) = status_.Get(); }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      s.assigned_partitions = partitions_.size();
      s.in_flight = positions_.size();
      bool first = true;  // the lowest over the partitions
      for (const auto& [key, part] : partitions_) {
        const Lsn resolved = part.offsets.resolved();
        s.resolved_lsn = first ? resolved : std::min(s.resolved_lsn, resolved);
        first = false;
      }
    }
    s.applied = applied_.load();
    s.view_writes = view_writes_.load();
    s.errors = applier_->errors();
    s.parked = applier_->parked();
    s.catch_ups = catch_ups_.load();
    s.rebalances = rebalances_.load();
    s.assignment_errors = assignment_errors_.load();
    s.unrecoverable_gaps = lost_.load();
    s.collisions = collisions_.load();
    if (s.state == ProcessorState::kRunning && s.parked > 0) s.state = ProcessorState::kDegraded;
    return s;
  }

 private:
  struct Partition {
    // The offset the next message should have, and the LSN of the last
    // message before it (from the committed offset's metadata on assignment).
    int64_t expected_offset = 0;
    Lsn last_lsn = 0;
    Lsn skip_through = 0;  // applied from the durable feed up to here
    // Received since the assignment; its resolved() is the highest marker
    // passed with everything before it applied or parked (docs/kafka.md).
    AppliedOffsets offsets;
  };
  struct Position {
    TopicPartition partition;
    int64_t offset = -1;  // -1: applied from the durable feed
  };

  // A worker keeps parked changes in memory only: name them (the first 20)
  // before they are gone, so that the operator can verify and repair.
  void LogForgottenParked() {
    constexpr size_t kNamed = 20;
    std::vector<ParkedChange> parked = applier_->Parked();
    if (parked.empty()) return;
    std::string named;
    for (size_t i = 0; i < parked.size() && i < kNamed; ++i) {
      const ParkedChange& p = parked[i];
      named += (i == 0 ? "" : ", ") + std::string("LSN ") + std::to_string(p.lsn) + " (" +
               p.container + "/" + p.partition_key + "/" + p.id + ")";
    }
    if (parked.size() > kNamed) named += ", ...";
    FEEDD_LOG(kError, "worker") << config_.name << ": stopping with " << parked.size()
                                << " parked change(s), which are forgotten: " << named
                                << "; verify (--worker.verify=true) and repair";
  }

  // ---- applying (worker threads) ----
  HttpClient* LeaseClient() {
    std::lock_guard<std::mutex> lock(clients_mutex_);
    if (idle_clients_.empty()) {
      all_clients_.push_back(
          std::make_unique<HttpClient>(options_.api, options_.http_timeout, options_.api_security));
      return all_clients_.back().get();
    }
    HttpClient* client = idle_clients_.back();
    idle_clients_.pop_back();
    return client;
  }
  void ReturnClient(HttpClient* client) {
    std::lock_guard<std::mutex> lock(clients_mutex_);
    idle_clients_.push_back(client);
  }

  Status ApplyOnce(const Change& change) {
    HttpClient* client = LeaseClient();
    HttpViewContext ctx(client, &containers_, change.lsn);
    Status s = kind_->Apply(change, ctx);
    if (s.ok()) s = ctx.Commit();
    ReturnClient(client);
    if (IsCollision(s)) ++collisions_;
    if (!s.ok()) return s;
    for (const std::string& collision : ctx.collisions()) {
      ++collisions_;
      FEEDD_LOG(kWarning, "worker") << config_.name << ": " << collision;
    }
    view_writes_ += ctx.writes_committed();
    ObserveViewCommitted(config_, change, ctx.writes_committed());
    return Status::Ok();
  }

  void OnApplied(const Change& change) {
    ++applied_;
    Settle(change.lsn);
  }

  // The change at `lsn` was applied or parked: its offset may be committed.
  void Settle(Lsn lsn) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = positions_.find(lsn);
    if (it == positions_.end()) return;
    if (it->second.offset >= 0) {
      auto part = partitions_.find(it->second.partition);
      if (part != partitions_.end()) part->second.offsets.Settle(it->second.offset);
    }
    positions_.erase(it);
    drained_.notify_all();
  }

  // ---- the consumer (poll thread) ----
  void PollLoop() {
    auto last_commit = std::chrono::steady_clock::now();
    while (!stopping_) {
      bool full;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        full = positions_.size() >= kMaxInFlight;
      }
      if (full) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      } else {
        std::optional<ConsumedMessage> m;
        for (int i = 0; i < 1000 && !stopping_; ++i) {
          Status polled = source_->Poll(std::chrono::milliseconds(i == 0 ? 20 : 0), &m);
          if (!polled.ok()) {
            SetError("kafka: " + polled.message());
            continue;
          }
          if (!m) break;
          OnMessage(*m);
        }
      }
      if (std::chrono::steady_clock::now() - last_commit >= kCommitInterval) {
        CommitProgress(false);
        last_commit = std::chrono::steady_clock::now();
      }
    }
    // Leaving: finish what is in flight (bounded), commit it, leave the group.
    WaitDrained([](const TopicPartition&) { return true; });
    CommitProgress(true);
    if (Status closed = source_->Close(); !closed.ok()) SetError(closed.message());
  }

  void OnMessage(const ConsumedMessage& m) {
    const TopicPartition& key = m.at;
    const Lsn lsn = m.lsn;
    std::optional<Change> change;
    if (lsn != 0 && m.payload) change = ToChange(m);

    std::unique_lock<std::mutex> lock(mutex_);
    auto part = partitions_.find(key);
    if (part == partitions_.end()) return;  // revoked meanwhile
    if (m.offset > part->second.expected_offset) {
      // Offsets are contiguous: the broker's retention dropped messages this
      // group had not consumed (the consumer was reset to the earliest one).
      const Lsn after = part->second.last_lsn;
      const int64_t expected = part->second.expected_offset;
      lock.unlock();
      CatchUp(key, after, expected, m.offset);
      lock.lock();
      part = partitions_.find(key);
      if (part == partitions_.end()) return;
    }
    part->second.expected_offset = m.offset + 1;
    if (lsn != 0) part->second.last_lsn = lsn;
    part->second.offsets.Receive(m.offset, lsn, m.resolved);
    // Nothing to apply: a tombstone, a resolved marker (no feedd-lsn
    // header), another kind of message, a change already applied from the
    // durable feed, or a duplicate in flight. Its offset is settled at once,
    // so offsets are committed past it.
    if (!change || lsn <= part->second.skip_through || positions_.count(lsn) != 0) {
      part->second.offsets.Settle(m.offset);
      return;
    }
    positions_[lsn] = Position{key, m.offset};
    applier_->Dispatch(std::move(*change));
  }

  // The change a message carries: its native envelope, or (for a shrunk or
  // foreign envelope) what its headers and key say - enough for
  // level-triggered kinds, which read the current state anyway.
  std::optional<Change> ToChange(const ConsumedMessage& m) const {
    auto parsed = ParseChange(*m.payload);
    if (parsed.ok() && parsed->lsn == m.lsn) {
      if (sources_.count(parsed->container) == 0) return std::nullopt;
      return std::move(*parsed);
    }
    Change change;
    change.lsn = m.lsn;
    change.container = m.container;
    change.id = m.id;
    change.partition_key = m.partition_key;
    change.op = m.op == "delete" ? ChangeOp::kDelete
                                 : (m.op == "replace" ? ChangeOp::kReplace : ChangeOp::kCreate);
    if (sources_.count(change.container) == 0 || change.id.empty()) return std::nullopt;
    return change;
  }

  // Commits, per partition, the offset of the first change not yet applied or parked.
  void CommitProgress(bool sync) {
    std::vector<CommittedPosition> commits;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (auto& [key, part] : partitions_) {
        if (std::optional<AppliedOffsets::Position> moved = part.offsets.TakeCommit()) {
          commits.push_back({key, moved->offset, std::to_string(moved->lsn)});
        }
      }
    }
    if (Status s = source_->Commit(commits, sync); !s.ok()) SetError(s.message());
  }

  // Waits (at most revoke_wait) until the partitions selected by `which`
  // have nothing in flight.
  template <typename Which>
  void WaitDrained(Which which) {
    auto deadline = std::chrono::steady_clock::now() + options_.revoke_wait;
    std::unique_lock<std::mutex> lock(mutex_);
    auto busy = [&] {
      for (const auto& [key, part] : partitions_) {
        if (!which(key)) continue;
        if (part.offsets.Busy()) return true;
      }
      return false;
    };
    while (busy()) {
      if (drained_.wait_until(lock, deadline) == std::cv_status::timeout) break;
    }
  }

  // ---- rebalances (the poll thread, inside Poll()) ----
  void OnAssigned(const std::vector<CommittedPosition>& positions, const Status& read) override {
    ++rebalances_;
    if (!read.ok()) SetError(read.message());
    {
      // Where this group stands: the committed offsets and the LSNs recorded
      // with them (nothing committed: from offset 0 and LSN 0).
      std::lock_guard<std::mutex> lock(mutex_);
      for (const CommittedPosition& position : positions) {
        Partition part;
        if (position.offset >= 0) {
          part.expected_offset = position.offset;
          part.last_lsn = ParseLsn(position.metadata);
          part.offsets = AppliedOffsets(part.last_lsn);
        }
        partitions_[position.partition] = std::move(part);
      }
    }
    FEEDD_LOG(kInfo, "worker") << config_.name << ": assigned " << positions.size()
                               << " partition(s)";
  }

  void OnAssignRefused(const std::vector<TopicPartition>& partitions, const Status& why) override {
    // Nothing of them is fetched, and nothing waits on them. The group
    // still counts them as this worker's until the next rebalance: loud,
    // counted, in the status.
    ++rebalances_;
    ++assignment_errors_;
    FEEDD_LOG(kError, "worker") << config_.name << ": " << why.message()
                                << "; they are not consumed until the next rebalance";
    SetError(why.message());
  }

  // Revoked (or lost): let their in-flight changes finish, commit, hand over.
  void OnRevoked(const std::vector<TopicPartition>& partitions) override {
    const std::set<TopicPartition> revoked(partitions.begin(), partitions.end());
    WaitDrained([&](const TopicPartition& key) { return revoked.count(key) != 0; });
    CommitProgress(true);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (const auto& key : revoked) partitions_.erase(key);
    }
    FEEDD_LOG(kInfo, "worker") << config_.name << ": handing over " << partitions.size()
                               << " partition(s)";
  }

  void OnRevokeRefused(const std::vector<TopicPartition>& partitions, const Status& why) override {
    // Their offsets are committed and this worker no longer applies them
    // (OnMessage passes over partitions it does not hold).
    ++assignment_errors_;
    FEEDD_LOG(kError, "worker") << config_.name << ": " << why.message();
    SetError(why.message());
  }

  // ---- behind retention ----
  // Messages [expected, got) of `key` are gone from the broker. Applies that
  // partition's changes after LSN `after` from the durable feed, up to the
  // head; the messages that follow and are covered are then passed over.
  void CatchUp(const TopicPartition& key, Lsn after, int64_t expected, int64_t got) {
    const auto& [topic, partition] = key;
    ++catch_ups_;
    SetState(ProcessorState::kCatchingUp);
    FEEDD_LOG(kWarning, "worker") << config_.name << ": " << topic << "[" << partition
                                  << "] offsets " << expected << ".." << got - 1
                                  << " are no longer held by the broker; applying that "
                                     "partition's changes after LSN "
                                  << after << " from the durable feed";
    auto covered = CatchUpOnce(topic, partition, after);
    // The daemon unreachable: try again (this partition waits, visibly).
    for (auto backoff = std::chrono::milliseconds(100);
         !covered.ok() && covered.status().code() != ErrorCode::kLsnNotRetained && !stopping_;
         backoff = std::min(backoff * 2, std::chrono::milliseconds(5000))) {
      SetError(topic + "[" + std::to_string(partition) +
               "]: catching up from the durable feed: " + covered.status().ToString());
      std::this_thread::sleep_for(backoff);
      covered = CatchUpOnce(topic, partition, after);
    }
    if (!covered.ok()) {
      // The daemon's retention did not keep them either: loud, counted, and
      // `feedd worker --worker.verify=true` lists what the view misses.
      ++lost_;
      FEEDD_LOG(kError, "worker") << config_.name << ": " << topic << "[" << partition
                                  << "]: changes after LSN " << after
                                  << " are neither in Kafka nor in the durable feed: "
                                  << covered.status().ToString();
      SetError("changes after LSN " + std::to_string(after) + " of " + topic + "[" +
               std::to_string(partition) + "] are no longer retained anywhere");
    } else {
      std::lock_guard<std::mutex> lock(mutex_);
      auto part = partitions_.find(key);
      if (part != partitions_.end()) part->second.skip_through = *covered;
    }
    SetState(ProcessorState::kRunning);
  }

  // The JSON object `reply` answered, or an error naming `what`.
  static Result<boost::json::object> ReplyObject(const HttpReply& reply, const char* what) {
    Result<boost::json::value> body = ParseJson(reply.body);
    if (!body.ok()) {
      return Status(ErrorCode::kInternal,
                    std::string("unexpected answer to ") + what + ": " + body.status().message());
    }
    if (!body->is_object()) {
      return Status(ErrorCode::kInternal, std::string("unexpected answer to ") + what);
    }
    return std::move(body->get_object());
  }

  // Applies the changes of `topic`'s container that Kafka put in `partition`
  // with LSN > from_lsn, up to the head read first. Returns that head. An
  // answer of an unexpected shape is an error.
  Result<Lsn> CatchUpOnce(const std::string& topic, int32_t partition, Lsn from_lsn) {
    const std::string container = topic.substr(options_.kafka.topic_prefix.size());
    HttpClient client(options_.api, options_.http_timeout, options_.api_security);
    auto info = client.Send("GET", "/v1/feed");
    if (!info.ok()) return info.status();
    if (Status s = StatusOfReply(*info); !s.ok()) return s;
    auto feed = ReplyObject(*info, "GET /v1/feed");
    if (!feed.ok()) return feed.status();
    const boost::json::value* head_value = feed->if_contains("headLsn");
    if (head_value == nullptr || !(head_value->is_uint64() || head_value->is_int64())) {
      return Status(ErrorCode::kInternal, "unexpected answer to GET /v1/feed: no headLsn");
    }
    const Lsn head = head_value->to_number<Lsn>();
    const Result<int32_t> partition_count = source_->PartitionCount(topic);
    if (!partition_count.ok()) return partition_count.status();
    Lsn next = from_lsn + 1;
    std::set<Lsn> waiting;
    while (next <= head && !stopping_) {
      auto page = client.Send("GET", "/v1/changefeed?container=" + PercentEncodeSegment(container) +
                                         "&from=" + std::to_string(next) +
                                         "&limit=" + std::to_string(kFeedPage));
      if (!page.ok()) return page.status();
      if (Status s = StatusOfReply(*page); !s.ok()) {
        return s;  // lsn_not_retained: the daemon's retention did not wait
      }
      auto body = ReplyObject(*page, "GET /v1/changefeed");
      if (!body.ok()) return body.status();
      const boost::json::value* changes_value = body->if_contains("changes");
      const boost::json::value* next_value = body->if_contains("next");
      if (changes_value == nullptr || !changes_value->is_array() || next_value == nullptr ||
          !next_value->is_string()) {
        return Status(ErrorCode::kInternal, "unexpected answer to GET /v1/changefeed");
      }
      const auto& changes = changes_value->get_array();
      for (const auto& envelope : changes) {
        auto change = ParseChange(boost::json::serialize(envelope));
        if (!change.ok() || change->lsn > head) continue;
        if (KafkaPartitionOf(change->partition_key, *partition_count) != partition) continue;
        std::lock_guard<std::mutex> lock(mutex_);
        if (positions_.count(change->lsn) != 0) continue;
        positions_[change->lsn] = Position{{topic, partition}, -1};
        waiting.insert(change->lsn);
        applier_->Dispatch(std::move(*change));
      }
      Lsn page_next = ParseLsn(std::string(next_value->get_string()));
      if (changes.empty() || page_next <= next) break;
      next = page_next;
    }
    // Wait until they are applied or parked.
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stopping_) {
      bool pending = false;
      for (Lsn lsn : waiting) pending = pending || positions_.count(lsn) != 0;
      if (!pending) break;
      drained_.wait_for(lock, std::chrono::milliseconds(100));
    }
    return head;
  }

  // ---- status ----
  void SetState(ProcessorState state) { status_.SetState(state); }
  void SetError(const std::string& error) { status_.SetError(error); }

  const ProcessorConfig config_;
  const std::unique_ptr<ProcessorKind> kind_;
  const std::vector<ContainerSpec> containers_;
  const WorkerOptions options_;
  // Polled by the poll thread, which also runs the listener callbacks.
  const std::unique_ptr<PartitionedChangeSource> source_;
  std::set<std::string> sources_;
  std::unique_ptr<KeyedApplier> applier_;

  std::thread poll_thread_;
  std::atomic<bool> stopping_{true};

  mutable std::mutex mutex_;
  std::condition_variable drained_;
  std::map<TopicPartition, Partition> partitions_;  // assigned; GUARDED_BY(mutex_)
  std::unordered_map<Lsn, Position> positions_;     // in flight; GUARDED_BY(mutex_)

  std::mutex clients_mutex_;
  std::vector<std::unique_ptr<HttpClient>> all_clients_;
  std::vector<HttpClient*> idle_clients_;

  StatusCell status_{"worker", config_.name};
  std::atomic<uint64_t> applied_{0}, view_writes_{0}, catch_ups_{0}, rebalances_{0}, lost_{0};
  std::atomic<uint64_t> assignment_errors_{0};
  std::atomic<uint64_t> collisions_{0};
};

Result<std::unique_ptr<ProcessorWorker>> ProcessorWorker::Create(
    ProcessorConfig config, std::unique_ptr<ProcessorKind> kind,
    std::vector<ContainerSpec> containers, WorkerOptions options) {
  auto source = NewKafkaPartitionedChangeSource(options.kafka, Impl::GroupId(config),
                                                "feedd-worker-" + config.name);
  return Create(std::move(config), std::move(kind), std::move(containers), std::move(options),
                std::move(source));
}

Result<std::unique_ptr<ProcessorWorker>> ProcessorWorker::Create(
    ProcessorConfig config, std::unique_ptr<ProcessorKind> kind,
    std::vector<ContainerSpec> containers, WorkerOptions options,
    std::unique_ptr<PartitionedChangeSource> source) {
  if (!kind->Distributable()) {
    return Status(ErrorCode::kInvalidRequest,
                  "processor " + config.name + ": kind " + config.kind +
                      " keeps one view for all changes and cannot be shared between processes; "
                      "run it in the daemon (processor." +
                      config.name + ".run = daemon)");
  }
  return std::unique_ptr<ProcessorWorker>(new ProcessorWorker(
      std::make_unique<Impl>(std::move(config), std::move(kind), std::move(containers),
                             std::move(options), std::move(source))));
}

ProcessorWorker::ProcessorWorker(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ProcessorWorker::~ProcessorWorker() = default;
Status ProcessorWorker::Start() { return impl_->Start(); }
void ProcessorWorker::Stop() { impl_->Stop(); }
const std::string& ProcessorWorker::name() const { return impl_->name(); }
WorkerStatus ProcessorWorker::GetStatus() const { return impl_->GetStatus(); }
Result<std::vector<std::string>> ProcessorWorker::Verify() { return impl_->Verify(); }

}  // namespace feedd
