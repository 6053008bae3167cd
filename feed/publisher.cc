#include "feed/publisher.h"

#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

#include "feed/embedded_broker.h"
#include "feed/in_flight_window.h"
#include "feed/kafka_conf.h"
#include "feed/kafka_message.h"
#include "feed/partition_recovery.h"
#include "feed/retained_tail.h"
#include "storage/commit_tail.h"
#include "util/logging.h"
#include "util/thread_name.h"

namespace feedd {
namespace {

constexpr size_t kReadBatch = 1000;
constexpr auto kAckInterval = std::chrono::milliseconds(100);
constexpr auto kMaxBackoff = std::chrono::seconds(30);

// One round of resolved markers, one per partition of every topic.
struct MarkerRound {
  int remaining = 0;  // markers awaiting their delivery report
  bool failed = false;
};

// The delivery-report opaque of a message is its change's LSN, or, for a
// resolved marker, the LSN it vouches for with kMarkerBit set (LSNs stay
// far below 2^63).
constexpr uintptr_t kMarkerBit = uintptr_t{1} << 63;
// A heartbeat's opaque (docs/kafka.md, "Heartbeats"): no LSN is that high.
void* const kHeartbeatOpaque = reinterpret_cast<void*>(uintptr_t{1} << 62);
void* LsnOpaque(Lsn lsn) { return reinterpret_cast<void*>(static_cast<uintptr_t>(lsn)); }
void* MarkerOpaque(Lsn lsn) {
  return reinterpret_cast<void*>(static_cast<uintptr_t>(lsn) | kMarkerBit);
}
bool IsMarkerOpaque(void* p) { return (reinterpret_cast<uintptr_t>(p) & kMarkerBit) != 0; }
Lsn OpaqueLsn(void* p) { return static_cast<Lsn>(reinterpret_cast<uintptr_t>(p) & ~kMarkerBit); }

// Every client of the publisher's (the producer, the recovery's consumer):
// where, who, and the kafka.<property> keys of the configuration.
std::map<std::string, std::string> KafkaClientProperties(const KafkaOptions& options,
                                                         const std::string& bootstrap) {
  std::map<std::string, std::string> props = {
      {"bootstrap.servers", bootstrap},
      {"client.id", "feedd-" + options.instance_name},
  };
  for (const auto& [k, v] : options.properties) props[k] = v;
  return props;
}

}  // namespace

std::map<std::string, std::string> PublisherProducerProperties(const KafkaOptions& options,
                                                               const std::string& bootstrap) {
  std::map<std::string, std::string> props = {
      {"enable.idempotence", "true"},
      {"acks", "all"},
      // Batches of up to 20 ms (librdkafka's default is 5), uncompressed.
      // The views do not wait for Kafka (they take changes from the commit
      // path); under the write mix at 8 connections, 20 ms took a third less
      // of the Kafka client's and the embedded broker's CPU per write than 5
      // (docs/benchmarks.md), and linger 1 with lz4 took twice as much.
      {"compression.type", "none"},
      {"linger.ms", "20"},
      {"message.timeout.ms", "0"},  // never give up: the feed is durable
      {"message.max.bytes",
       std::to_string(std::max<size_t>(options.max_envelope_bytes + 65536, 1000000))},
      {"queue.buffering.max.messages", std::to_string(options.max_inflight_messages + 1000)},
      {"queue.buffering.max.kbytes", std::to_string(options.max_inflight_bytes / 1024 + 64 * 1024)},
      {"reconnect.backoff.ms", "100"},
      {"reconnect.backoff.max.ms", "5000"},
      {"log_level", "4"},
  };
  for (const auto& [k, v] : KafkaClientProperties(options, bootstrap)) props[k] = v;
  return props;
}

std::chrono::milliseconds PublisherPollInterval(
    const std::map<std::string, std::string>& producer_properties) {
  constexpr double kMinMs = 1, kMaxMs = 25;
  auto linger = producer_properties.find("linger.ms");
  const char* text = linger == producer_properties.end() ? "" : linger->second.c_str();
  char* end = nullptr;
  const double ms = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(ms >= 0)) return std::chrono::milliseconds(1);
  return std::chrono::milliseconds(static_cast<int64_t>(std::clamp(ms / 4, kMinMs, kMaxMs)));
}

class Publisher::Impl {
 public:
  Impl(DocumentStore* store, KafkaOptions options, std::string bootstrap, bool embedded)
      : store_(store),
        options_(std::move(options)),
        bootstrap_(std::move(bootstrap)),
        embedded_(embedded) {
    for (const auto& c : store_->containers()) topics_[c.name] = TopicFor(options_, c.name);
  }

