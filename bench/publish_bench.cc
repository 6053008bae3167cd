// publish_bench: feedd's Kafka publisher against librdkafka producing the
// same messages directly, to the same embedded (mock) broker, read by the
// same consumer, in one run.
//
//   feedd  : DocumentStore (sync=false, fresh temp dir) + EmbeddedBroker +
//            Publisher (default KafkaOptions: idempotent, acks=all, lz4,
//            linger.ms=1). One writer thread does parse + PrepareItem +
//            DocumentStore::Write() of one kUpsert (a create) into `posts`.
//   direct : the same EmbeddedBroker, one librdkafka producer with the
//            publisher's producer settings, producing messages of the same
//            size (an envelope built like feedd's around the same item),
//            same key and the same four feedd-* headers.
//   Both   : one librdkafka consumer (fetch.wait.max.ms=1, assigned to every
//            partition of feedd.posts from the beginning) stamps each message
//            with steady_clock on receipt.
//
// Phases per side and run (after a 200-message warm-up the consumer must
// have received):
//   steady : --rate R changes/s for --seconds D (open loop, fixed schedule).
//            latency = consumer receipt - the moment the change was
//            committed (feedd: Write() returned, i.e. the writer's ack) or
//            handed to the producer (direct: just before producev()).
//   backlog: --burst N changes. feedd: the publisher is stopped, the N
//            changes are committed (transactional batches of 100 on one
//            partition key), then a new Publisher starts over the backlog
//            (as after a restart or an outage). direct: producev() of the N
//            messages in a loop. throughput = (N-1) / (last receipt - first
//            receipt), the sustained drain rate; the time from the
//            publisher's start (direct: the first producev) to the first
//            receipt is printed separately (feedd: it includes reading the
//            partition tails for duplicates).
// Runs alternate which side goes first; the summary gives the median over
// runs of each figure, the ratios feedd/direct and the exact command line.
// Exit code 1 when a message is missing (or duplicated) at the consumer.
//
// Usage: publish_bench [--rate 5000] [--seconds 5] [--burst 100000] [--runs 3]
//                      [--item-bytes 512] [--dir /tmp] [--wait-idle 10]
#include <librdkafka/rdkafka.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/json.hpp>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench/machine_load.h"
#include "bench/median.h"
#include "feed/embedded_broker.h"
#include "feed/kafka_options.h"
#include "feed/publisher.h"
#include "storage/document_store.h"
#include "storage/prepared_item.h"
#include "storage/write_request.h"
#include "tests/blog_scenario.h"
#include "util/logging.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* kContainer = "posts";
constexpr const char* kTopic = "feedd.posts";
constexpr int kPartitions = 3;
constexpr uint64_t kWarmup = 200;
constexpr uint64_t kBurstBatch = 100;  // changes per feedd WriteRequest in the burst

struct Flags {
  double rate = 5000;
  double seconds = 5;
  uint64_t burst = 100000;
  int runs = 3;
  size_t item_bytes = 512;
  std::string dir = "/tmp";
  double wait_idle = 10;
};

[[noreturn]] void Usage(const char* why) {
  std::fprintf(stderr,
               "publish_bench: %s\n"
               "usage: publish_bench [--rate CHANGES_PER_S] [--seconds S] [--burst N] [--runs N]\n"
               "                     [--item-bytes N] [--dir DIR] [--wait-idle SECONDS]\n",
               why);
  std::exit(2);
}