  ~Impl() { Stop(std::chrono::seconds(5)); }

  Status Start() {
    if (Status v = ValidateKafkaOptions(options_); !v.ok()) return v;
    // The checkpoint: registered once, from the oldest retained change, so a
    // publisher added to an existing database publishes all of it.
    Status s = store_->RegisterConsumer(kConsumerName, store_->OldestRetainedLsn() - 1);
    if (!s.ok()) return s;
    Lsn start = 0;
    bool found = false;
    for (const auto& c : store_->Consumers()) {
      if (c.name == kConsumerName) {
        published_ = c.acked;
        found = true;
      }
    }
    if (!found) return Status(ErrorCode::kInternal, "publisher checkpoint not registered");
    start = published_;
    if (embedded_) {
      // An in-memory broker starts empty: republish what any registered
      // consumer still needs (and, see Run(), the retained tail).
      for (const auto& c : store_->Consumers()) start = std::min(start, c.acked);
    }
    start = std::max(start, store_->OldestRetainedLsn() - 1);
    published_ = start;
    next_ = start + 1;
    // A fresh embedded broker holds nothing until Run() chose what to republish.
    published_snapshot_ = embedded_ ? store_->OldestRetainedLsn() - 1 : published_;
    acked_to_store_ = start;
    resolved_sent_ = start;  // a marker only for what this run publishes
    if (Status cs = CreateProducer(); !cs.ok()) return cs;
    tail_ = std::make_unique<CommitTail>(store_);
    tail_->Seek(next_);  // queues nothing below where it starts
    thread_ = std::thread([this] {
      SetThreadName("feedd-publish");
      Run();
    });
    FEEDD_LOG(kInfo, "kafka") << "publisher starting at LSN " << next_ << " to " << bootstrap_;
    return Status::Ok();
  }

  void Stop(std::chrono::milliseconds flush_timeout) {
    {
      std::lock_guard<std::mutex> lock(wake_mutex_);
      if (stopping_) return;
      stopping_ = true;
      flush_timeout_ = flush_timeout;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
    tail_.reset();  // queues nothing more
    DestroyProducer();
    SetState("stopped");
  }

  PublisherStatus GetStatus() const {
    PublisherStatus s;
    {
      std::lock_guard<std::mutex> lock(status_mutex_);
      s.state = state_;
      s.last_error = last_error_;
      s.lag_seconds = 0;
    }
    s.bootstrap = bootstrap_;
    s.connected = connected_.load();
    s.published_lsn = published_snapshot_.load();
    s.head_lsn = store_->HeadLsn();
    s.lag_changes = s.head_lsn > s.published_lsn ? s.head_lsn - s.published_lsn : 0;
    uint64_t oldest_ts = oldest_unpublished_ts_.load();
    if (s.lag_changes > 0 && oldest_ts == 0) {
      // Not read yet: look at the first unpublished change itself.
      FeedPage page;
      FeedReadSpec spec;
      spec.from = s.published_lsn + 1;
      spec.limit = 1;
      if (store_->ReadFeed(spec, &page).ok() && !page.records.empty()) {
        oldest_ts = page.records[0].ts_ms;
      }
    }
    if (s.lag_changes > 0 && oldest_ts > 0) {
      // The store's clock stamped the change.
      uint64_t now = store_->options().clock->NowMillis();
      s.lag_seconds = now > oldest_ts ? (now - oldest_ts) / 1000.0 : 0.0;
    }
    s.produced = produced_.load();
    s.delivered = delivered_.load();
    s.delivery_errors = delivery_errors_.load();
    s.fatal_errors = fatal_errors_.load();
    s.duplicates_skipped = duplicates_skipped_.load();
    s.envelopes_shrunk = envelopes_shrunk_.load();
    s.envelopes_undecodable = envelopes_undecodable_.load();
    s.inflight_messages = inflight_messages_.load();
    s.inflight_bytes = inflight_bytes_.load();
    s.resolved_lsn = resolved_lsn_.load();
    s.resolved_markers = resolved_markers_.load();
    s.heartbeats = heartbeats_.load();
    return s;
  }

  std::map<std::string, std::string> Topics() const { return topics_; }

 private:
  // ---- producer lifecycle ----
  Status CreateProducer() {
    const std::map<std::string, std::string> properties =
        PublisherProducerProperties(options_, bootstrap_);
    poll_interval_ = PublisherPollInterval(properties);
    Result<KafkaConfPtr> made = NewKafkaConf(properties);
    if (!made.ok()) return made.status();
    rd_kafka_conf_t* conf = made->get();
    rd_kafka_conf_set_opaque(conf, this);
    rd_kafka_conf_set_dr_msg_cb(conf, [](rd_kafka_t*, const rd_kafka_message_t* m, void* self) {
      static_cast<Impl*>(self)->OnDelivery(m);
    });
    rd_kafka_conf_set_error_cb(conf, [](rd_kafka_t*, int err, const char* reason, void* self) {
      static_cast<Impl*>(self)->OnError(static_cast<rd_kafka_resp_err_t>(err), reason);
    });
    Result<rd_kafka_t*> producer =
        NewKafkaClient(RD_KAFKA_PRODUCER, std::move(*made), "kafka producer");
    // What librdkafka refuses here is the configuration it was given.
    if (!producer.ok()) return Status(ErrorCode::kInvalidRequest, producer.status().message());
    producer_ = *producer;
    return Status::Ok();
  }

  void DestroyProducer() {
    if (producer_ != nullptr) {
      rd_kafka_destroy(producer_);
      producer_ = nullptr;
    }
  }

  // ---- callbacks (publisher thread, inside rd_kafka_poll) ----
  void OnDelivery(const rd_kafka_message_t* m) {
    if (IsMarkerOpaque(m->_private)) return OnMarkerDelivery(m);
    if (m->_private == kHeartbeatOpaque) return OnHeartbeatDelivery(m);
    Lsn lsn = OpaqueLsn(m->_private);
    InFlightWindow::Entry* entry = inflight_.Find(lsn);
    if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      ++delivery_errors_;
      SetError(std::string("delivery of LSN ") + std::to_string(lsn) +
               " failed: " + rd_kafka_err2str(m->err));
      if (m->err == RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE) reference_only_.insert(lsn);
      if (entry != nullptr) entry->failed = true;
      rewind_ = true;
    } else {
      ++delivered_;
      if (!connected_.exchange(true)) {
        FEEDD_LOG(kInfo, "kafka") << "broker reachable again; draining the backlog";
        SetState("running");
      }
    }
    if (entry != nullptr) --entry->remaining;
    --inflight_messages_;
    inflight_bytes_ -= m->len;
  }

  void OnError(rd_kafka_resp_err_t err, const char* reason) {
    if (err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN || err == RD_KAFKA_RESP_ERR__TRANSPORT) {
      if (connected_.exchange(false) || err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN) {
        FEEDD_LOG(kWarning, "kafka")
            << "broker unreachable: " << reason << "; changes stay in the durable feed";
      }
      SetState("broker_down");
    }
    if (err == RD_KAFKA_RESP_ERR__FATAL) {
      // The original error behind __FATAL; none raised leaves `buf` as it
      // was, and the error callback's reason says what there is.
      char buf[512];
      const rd_kafka_resp_err_t fatal = rd_kafka_fatal_error(producer_, buf, sizeof(buf));
      SetError(std::string("fatal producer error: ") +
               (fatal != RD_KAFKA_RESP_ERR_NO_ERROR ? buf : reason));
      ++fatal_errors_;
      fatal_ = true;
      rewind_ = true;
    }
  }

  // ---- the publisher thread ----
  void Run() {
    if (embedded_) StartAtTheRetainedTail();
    auto backoff = std::chrono::milliseconds(200);
    while (!Stopping()) {
      if (!prepared_) {
        Status s = Prepare();
        if (!s.ok()) {
          SetError(s.message());
          SetState("error");
          FEEDD_LOG(kWarning, "kafka")
              << s.message() << "; retrying in " << backoff.count() << " ms";
          Sleep(backoff);
          backoff = std::min<std::chrono::milliseconds>(backoff * 2, kMaxBackoff);
          continue;
        }
        backoff = std::chrono::milliseconds(200);
        SetState("running");
      }
      Pump();
    }
    // Graceful stop: deliver what is in flight, then record the checkpoint.
    if (producer_ != nullptr) {
      auto deadline = std::chrono::steady_clock::now() + flush_timeout_;
      while (inflight_messages_.load() > 0 && std::chrono::steady_clock::now() < deadline) {
        rd_kafka_poll(producer_, 20);
      }
      AdvanceCheckpoint();
      if (inflight_messages_.load() > 0) {
        FEEDD_LOG(kWarning, "kafka") << inflight_messages_.load()
                                     << " messages undelivered at shutdown; they will be "
                                        "republished from LSN "
                                     << published_ + 1;
      }
    }
    AckStore(true);
  }