Flags ParseFlags(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    if (arg == "--help" || arg == "-h") Usage("help");
    auto eq = arg.find('=');
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    } else {
      if (i + 1 >= argc) Usage(("missing value for " + arg).c_str());
      value = argv[++i];
    }
    try {
      if (arg == "--rate") {
        f.rate = std::stod(value);
      } else if (arg == "--seconds") {
        f.seconds = std::stod(value);
      } else if (arg == "--burst") {
        f.burst = std::stoull(value);
      } else if (arg == "--runs") {
        f.runs = std::stoi(value);
      } else if (arg == "--item-bytes") {
        f.item_bytes = std::stoul(value);
      } else if (arg == "--dir") {
        f.dir = value;
      } else if (arg == "--wait-idle") {
        f.wait_idle = std::stod(value);
      } else {
        Usage(("unknown flag " + arg).c_str());
      }
    } catch (const std::exception&) {
      Usage(("bad value for " + arg + ": " + value).c_str());
    }
  }
  if (f.rate <= 0 || f.seconds <= 0 || f.runs < 1 || f.item_bytes < 100) {
    Usage("--rate and --seconds must be > 0, --runs >= 1, --item-bytes >= 100");
  }
  return f;
}

std::string ShellQuote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                        "0123456789-_./=:,+") == std::string::npos) {
    return s;
  }
  std::string out = "'";
  for (char c : s) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

std::string CommandLine(int argc, char** argv) {
  std::string out;
  for (int i = 0; i < argc; ++i) {
    if (i) out += ' ';
    out += ShellQuote(argv[i]);
  }
  return out;
}

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

uint64_t WallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

using feedd::bench::CpuTimes;
using feedd::bench::Median;
using feedd::bench::ReadCpuTimes;
using feedd::bench::WaitForIdle;

// ---- the items and messages both sides send ----
//
// Change `seq` (1-based) is item {"id":"s<seq>","postId":<pk>,
// "userId":"u<seq%97>","type":"post","body":"<letters>"} of --item-bytes
// bytes. pk is "p<seq%1000>" in the steady phase; in the burst, 100
// consecutive changes share "b<seq/100%1000>" so feedd can commit them as one
// transactional batch. Either way keys spread over the topic's partitions.
class ItemMaker {
 public:
  explicit ItemMaker(size_t bytes) : bytes_(bytes), rng_(42) {
    filler_.resize(bytes * 4 + 64);
    for (auto& c : filler_) c = static_cast<char>('a' + rng_() % 26);
  }

  std::string Make(uint64_t seq, std::string* pk, std::string* id, bool burst = false) const {
    *id = "s" + std::to_string(seq);
    *pk = burst ? "b" + std::to_string(seq / kBurstBatch % 1000) : "p" + std::to_string(seq % 1000);
    std::string out = "{\"id\":\"" + *id + "\",\"postId\":\"" + *pk + "\",\"userId\":\"u" +
                      std::to_string(seq % 97) + "\",\"type\":\"post\",\"body\":\"";
    size_t room = bytes_ > out.size() + 2 ? bytes_ - out.size() - 2 : 1;
    out.append(filler_, (seq * 7919) % (filler_.size() - room), room);
    out += "\"}";
    return out;
  }

 private:
  const size_t bytes_;
  mutable std::mt19937_64 rng_;
  std::string filler_;
};

// The change envelope feedd stores for a create of `item` at `lsn` (same
// fields and layout: system properties appended to the item).
std::string EnvelopeLike(const std::string& item, uint64_t lsn, const std::string& pk,
                         const std::string& id, uint64_t ts) {
  std::string after = item.substr(0, item.size() - 1) + ",\"_etag\":\"\\\"" + std::to_string(lsn) +
                      "\\\"\",\"_lsn\":" + std::to_string(lsn) + ",\"_ts\":" + std::to_string(ts) +
                      "}";
  return "{\"lsn\":" + std::to_string(lsn) +
         ",\"op\":\"create\",\"container\":\"posts\",\"partitionKey\":\"" + pk + "\",\"id\":\"" +
         id + "\",\"ts\":" + std::to_string(ts) + ",\"before\":null,\"after\":" + after + "}";
}