  // An in-memory broker starts empty: republish at least the newest part of
  // the retained feed that fits its window, for consumers reading from the
  // beginning. Here, not in Start(): finding it reads megabytes of the feed,
  // which must not hold up the daemon's start.
  void StartAtTheRetainedTail() {
    Result<Lsn> tail = RetainedTailStart(*store_, options_, options_.partitions,
                                         EmbeddedBroker::kRepublishBytesPerPartition);
    if (!tail.ok()) {
      SetError("finding the retained tail to republish: " + tail.status().ToString());
    } else if (Lsn start =
                   std::max(std::min(published_, *tail - 1), store_->OldestRetainedLsn() - 1);
               start < published_) {
      FEEDD_LOG(kInfo, "kafka") << "republishing the retained tail from LSN " << start + 1
                                << " into the embedded broker";
      published_ = start;
      next_ = start + 1;
      acked_to_store_ = start;
      resolved_sent_ = start;
    }
    published_snapshot_ = published_;
  }

  Status Prepare() {
    std::map<std::string, int> counts;
    if (Status s = EnsureTopics(&counts); !s.ok()) return s;
    auto found = ReadPublishedLsns(KafkaClientProperties(options_, bootstrap_), counts, published_,
                                   static_cast<int64_t>(options_.max_inflight_messages),
                                   std::chrono::seconds(10));
    if (!found.ok()) return found.status();
    if (!found->lsns.empty()) {
      FEEDD_LOG(kInfo, "kafka") << found->lsns.size() << " changes after LSN " << published_
                                << " are already in Kafka; they will not be sent again";
    }
    already_in_kafka_.insert(found->lsns.begin(), found->lsns.end());
    // Only with a lost checkpoint can an earlier marker be above it.
    resolved_sent_ = std::max(resolved_sent_, found->resolved);
    partition_counts_ = std::move(counts);
    connected_ = true;
    prepared_ = true;
    return Status::Ok();
  }