// ---- consumer: stamps every message of feedd.posts with its receipt time ----
class StampingConsumer {
 public:
  StampingConsumer(const std::string& bootstrap, size_t capacity)
      : recv_(new std::atomic<int64_t>[capacity]), capacity_(capacity) {
    for (size_t i = 0; i < capacity; ++i) recv_[i].store(0, std::memory_order_relaxed);
    char err[512];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    auto set = [&](const char* k, const std::string& v) {
      if (rd_kafka_conf_set(conf, k, v.c_str(), err, sizeof(err)) != RD_KAFKA_CONF_OK) {
        std::fprintf(stderr, "consumer %s: %s\n", k, err);
        std::exit(1);
      }
    };
    set("bootstrap.servers", bootstrap);
    set("group.id", "publish-bench-" + std::to_string(getpid()) + "-" + std::to_string(NowNs()));
    set("enable.auto.commit", "false");
    set("fetch.wait.max.ms", "1");
    set("auto.offset.reset", "earliest");
    set("log_level", "3");
    rk_ = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
    if (rk_ == nullptr) {
      std::fprintf(stderr, "consumer: %s\n", err);
      std::exit(1);
    }
    rd_kafka_topic_partition_list_t* parts = rd_kafka_topic_partition_list_new(kPartitions);
    for (int p = 0; p < kPartitions; ++p) {
      rd_kafka_topic_partition_list_add(parts, kTopic, p)->offset = RD_KAFKA_OFFSET_BEGINNING;
    }
    rd_kafka_assign(rk_, parts);
    rd_kafka_topic_partition_list_destroy(parts);
    thread_ = std::thread([this] { Loop(); });
  }

  ~StampingConsumer() {
    stop_ = true;
    thread_.join();
    rd_kafka_consumer_close(rk_);
    rd_kafka_destroy(rk_);
  }

  uint64_t received() const { return received_.load(); }
  uint64_t duplicates() const { return duplicates_.load(); }
  uint64_t errors() const { return errors_.load(); }
  uint64_t value_bytes() const { return value_bytes_.load(); }
  int64_t recv_ns(uint64_t seq) const { return recv_[seq].load(std::memory_order_acquire); }

  // Waits until `n` messages arrived; false on timeout.
  bool WaitFor(uint64_t n, std::chrono::seconds timeout) const {
    auto deadline = Clock::now() + timeout;
    while (received() < n) {
      if (Clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
  }

 private:
  void Loop() {
    while (!stop_) {
      rd_kafka_message_t* m = rd_kafka_consumer_poll(rk_, 10);
      if (m == nullptr) continue;
      const int64_t now = NowNs();
      if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        ++errors_;
        std::fprintf(stderr, "  consumer: %s\n", rd_kafka_message_errstr(m));
      } else {
        rd_kafka_headers_t* hdrs = nullptr;
        const void* v = nullptr;
        size_t size = 0;
        uint64_t seq = 0;
        bool marker = false;  // a resolved marker (docs/kafka.md): not a change
        if (rd_kafka_message_headers(m, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR) {
          marker = rd_kafka_header_get_last(hdrs, "feedd-resolved", &v, &size) ==
                   RD_KAFKA_RESP_ERR_NO_ERROR;
          if (rd_kafka_header_get_last(hdrs, "feedd-lsn", &v, &size) ==
              RD_KAFKA_RESP_ERR_NO_ERROR) {
            const char* text = static_cast<const char*>(v);
            std::from_chars(text, text + size, seq);
          }
        }
        if (marker) {
          // skipped: the bench times changes only
        } else if (seq == 0 || seq >= capacity_) {
          ++errors_;
        } else {
          int64_t expected = 0;
          if (recv_[seq].compare_exchange_strong(expected, now, std::memory_order_release)) {
            value_bytes_ += m->len;
            ++received_;
          } else {
            ++duplicates_;
          }
        }
      }
      rd_kafka_message_destroy(m);
    }
  }

  rd_kafka_t* rk_ = nullptr;
  std::unique_ptr<std::atomic<int64_t>[]> recv_;
  const size_t capacity_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> received_{0}, duplicates_{0}, errors_{0}, value_bytes_{0};
  std::thread thread_;
};

// ---- one side's measurement ----
struct Sample {
  uint64_t steady_expected = 0, steady_received = 0;
  double steady_seconds = 0;  // first write to last receipt
  double p50_ms = 0, p99_ms = 0, max_ms = 0;
  double write_lag_ms = 0;  // how far the writer fell behind its schedule, at most
  uint64_t burst = 0;
  double burst_rate = 0;        // changes/s, first -> last receipt
  double burst_first_ms = 0;    // publisher start (direct: first producev) -> first receipt
  double burst_write_rate = 0;  // the writer alone
  double avg_value_bytes = 0;
  double cpu = 0, bg = 0;  // cores during the steady phase
  uint64_t missing = 0, duplicates = 0, errors = 0;
  double steady_rate() const { return steady_seconds > 0 ? steady_received / steady_seconds : 0; }
};

// What a side provides: write change `seq` now (returns when committed /
// handed to the producer) and the sequence number the consumer will see.
struct Side {
  std::string bootstrap;
  // Writes change number `n` (1-based in this side's order); returns the
  // consumer-visible sequence (feedd: the LSN) and stamps *commit_ns.
  std::function<uint64_t(uint64_t n, int64_t* commit_ns)> write;
  // The burst: changes first..first+count-1 (count <= kBurstBatch, one
  // partition key), as fast as possible; appends their sequences.
  std::function<void(uint64_t first, uint64_t count, std::vector<uint64_t>* seqs)> write_burst;
  // Around the burst's writes (feedd: stop the publisher, then start a new
  // one over the backlog; direct: nothing).
  std::function<void()> pause = [] {};
  std::function<void()> resume = [] {};
  bool pauses = false;
};

double Pct(std::vector<int64_t>& v, double q) {
  if (v.empty()) return 0;
  size_t k = static_cast<size_t>(q * (v.size() - 1));
  std::nth_element(v.begin(), v.begin() + k, v.end());
  return v[k] / 1e6;
}

Sample Measure(const Flags& flags, Side& side) {
  Sample s;
  const uint64_t steady = static_cast<uint64_t>(flags.rate * flags.seconds);
  const uint64_t total = kWarmup + steady + flags.burst;
  std::vector<int64_t> commit(total + 2, 0);
  StampingConsumer consumer(side.bootstrap, total + 2);

  // Warm-up: the consumer has joined and fetched before anything is timed.
  for (uint64_t n = 1; n <= kWarmup; ++n) side.write(n, &commit[0]);
  if (!consumer.WaitFor(kWarmup, std::chrono::seconds(30))) {
    std::fprintf(stderr, "  warm-up: only %llu of %llu messages arrived\n",
                 static_cast<unsigned long long>(consumer.received()),
                 static_cast<unsigned long long>(kWarmup));
    s.missing = kWarmup - consumer.received();
    return s;
  }
  WaitForIdle(flags.wait_idle);

  // Steady: open loop at the flag's rate.
  std::vector<uint64_t> seqs;
  seqs.reserve(steady);
  const CpuTimes cpu0 = ReadCpuTimes();
  const auto t0 = Clock::now();
  const int64_t t0_ns = NowNs();
  int64_t worst_behind = 0;
  for (uint64_t i = 0; i < steady; ++i) {
    const auto due = t0 + std::chrono::nanoseconds(static_cast<int64_t>(i * 1e9 / flags.rate));
    const auto now = Clock::now();
    if (now < due) {
      std::this_thread::sleep_until(due);
    } else {
      worst_behind = std::max<int64_t>(worst_behind, (now - due).count());
    }
    int64_t at = 0;
    uint64_t seq = side.write(kWarmup + 1 + i, &at);
    commit[seq] = at;
    seqs.push_back(seq);
  }
  const bool all = consumer.WaitFor(kWarmup + steady, std::chrono::seconds(60));
  const CpuTimes cpu1 = ReadCpuTimes();
  const double wall = (NowNs() - t0_ns) / 1e9;
  s.cpu = (cpu1.self - cpu0.self) / wall;
  // /proc/stat and getrusage tick differently: small negatives mean ~0.
  s.bg = std::max(0.0, ((cpu1.machine - cpu0.machine) - (cpu1.self - cpu0.self)) / wall);
  s.write_lag_ms = worst_behind / 1e6;
  s.steady_expected = steady;
  std::vector<int64_t> lat;
  lat.reserve(steady);
  int64_t last = t0_ns;
  for (uint64_t seq : seqs) {
    int64_t r = consumer.recv_ns(seq);
    if (r == 0) continue;
    lat.push_back(std::max<int64_t>(0, r - commit[seq]));
    last = std::max(last, r);
  }
  s.steady_received = lat.size();
  s.steady_seconds = (last - t0_ns) / 1e9;
  if (!lat.empty()) {
    s.max_ms = *std::max_element(lat.begin(), lat.end()) / 1e6;
    s.p99_ms = Pct(lat, 0.99);
    s.p50_ms = Pct(lat, 0.50);
  }
  if (!all) s.missing += steady - s.steady_received;

  // Burst: as fast as one writer goes.
  if (flags.burst > 0 && all) {
    seqs.clear();
    side.pause();
    const int64_t b0 = NowNs();
    const uint64_t first = kWarmup + steady + 1;
    for (uint64_t n = first; n < first + flags.burst;) {
      // Batches never straddle a key change (n / kBurstBatch constant).
      uint64_t count = std::min(kBurstBatch - n % kBurstBatch, first + flags.burst - n);
      side.write_burst(n, count, &seqs);
      n += count;
    }
    const int64_t written = NowNs();
    side.resume();
    const int64_t resumed = NowNs();
    const bool got = consumer.WaitFor(total, std::chrono::seconds(120));
    int64_t first_recv = INT64_MAX, last_recv = 0;
    uint64_t n = 0;
    for (uint64_t seq : seqs) {
      int64_t r = consumer.recv_ns(seq);
      if (r == 0) continue;
      ++n;
      first_recv = std::min(first_recv, r);
      last_recv = std::max(last_recv, r);
    }
    s.burst = n;
    s.burst_rate = last_recv > first_recv ? (n - 1) / ((last_recv - first_recv) / 1e9) : 0;
    s.burst_first_ms = n ? (first_recv - (side.pauses ? resumed : b0)) / 1e6 : 0;
    s.burst_write_rate = written > b0 ? flags.burst / ((written - b0) / 1e9) : 0;
    if (!got) s.missing += flags.burst - n;
  }
  // Anything late or doubled shows up now.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  s.duplicates = consumer.duplicates();
  s.errors = consumer.errors();
  s.avg_value_bytes =
      consumer.received() ? double(consumer.value_bytes()) / consumer.received() : 0;
  return s;
}

std::string FreshDir(const std::string& parent) {
  std::string pattern = parent + "/publish_bench.XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) {
    std::perror(("mkdtemp " + pattern).c_str());
    std::exit(1);
  }
  return buf.data();
}

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "publish_bench: %s\n", what.c_str());
  std::exit(1);
}