  // Creates missing topics (when allowed) and reads their partition counts.
  Status EnsureTopics(std::map<std::string, int>* counts) {
    const rd_kafka_metadata_t* md = nullptr;
    rd_kafka_resp_err_t e = rd_kafka_metadata(producer_, 1, nullptr, &md, 5000);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
      return Status(ErrorCode::kUnavailable, std::string("kafka metadata: ") + rd_kafka_err2str(e));
    }
    std::map<std::string, int> existing;
    for (int i = 0; i < md->topic_cnt; ++i) {
      if (md->topics[i].err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        existing[md->topics[i].topic] = md->topics[i].partition_cnt;
      }
    }
    rd_kafka_metadata_destroy(md);
    std::map<std::string, int> missing;  // topic -> partitions to create it with
    for (const auto& [container, topic] : topics_) {
      if (existing.count(topic) == 0) missing[topic] = options_.partitions;
    }
    if (options_.heartbeat_interval_ms > 0 && existing.count(HeartbeatTopic(options_)) == 0) {
      missing[HeartbeatTopic(options_)] = 1;
    }
    if (!missing.empty()) {
      if (!options_.create_topics) {
        return Status(ErrorCode::kUnavailable, "topic " + missing.begin()->first +
                                                   " does not exist and kafka.create_topics is "
                                                   "false; create it or allow creation");
      }
      if (Status s = CreateTopics(missing); !s.ok()) return s;
      return Status(ErrorCode::kUnavailable, "created topics; reading their metadata");
    }
    for (const auto& [container, topic] : topics_) (*counts)[topic] = existing[topic];
    return Status::Ok();
  }

  Status CreateTopics(const std::map<std::string, int>& partitions) {
    char err[512];
    std::vector<rd_kafka_NewTopic_t*> topics;
    for (const auto& [name, count] : partitions) {
      rd_kafka_NewTopic_t* topic =
          rd_kafka_NewTopic_new(name.c_str(), count, options_.replication_factor, err, sizeof(err));
      if (topic == nullptr) {  // arguments librdkafka refuses (the options' ranges exclude them)
        for (auto* t : topics) rd_kafka_NewTopic_destroy(t);
        return Status(ErrorCode::kInvalidRequest, "cannot create topic " + name + ": " + err);
      }
      topics.push_back(topic);
    }
    rd_kafka_queue_t* queue = rd_kafka_queue_new(producer_);
    rd_kafka_CreateTopics(producer_, topics.data(), topics.size(), nullptr, queue);
    rd_kafka_event_t* ev = rd_kafka_queue_poll(queue, 10000);
    Status status;
    if (ev == nullptr) {
      status = Status(ErrorCode::kUnavailable, "timed out creating topics");
    } else {
      const rd_kafka_CreateTopics_result_t* res = rd_kafka_event_CreateTopics_result(ev);
      size_t n = 0;
      const rd_kafka_topic_result_t** results =
          res ? rd_kafka_CreateTopics_result_topics(res, &n) : nullptr;
      if (res == nullptr) {
        status = Status(ErrorCode::kUnavailable,
                        std::string("create topics: ") + rd_kafka_event_error_string(ev));
      }
      for (size_t i = 0; i < n; ++i) {
        rd_kafka_resp_err_t te = rd_kafka_topic_result_error(results[i]);
        if (te == RD_KAFKA_RESP_ERR_NO_ERROR) {
          const std::string name = rd_kafka_topic_result_name(results[i]);
          const auto count = partitions.find(name);
          FEEDD_LOG(kInfo, "kafka")
              << "created topic " << name << " (" << (count != partitions.end() ? count->second : 0)
              << " partitions)";
        } else if (te != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
          status =
              Status(ErrorCode::kUnavailable, std::string("cannot create topic ") +
                                                  rd_kafka_topic_result_name(results[i]) + ": " +
                                                  rd_kafka_topic_result_error_string(results[i]));
        }
      }
      rd_kafka_event_destroy(ev);
    }
    rd_kafka_queue_destroy(queue);
    for (auto* t : topics) rd_kafka_NewTopic_destroy(t);
    return status;
  }

  void Pump() {
    if (rewind_) {
      Rewind();
      return;
    }
    bool produced_any = false;
    while (!rewind_ && inflight_messages_.load() < options_.max_inflight_messages &&
           inflight_bytes_.load() < options_.max_inflight_bytes && !Stopping()) {
      // Where a rewind or a republish moved next_, the tail follows (a seek
      // to where it is changes nothing).
      tail_->Seek(next_);
      std::vector<SharedChangeRecord> records;
      Status s = tail_->Next(
          std::min(kReadBatch, options_.max_inflight_messages - inflight_messages_.load()),
          &records);
      if (!s.ok()) {
        // Cannot happen while the watermark holds; never skip silently.
        SetError("reading the change feed at LSN " + std::to_string(next_) + ": " + s.ToString());
        SetState("error");
        Sleep(std::chrono::seconds(1));
        return;
      }
      if (records.empty()) break;
      for (const SharedChangeRecord& record : records) {
        Produce(*record);
        produced_any = true;
      }
      next_ = records.back()->lsn + 1;
    }
    // In flight: wait for delivery reports (a report ends the wait), and
    // let the commits meanwhile gather into the next round.
    const bool in_flight = produced_any || inflight_messages_.load() > 0;
    rd_kafka_poll(producer_, in_flight ? static_cast<int>(poll_interval_.count()) : 0);
    AdvanceCheckpoint();
    AckStore(false);
    SendResolvedMarkers();
    SendHeartbeat();
    if (inflight_messages_.load() == 0 && next_ > store_->HeadLsn()) WaitForChanges();
  }

  void Produce(const ChangeRecord& record) {
    KafkaMessage message = EncodeChange(options_, record);
    if (reference_only_.count(record.lsn) != 0) {
      KafkaOptions tiny = options_;
      tiny.max_envelope_bytes = 0;
      message = EncodeChange(tiny, record);
    }
    if (message.decode_error) {
      ++envelopes_undecodable_;
      FEEDD_LOG(kError, "kafka") << "LSN " << record.lsn << " (" << record.container << "/"
                                 << record.id << "): the stored envelope does not parse ("
                                 << *message.decode_error << "); sent as a reference (no images)";
    } else if (message.size_class != EnvelopeSize::kFull) {
      ++envelopes_shrunk_;
      FEEDD_LOG(kWarning, "kafka")
          << "LSN " << record.lsn << " (" << record.container << "/" << record.id
          << ") is too large for Kafka; sent "
          << (message.size_class == EnvelopeSize::kBeforeOmitted ? "without its before-image"
                                                                 : "as a reference (no images)");
    }
    inflight_.Add(record.lsn).ts_ms = record.ts_ms;
    if (oldest_unpublished_ts_.load() == 0) oldest_unpublished_ts_ = record.ts_ms;

    if (already_in_kafka_.count(record.lsn) != 0) {
      ++duplicates_skipped_;  // delivered by an earlier run or before a rewind
      return;
    }
    SendMessage(message, record);
    if (record.op == ChangeOp::kDelete && options_.tombstones) {
      SendMessage(EncodeTombstone(options_, record), record);
    }
  }

  void SendMessage(const KafkaMessage& message, const ChangeRecord& record) {
    const std::string lsn = std::to_string(record.lsn);
    const std::string_view op = ChangeOpName(record.op);
    const size_t len = message.value ? message.value->size() : 0;
    void* payload = message.value ? const_cast<char*>(message.value->data()) : nullptr;
    // Chosen here, not from the message key: all changes of a partition key
    // share one Kafka partition (and its order) whatever kafka.message_key is.
    const int32_t partition =
        KafkaPartitionOf(record.partition_key, partition_counts_.at(message.topic));
    for (;;) {
      rd_kafka_resp_err_t e = rd_kafka_producev(
          producer_, RD_KAFKA_V_TOPIC(message.topic.c_str()), RD_KAFKA_V_PARTITION(partition),
          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
          RD_KAFKA_V_KEY(message.key.data(), message.key.size()), RD_KAFKA_V_VALUE(payload, len),
          RD_KAFKA_V_HEADER("feedd-lsn", lsn.data(), static_cast<ssize_t>(lsn.size())),
          RD_KAFKA_V_HEADER("feedd-op", op.data(), static_cast<ssize_t>(op.size())),
          RD_KAFKA_V_HEADER("feedd-container", record.container.data(),
                            static_cast<ssize_t>(record.container.size())),
          RD_KAFKA_V_HEADER("feedd-id", record.id.data(), static_cast<ssize_t>(record.id.size())),
          RD_KAFKA_V_HEADER("feedd-partition-key", record.partition_key.data(),
                            static_cast<ssize_t>(record.partition_key.size())),
          RD_KAFKA_V_OPAQUE(LsnOpaque(record.lsn)), RD_KAFKA_V_END);
      if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
        rd_kafka_poll(producer_, 10);
        continue;
      }
      if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
        // Not queued (e.g. a fatal producer state): treat like a failed delivery.
        ++delivery_errors_;
        SetError(std::string("produce of LSN ") + lsn + ": " + rd_kafka_err2str(e));
        InFlightEntry(record.lsn).failed = true;
        rewind_ = true;
        return;
      }
      break;
    }
    ++produced_;
    ++InFlightEntry(record.lsn).remaining;
    ++inflight_messages_;
    inflight_bytes_ += len;
  }

  // ---- resolved markers (docs/kafka.md, "Resolved markers") ----
  // Every resolved_interval_ms, when the persisted checkpoint moved since
  // the last round: a marker with it to every partition of every topic. The
  // checkpoint only counts delivered changes, and it is persisted first, so
  // a marker is never ahead of the broker, and a restarted publisher (which
  // starts at the persisted checkpoint) never sends a lower one.
  void SendResolvedMarkers() {
    if (options_.resolved_interval_ms == 0 || acked_to_store_ <= resolved_sent_) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_resolved_round_ < std::chrono::milliseconds(options_.resolved_interval_ms)) {
      return;
    }
    const Lsn resolved = acked_to_store_;
    const std::string header = std::to_string(resolved);
    int sent = 0;
    for (const auto& [container, topic] : topics_) {
      const KafkaMessage marker = EncodeResolvedMarker(options_, container, resolved);
      const auto count = partition_counts_.find(topic);
      if (count == partition_counts_.end()) continue;
      for (int32_t partition = 0; partition < count->second; ++partition) {
        rd_kafka_resp_err_t e = rd_kafka_producev(
            producer_, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_PARTITION(partition),
            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
            RD_KAFKA_V_KEY(marker.key.data(), marker.key.size()),
            RD_KAFKA_V_VALUE(const_cast<char*>(marker.value->data()), marker.value->size()),
            RD_KAFKA_V_HEADER(kResolvedHeader, header.data(), static_cast<ssize_t>(header.size())),
            RD_KAFKA_V_HEADER("feedd-container", container.data(),
                              static_cast<ssize_t>(container.size())),
            RD_KAFKA_V_OPAQUE(MarkerOpaque(resolved)), RD_KAFKA_V_END);
        if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
          // The next round covers this partition; markers stay monotonic.
          SetError("resolved marker " + header + " to " + topic + "/" + std::to_string(partition) +
                   ": " + rd_kafka_err2str(e));
          continue;
        }
        ++sent;
        ++inflight_messages_;
        inflight_bytes_ += marker.value->size();
      }
    }
    if (sent > 0) marker_rounds_[resolved].remaining += sent;
    resolved_sent_ = resolved;
    last_resolved_round_ = now;
  }

  void OnMarkerDelivery(const rd_kafka_message_t* m) {
    const Lsn resolved = OpaqueLsn(m->_private);
    --inflight_messages_;
    inflight_bytes_ -= m->len;
    auto round = marker_rounds_.find(resolved);
    if (round == marker_rounds_.end()) return;
    if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      // Not a change: nothing to rewind; the next round carries a higher LSN.
      ++delivery_errors_;
      SetError("delivery of the resolved marker " + std::to_string(resolved) + " to " +
               rd_kafka_topic_name(m->rkt) + "/" + std::to_string(m->partition) +
               " failed: " + rd_kafka_err2str(m->err));
      round->second.failed = true;
    } else {
      ++resolved_markers_;
    }
    if (--round->second.remaining > 0) return;
    if (!round->second.failed) resolved_lsn_ = std::max(resolved_lsn_.load(), resolved);
    marker_rounds_.erase(round);
  }

  // ---- heartbeats (docs/kafka.md, "Heartbeats") ----
  // Every heartbeat_interval_ms, written or not; at most one in flight, so a
  // broker outage queues one, not one per interval.
  void SendHeartbeat() {
    if (options_.heartbeat_interval_ms == 0 || heartbeat_in_flight_) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_heartbeat_ < std::chrono::milliseconds(options_.heartbeat_interval_ms)) return;
    last_heartbeat_ = now;
    const KafkaMessage heartbeat =
        EncodeHeartbeat(options_, Clock::System()->NowMillis(), acked_to_store_);
    rd_kafka_resp_err_t e = rd_kafka_producev(
        producer_, RD_KAFKA_V_TOPIC(heartbeat.topic.c_str()), RD_KAFKA_V_PARTITION(0),
        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
        RD_KAFKA_V_KEY(heartbeat.key.data(), heartbeat.key.size()),
        RD_KAFKA_V_VALUE(const_cast<char*>(heartbeat.value->data()), heartbeat.value->size()),
        RD_KAFKA_V_OPAQUE(kHeartbeatOpaque), RD_KAFKA_V_END);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
      SetError("heartbeat to " + heartbeat.topic + ": " + rd_kafka_err2str(e));
      return;
    }
    heartbeat_in_flight_ = true;
    ++inflight_messages_;
    inflight_bytes_ += heartbeat.value->size();
  }

  void OnHeartbeatDelivery(const rd_kafka_message_t* m) {
    heartbeat_in_flight_ = false;
    --inflight_messages_;
    inflight_bytes_ -= m->len;
    if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      ++delivery_errors_;
      SetError(std::string("delivery of a heartbeat failed: ") + rd_kafka_err2str(m->err));
      return;
    }
    ++heartbeats_;
  }

  // The in-flight entry of a change being produced (Produce() added it).
  InFlightWindow::Entry& InFlightEntry(Lsn lsn) {
    InFlightWindow::Entry* entry = inflight_.Find(lsn);
    return entry != nullptr ? *entry : inflight_.Add(lsn);
  }

  // Moves the checkpoint over every fully delivered change.
  void AdvanceCheckpoint() {
    while (!inflight_.empty()) {
      const InFlightWindow::Entry& first = inflight_.front();
      if (first.remaining > 0 || first.failed) break;
      published_ = first.lsn;
      if (!reference_only_.empty()) reference_only_.erase(first.lsn);
      if (!already_in_kafka_.empty()) already_in_kafka_.erase(first.lsn);
      inflight_.PopFront();
    }
    oldest_unpublished_ts_ = inflight_.empty() ? 0 : inflight_.front().ts_ms;
    published_snapshot_ = published_;
  }

  void AckStore(bool force) {
    auto now = std::chrono::steady_clock::now();
    if (published_ == acked_to_store_ || (!force && now - last_ack_ < kAckInterval)) return;
    Status s = store_->AckConsumer(kConsumerName, published_);
    if (!s.ok()) {
      SetError("recording the publisher checkpoint: " + s.ToString());
      return;
    }
    acked_to_store_ = published_;
    last_ack_ = now;
  }

  // After a failed delivery: wait for every report, then produce again from
  // the checkpoint, skipping the changes that did arrive.
  void Rewind() {
    if (inflight_messages_.load() > 0) {
      rd_kafka_poll(producer_, 10);
      return;
    }
    AdvanceCheckpoint();
    FEEDD_LOG(kWarning, "kafka") << "rewinding to LSN " << published_ + 1
                                 << " after a failed delivery";
    for (const InFlightWindow::Entry& entry : inflight_) {
      if (!entry.failed && entry.remaining == 0) already_in_kafka_.insert(entry.lsn);
    }
    inflight_.Clear();
    if (fatal_) {
      DestroyProducer();
      Status s = CreateProducer();
      if (!s.ok()) {
        SetError(s.message());
        Sleep(std::chrono::seconds(1));
        return;
      }
      prepared_ = false;
      fatal_ = false;
    }
    next_ = published_ + 1;
    rewind_ = false;
    Sleep(std::chrono::milliseconds(500));
  }

  void WaitForChanges() {
    // Not under wake_mutex_: when the head is already there, the callback
    // runs right here and takes that mutex.
    uint64_t token = store_->OnHeadReached(next_, [this] {
      {
        std::lock_guard<std::mutex> l(wake_mutex_);
        head_moved_ = true;
      }
      wake_.notify_all();
    });
    {
      std::unique_lock<std::mutex> lock(wake_mutex_);
      wake_.wait_for(lock, std::chrono::milliseconds(100),
                     [this] { return head_moved_ || stopping_; });
      head_moved_ = false;
    }
    store_->CancelHeadWatch(token);
  }

  bool Stopping() {
    std::lock_guard<std::mutex> lock(wake_mutex_);
    return stopping_;
  }

  void Sleep(std::chrono::milliseconds d) {
    std::unique_lock<std::mutex> lock(wake_mutex_);
    wake_.wait_for(lock, d, [this] { return stopping_; });
  }

  void SetState(const std::string& state) {
    std::lock_guard<std::mutex> lock(status_mutex_);
    state_ = state;
  }

  void SetError(const std::string& error) {
    FEEDD_LOG(kWarning, "kafka") << error;
    std::lock_guard<std::mutex> lock(status_mutex_);
    last_error_ = error;
  }

  DocumentStore* const store_;
  const KafkaOptions options_;
  const std::string bootstrap_;
  const bool embedded_;
  std::map<std::string, std::string> topics_;  // container -> topic

  // Publisher-thread state.
  rd_kafka_t* producer_ = nullptr;
  std::chrono::milliseconds poll_interval_{1};  // PublisherPollInterval() of producer_'s
  std::set<Lsn> already_in_kafka_;              // beyond the checkpoint, known delivered
  InFlightWindow inflight_;
  std::set<Lsn> reference_only_;                 // rejected as too large by the broker
  std::map<std::string, int> partition_counts_;  // topic -> partitions, read by Prepare()
  Lsn resolved_sent_ = 0;                        // the last marker round produced
  std::chrono::steady_clock::time_point last_resolved_round_;
  std::map<Lsn, MarkerRound> marker_rounds_;  // by the LSN they vouch for
  bool heartbeat_in_flight_ = false;
  std::chrono::steady_clock::time_point last_heartbeat_;
  bool prepared_ = false;
  bool rewind_ = false;
  bool fatal_ = false;
  Lsn next_ = 1;
  // The feed as the commit thread hands it over, read from the durable
  // feed where it was not (start-up, a rewind, an overflow).
  std::unique_ptr<CommitTail> tail_;
  Lsn published_ = 0;
  Lsn acked_to_store_ = 0;
  std::chrono::steady_clock::time_point last_ack_;
  std::chrono::milliseconds flush_timeout_{5000};
  std::thread thread_;

  std::mutex wake_mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool head_moved_ = false;

  // Shared with GetStatus().
  mutable std::mutex status_mutex_;
  std::string state_ = "connecting";
  std::string last_error_;
  std::atomic<bool> connected_{false};
  std::atomic<Lsn> published_snapshot_{0};
  std::atomic<uint64_t> oldest_unpublished_ts_{0};
  std::atomic<uint64_t> fatal_errors_{0};
  std::atomic<uint64_t> produced_{0}, delivered_{0}, delivery_errors_{0}, duplicates_skipped_{0},
      envelopes_shrunk_{0}, envelopes_undecodable_{0}, inflight_messages_{0}, inflight_bytes_{0},
      resolved_markers_{0}, heartbeats_{0};
  std::atomic<Lsn> resolved_lsn_{0};
};

Publisher::Publisher(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Publisher::~Publisher() { Stop(); }

Result<std::unique_ptr<Publisher>> Publisher::Start(DocumentStore* store, KafkaOptions options,
                                                    std::string bootstrap, bool embedded) {
  auto impl = std::make_unique<Impl>(store, std::move(options), std::move(bootstrap), embedded);
  if (Status s = impl->Start(); !s.ok()) return s;
  return std::unique_ptr<Publisher>(new Publisher(std::move(impl)));
}

void Publisher::Stop(std::chrono::milliseconds flush_timeout) { impl_->Stop(flush_timeout); }
PublisherStatus Publisher::GetStatus() const { return impl_->GetStatus(); }
std::map<std::string, std::string> Publisher::Topics() const { return impl_->Topics(); }

}  // namespace feedd