std::unique_ptr<feedd::EmbeddedBroker> StartBroker() {
  auto broker = feedd::EmbeddedBroker::Start();
  if (!broker.ok()) Die("embedded broker: " + broker.status().ToString());
  for (const char* t : {"feedd.users", "feedd.posts", "feedd.feed"}) {
    if (auto st = (*broker)->CreateTopic(t, kPartitions); !st.ok()) Die(st.ToString());
  }
  return std::move(*broker);
}

Sample RunFeedd(const Flags& flags, const ItemMaker& items) {
  const std::string dir = FreshDir(flags.dir);
  feedd::StoreOptions options;
  options.data_dir = dir;
  options.containers = feedd::BlogContainers();
  options.sync = false;
  auto opened = feedd::DocumentStore::Open(options);
  if (!opened.ok()) Die("open store: " + opened.status().ToString());
  std::unique_ptr<feedd::DocumentStore> store = std::move(*opened);
  auto broker = StartBroker();
  auto started = feedd::Publisher::Start(store.get(), feedd::KafkaOptions{}, broker->bootstrap(),
                                         /*embedded=*/true);
  if (!started.ok()) Die("publisher: " + started.status().ToString());
  std::unique_ptr<feedd::Publisher> publisher = std::move(*started);
  const feedd::ContainerSpec* spec = store->FindContainer(kContainer);

  Side side;
  side.bootstrap = broker->bootstrap();
  side.write = [&](uint64_t n, int64_t* commit_ns) -> uint64_t {
    std::string pk, id;
    std::string text = items.Make(n, &pk, &id);
    auto item = feedd::PrepareItem(*spec, boost::json::parse(text).as_object(), std::nullopt,
                                   std::nullopt, options.max_item_bytes);
    if (!item.ok()) Die("PrepareItem: " + item.status().ToString());
    feedd::WriteOp op;
    op.kind = feedd::WriteOpKind::kUpsert;
    op.item = std::move(*item);
    feedd::WriteResult r = store->Write({kContainer, pk, {std::move(op)}});
    *commit_ns = NowNs();
    if (!r.status.ok()) Die("Write: " + r.status.ToString());
    return r.last_lsn;
  };
  side.write_burst = [&](uint64_t first, uint64_t count, std::vector<uint64_t>* seqs) {
    feedd::WriteRequest request;
    request.container = kContainer;
    for (uint64_t n = first; n < first + count; ++n) {
      std::string pk, id;
      std::string text = items.Make(n, &pk, &id, /*burst=*/true);
      auto item = feedd::PrepareItem(*spec, boost::json::parse(text).as_object(), std::nullopt,
                                     std::nullopt, options.max_item_bytes);
      if (!item.ok()) Die("PrepareItem: " + item.status().ToString());
      request.partition_key = pk;
      feedd::WriteOp op;
      op.kind = feedd::WriteOpKind::kUpsert;
      op.item = std::move(*item);
      request.ops.push_back(std::move(op));
    }
    feedd::WriteResult r = store->Write(std::move(request));
    if (!r.status.ok()) Die("Write (batch): " + r.status.ToString());
    for (const auto& op : r.results) seqs->push_back(op.lsn);
  };
  side.pauses = true;
  side.pause = [&] {
    publisher->Stop();
    publisher.reset();
  };
  side.resume = [&] {
    auto again = feedd::Publisher::Start(store.get(), feedd::KafkaOptions{}, broker->bootstrap(),
                                         /*embedded=*/true);
    if (!again.ok()) Die("publisher restart: " + again.status().ToString());
    publisher = std::move(*again);
  };
  Sample s = Measure(flags, side);
  feedd::PublisherStatus st = publisher->GetStatus();
  if (st.delivery_errors > 0) {
    std::fprintf(stderr, "  publisher: %llu delivery errors, last: %s\n",
                 static_cast<unsigned long long>(st.delivery_errors), st.last_error.c_str());
    s.errors += st.delivery_errors;
  }
  publisher->Stop();
  publisher.reset();
  store.reset();
  broker.reset();
  std::filesystem::remove_all(dir);
  return s;
}

Sample RunDirect(const Flags& flags, const ItemMaker& items) {
  auto broker = StartBroker();
  // The publisher's producer settings (feed/publisher.cc, CreateProducer()).
  const feedd::KafkaOptions defaults;
  const std::vector<std::pair<std::string, std::string>> props = {
      {"bootstrap.servers", broker->bootstrap()},
      {"client.id", "publish-bench-direct"},
      {"enable.idempotence", "true"},
      {"acks", "all"},
      {"compression.type", "lz4"},
      {"linger.ms", "1"},
      {"message.timeout.ms", "0"},
      {"partitioner", "murmur2_random"},
      {"message.max.bytes",
       std::to_string(std::max<size_t>(defaults.max_envelope_bytes + 65536, 1000000))},
      {"queue.buffering.max.messages", std::to_string(defaults.max_inflight_messages + 1000)},
      {"queue.buffering.max.kbytes",
       std::to_string(defaults.max_inflight_bytes / 1024 + 64 * 1024)},
      {"log_level", "4"},
  };
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  for (const auto& [k, v] : props) {
    if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof(err)) != RD_KAFKA_CONF_OK) {
      Die("producer " + k + ": " + err);
    }
  }
  static std::atomic<uint64_t> delivery_errors;
  delivery_errors = 0;
  rd_kafka_conf_set_dr_msg_cb(conf, [](rd_kafka_t*, const rd_kafka_message_t* m, void*) {
    if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) ++delivery_errors;
  });
  rd_kafka_t* producer = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
  if (producer == nullptr) Die(std::string("producer: ") + err);
  // Serves delivery reports, as the publisher thread does between batches.
  std::atomic<bool> stop{false};
  std::thread poller([&] {
    while (!stop) rd_kafka_poll(producer, 10);
  });

  Side side;
  side.bootstrap = broker->bootstrap();
  auto produce = [&](uint64_t n, bool burst, int64_t* commit_ns) -> uint64_t {
    std::string pk, id;
    std::string item = items.Make(n, &pk, &id, burst);
    std::string value = EnvelopeLike(item, n, pk, id, WallMs());
    const std::string lsn = std::to_string(n);
    *commit_ns = NowNs();
    for (;;) {
      rd_kafka_resp_err_t e = rd_kafka_producev(
          producer, RD_KAFKA_V_TOPIC(kTopic), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
          RD_KAFKA_V_KEY(pk.data(), pk.size()), RD_KAFKA_V_VALUE(value.data(), value.size()),
          RD_KAFKA_V_HEADER("feedd-lsn", lsn.data(), static_cast<ssize_t>(lsn.size())),
          RD_KAFKA_V_HEADER("feedd-op", "create", 6),
          RD_KAFKA_V_HEADER("feedd-container", "posts", 5),
          RD_KAFKA_V_HEADER("feedd-id", id.data(), static_cast<ssize_t>(id.size())),
          RD_KAFKA_V_END);
      if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        continue;
      }
      if (e != RD_KAFKA_RESP_ERR_NO_ERROR) Die(std::string("producev: ") + rd_kafka_err2str(e));
      return n;
    }
  };
  side.write = [&](uint64_t n, int64_t* commit_ns) { return produce(n, false, commit_ns); };
  side.write_burst = [&](uint64_t first, uint64_t count, std::vector<uint64_t>* seqs) {
    int64_t at = 0;
    for (uint64_t n = first; n < first + count; ++n) seqs->push_back(produce(n, true, &at));
  };
  Sample s = Measure(flags, side);
  s.errors += delivery_errors.load();
  rd_kafka_flush(producer, 5000);
  stop = true;
  poller.join();
  rd_kafka_destroy(producer);
  broker.reset();
  return s;
}

void Print(int run, const char* name, const Sample& s) {
  std::printf(
      "  run %d %-6s steady: %llu/%llu received, %7.0f changes/s, latency p50 %6.2f ms p99 %6.2f "
      "ms max %7.2f ms (writer behind schedule <= %.1f ms), cpu %.2f bg %.2f | backlog: %llu "
      "drained at %7.0f changes/s, first after %.0f ms (written at %.0f/s) | avg value %.0f B%s\n",
      run, name, static_cast<unsigned long long>(s.steady_received),
      static_cast<unsigned long long>(s.steady_expected), s.steady_rate(), s.p50_ms, s.p99_ms,
      s.max_ms, s.write_lag_ms, s.cpu, s.bg, static_cast<unsigned long long>(s.burst), s.burst_rate,
      s.burst_first_ms, s.burst_write_rate, s.avg_value_bytes,
      (s.missing || s.duplicates || s.errors)
          ? ("  MISSING " + std::to_string(s.missing) + " DUPLICATES " +
             std::to_string(s.duplicates) + " ERRORS " + std::to_string(s.errors))
                .c_str()
          : "");
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const Flags flags = ParseFlags(argc, argv);
  feedd::SetLogLevel(feedd::LogLevel::kWarning);
  const std::string command = CommandLine(argc, argv);
  const ItemMaker items(flags.item_bytes);
  std::printf(
      "publish_bench: %zu-byte items into %s (%d partitions), steady %g changes/s for %g s, "
      "burst %llu, %d runs, embedded mock broker, consumer fetch.wait.max.ms=1\n"
      "  feedd  = Write() (sync=false) -> Publisher -> broker -> consumer; latency from Write() "
      "return\n"
      "  direct = librdkafka producev() (publisher's settings: idempotence, acks=all, lz4, "
      "linger.ms=1) -> broker -> consumer; latency from producev()\n",
      flags.item_bytes, kTopic, kPartitions, flags.rate, flags.seconds,
      static_cast<unsigned long long>(flags.burst), flags.runs);
  std::vector<Sample> feedd_s, direct_s;
  for (int run = 1; run <= flags.runs; ++run) {
    auto a = [&] {
      feedd_s.push_back(RunFeedd(flags, items));
      Print(run, "feedd", feedd_s.back());
    };
    auto b = [&] {
      direct_s.push_back(RunDirect(flags, items));
      Print(run, "direct", direct_s.back());
    };
    if (run % 2 == 1) {
      a();
      b();
    } else {
      b();
      a();
    }
  }
  auto med = [](const std::vector<Sample>& v, auto f) {
    std::vector<double> x;
    for (const auto& s : v) x.push_back(f(s));
    return Median(x);
  };
  auto p50 = [](const Sample& s) { return s.p50_ms; };
  auto p99 = [](const Sample& s) { return s.p99_ms; };
  auto rate = [](const Sample& s) { return s.steady_rate(); };
  auto burst = [](const Sample& s) { return s.burst_rate; };
  auto cpu = [](const Sample& s) { return s.cpu; };
  auto bg = [](const Sample& s) { return s.bg; };
  const double f50 = med(feedd_s, p50), d50 = med(direct_s, p50);
  const double f99 = med(feedd_s, p99), d99 = med(direct_s, p99);
  const double fb = med(feedd_s, burst), db = med(direct_s, burst);
  std::printf("\nSUMMARY (median of %d runs)\n", flags.runs);
  std::printf(
      "  steady %g changes/s: delivered feedd %.0f/s, direct %.0f/s; latency p50 feedd %.2f ms, "
      "direct %.2f ms (feedd/direct %.2f); p99 feedd %.2f ms, direct %.2f ms (feedd/direct %.2f); "
      "cpu feedd %.2f, direct %.2f cores\n",
      flags.rate, med(feedd_s, rate), med(direct_s, rate), f50, d50, d50 > 0 ? f50 / d50 : 0.0, f99,
      d99, d99 > 0 ? f99 / d99 : 0.0, med(feedd_s, cpu), med(direct_s, cpu));
  if (flags.burst > 0) {
    std::printf(
        "  backlog %llu, drain rate: feedd %.0f changes/s, direct %.0f msgs/s, "
        "feedd/direct %.2f\n",
        static_cast<unsigned long long>(flags.burst), fb, db, db > 0 ? fb / db : 0.0);
  }
  double max_bg = std::max(med(feedd_s, bg), med(direct_s, bg));
  std::printf("  other processes used ~%.2f cores (median)\n", max_bg);
  std::printf("  command: %s\n", command.c_str());
  bool failed = false;
  for (const auto* v : {&feedd_s, &direct_s}) {
    for (const auto& s : *v) failed |= s.missing || s.duplicates || s.errors || !s.steady_received;
  }
  if (failed) std::printf("FAILED: messages missing, duplicated or in error (see above)\n");
  return failed ? 1 : 0;
}
