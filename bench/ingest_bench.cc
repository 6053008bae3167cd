// ingest_bench: durable ingest of 1 KB JSON items through feedd's storage API
// against raw RocksDB doing the comparable work, in one run.
//
//   feedd : N writer threads, each a synchronous client (one request in
//           flight, like an HTTP client waiting for its answer): build the
//           item text, parse it, PrepareItem(), then DocumentStore::Write() of
//           one kUpsert op into container `posts` (partition key /postId,
//           secondary index /userId). Every item is new (a create).
//   raw   : the same N threads, each building the same bytes with
//           key_format (item key/value, feed key/value with the change
//           envelope) and writing ONE WriteBatch of a doc put + a feed put in
//           two column families with DB::Write() (RocksDB's group commit).
//
// Both use the same sync setting and fresh databases under --dir. Runs
// interleave feedd and raw (alternating which goes first); the summary prints
// the median throughput of each, the ratio feedd/raw, and the median over
// runs of the commit latency p50/p99 (Write() / DB::Write() call time).
//
// Usage: ingest_bench [--writers 64] [--runs 3] [--seconds 5 | --items N]
//                     [--dir /tmp] [--sync true|false|both] [--item-bytes 1024]
//                     [--wait-idle 10] [--only feedd|raw]
// Before each measurement it waits up to --wait-idle seconds for other
// processes to go quiet, and it prints the CPU this process ("cpu") and all
// others ("bg") used during each measurement, in cores.
#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/write_batch.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/json.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench/machine_load.h"
#include "bench/median.h"
#include "storage/change_record.h"
#include "storage/document_store.h"
#include "storage/key_format.h"
#include "storage/prepared_item.h"
#include "storage/write_request.h"
#include "tests/blog_scenario.h"
#include "util/logging.h"

namespace {

using Clock = std::chrono::steady_clock;
namespace kf = feedd::key_format;

constexpr const char* kContainer = "posts";

struct Flags {
  int writers = 64;
  int runs = 3;
  double seconds = 5;
  uint64_t items = 0;  // when > 0, each run writes this many items (no time bound)
  std::string dir = "/tmp";
  std::vector<bool> syncs = {true, false};
  size_t item_bytes = 1024;
  double wait_idle = 10;          // before each measurement, wait up to this long for a quiet box
  bool feedd = true, raw = true;  // --only feedd|raw (for profiling one side)
  size_t raw_batch = 1;           // --raw-batch: items per raw WriteBatch (bulk-load baseline)
};

[[noreturn]] void Usage(const char* why) {
  std::fprintf(stderr,
               "ingest_bench: %s\n"
               "usage: ingest_bench [--writers N] [--runs N] [--seconds S | --items N]\n"
               "                    [--dir DIR] [--sync true|false|both] [--item-bytes N]\n"
               "                    [--wait-idle SECONDS] [--only feedd|raw] [--raw-batch N]\n",
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
      if (arg == "--writers") {
        f.writers = std::stoi(value);
      } else if (arg == "--runs") {
        f.runs = std::stoi(value);
      } else if (arg == "--seconds") {
        f.seconds = std::stod(value);
      } else if (arg == "--items") {
        f.items = std::stoull(value);
      } else if (arg == "--dir") {
        f.dir = value;
      } else if (arg == "--only") {
        if (value != "feedd" && value != "raw") Usage("--only takes feedd or raw");
        f.feedd = value == "feedd";
        f.raw = value == "raw";
      } else if (arg == "--raw-batch") {
        f.raw_batch = std::stoul(value);
        if (f.raw_batch == 0) Usage("--raw-batch takes a positive count");
      } else if (arg == "--wait-idle") {
        f.wait_idle = std::stod(value);
      } else if (arg == "--item-bytes") {
        f.item_bytes = std::stoul(value);
      } else if (arg == "--sync") {
        if (value == "true" || value == "1") {
          f.syncs = {true};
        } else if (value == "false" || value == "0") {
          f.syncs = {false};
        } else if (value == "both") {
          f.syncs = {true, false};
        } else {
          Usage("--sync takes true, false or both");
        }
      } else {
        Usage(("unknown flag " + arg).c_str());
      }
    } catch (const std::exception&) {
      Usage(("bad value for " + arg + ": " + value).c_str());
    }
  }
  if (f.writers < 1 || f.runs < 1 || f.seconds <= 0 || f.item_bytes < 200) {
    Usage("--writers and --runs must be >= 1, --seconds > 0, --item-bytes >= 200");
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

// Makes item JSON texts of exactly `bytes` bytes:
// {"id":"w3-17","postId":"w3-17","userId":"u42","type":"post","title":"...","body":"..."}
// The body is random lowercase letters (compressible about like text).
class ItemMaker {
 public:
  ItemMaker(int writer, size_t bytes) : writer_(writer), bytes_(bytes), rng_(1000 + writer) {
    filler_.resize(bytes * 4);
    for (auto& c : filler_) c = static_cast<char>('a' + rng_() % 26);
  }

  // Sets *id and returns the item text.
  std::string Make(uint64_t seq, std::string* id) {
    *id = "w" + std::to_string(writer_) + "-" + std::to_string(seq);
    std::string out;
    out.reserve(bytes_);
    out += "{\"id\":\"" + *id + "\",\"postId\":\"" + *id + "\",\"userId\":\"u" +
           std::to_string(rng_() % 1000) + "\",\"type\":\"post\",\"title\":\"benchmark post\"," +
           "\"body\":\"";
    size_t room = bytes_ > out.size() + 2 ? bytes_ - out.size() - 2 : 1;
    size_t offset = rng_() % (filler_.size() - room);
    out.append(filler_, offset, room);
    out += "\"}";
    return out;
  }

 private:
  const int writer_;
  const size_t bytes_;
  std::mt19937_64 rng_;
  std::string filler_;
};

struct Sample {
  uint64_t writes = 0;
  uint64_t errors = 0;
  double seconds = 0;
  double p50_us = 0, p99_us = 0, max_us = 0;
  double self_cpu = 0;  // CPU this process used, in cores (2.0 = both cores of this box)
  double bg_cpu = 0;    // CPU every other process used meanwhile, in cores
  std::string extra;    // engine- or rocks-specific detail
  double rate() const { return seconds > 0 ? writes / seconds : 0; }
};

double Percentile(std::vector<uint32_t>& v, double q) {
  if (v.empty()) return 0;
  size_t k = static_cast<size_t>(q * (v.size() - 1));
  std::nth_element(v.begin(), v.begin() + k, v.end());
  return v[k] / 1000.0;
}

void FillLatencies(std::vector<std::vector<uint32_t>>& per_thread, Sample* s) {
  std::vector<uint32_t> all;
  for (auto& v : per_thread) all.insert(all.end(), v.begin(), v.end());
  if (all.empty()) return;
  s->max_us = *std::max_element(all.begin(), all.end()) / 1000.0;
  s->p99_us = Percentile(all, 0.99);
  s->p50_us = Percentile(all, 0.50);
}

uint32_t Nanos(Clock::duration d) {
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
  return static_cast<uint32_t>(std::min<int64_t>(ns, UINT32_MAX));
}

std::string FreshDir(const std::string& parent, const char* tag) {
  std::string pattern = parent + "/ingest_bench." + tag + ".XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) {
    std::perror(("mkdtemp " + pattern).c_str());
    std::exit(1);
  }
  return buf.data();
}

using feedd::bench::CpuTimes;
using feedd::bench::Median;
using feedd::bench::ReadCpuTimes;
using feedd::bench::WaitForIdle;

// Runs `writer(index, latencies)` on flags.writers threads until the time
// bound (or the item budget, which the writer consumes through `next`) and
// returns the elapsed time.
template <typename Fn>
void RunWriters(const Flags& flags, std::atomic<bool>& stop, Fn writer,
                std::vector<std::vector<uint32_t>>& latencies, Sample* sample) {
  WaitForIdle(flags.wait_idle);
  latencies.assign(flags.writers, {});
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int w = 0; w < flags.writers; ++w) {
    threads.emplace_back([&, w] {
      latencies[w].reserve(1 << 16);
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      writer(w, latencies[w]);
    });
  }
  while (ready.load() < flags.writers) std::this_thread::yield();
  const CpuTimes cpu0 = ReadCpuTimes();
  auto start = Clock::now();
  go.store(true, std::memory_order_release);
  if (flags.items == 0) {
    auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                                std::chrono::duration<double>(flags.seconds));
    std::this_thread::sleep_until(deadline);
    stop.store(true);
  }
  for (auto& t : threads) t.join();
  sample->seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const CpuTimes cpu1 = ReadCpuTimes();
  sample->self_cpu = (cpu1.self - cpu0.self) / sample->seconds;
  sample->bg_cpu =
      std::max(0.0, (cpu1.machine - cpu0.machine) - (cpu1.self - cpu0.self)) / sample->seconds;
}

// ---- feedd ----

Sample RunEngine(const Flags& flags, bool sync) {
  std::string dir = FreshDir(flags.dir, "feedd");
  feedd::StoreOptions options;
  options.data_dir = dir;
  options.containers = feedd::BlogContainers();
  options.sync = sync;
  auto opened = feedd::DocumentStore::Open(options);
  if (!opened.ok()) {
    std::fprintf(stderr, "DocumentStore::Open(%s): %s\n", dir.c_str(),
                 opened.status().message().c_str());
    std::exit(1);
  }
  std::unique_ptr<feedd::DocumentStore> store = std::move(*opened);
  const feedd::ContainerSpec* spec = store->FindContainer(kContainer);
  if (spec == nullptr || spec->index_paths.empty()) {
    std::fprintf(stderr, "container %s with a secondary index is not configured\n", kContainer);
    std::exit(1);
  }

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> next{0}, writes{0}, errors{0}, prepare_ns{0};
  std::atomic<bool> reported{false};
  std::vector<std::vector<uint32_t>> latencies;
  auto writer = [&](int w, std::vector<uint32_t>& lat) {
    ItemMaker maker(w, flags.item_bytes);
    uint64_t mine = 0, my_errors = 0, my_prepare = 0;
    for (uint64_t seq = 0;; ++seq) {
      if (flags.items ? next.fetch_add(1) >= flags.items : stop.load(std::memory_order_relaxed))
        break;
      std::string id;
      std::string text = maker.Make(seq, &id);
      auto t0 = Clock::now();
      boost::json::value body = boost::json::parse(text);
      auto prepared = feedd::PrepareItem(*spec, std::move(body.as_object()), std::nullopt,
                                         std::nullopt, options.max_item_bytes);
      if (!prepared.ok()) {
        if (!reported.exchange(true))
          std::fprintf(stderr, "PrepareItem: %s\n", prepared.status().message().c_str());
        ++my_errors;
        continue;
      }
      feedd::WriteRequest request;
      request.container = kContainer;
      request.partition_key = prepared->partition_key;
      feedd::WriteOp op;
      op.kind = feedd::WriteOpKind::kUpsert;
      op.id = prepared->id;
      op.item = std::move(*prepared);
      request.ops.push_back(std::move(op));
      auto t1 = Clock::now();
      feedd::WriteResult result = store->Write(std::move(request));
      auto t2 = Clock::now();
      my_prepare += Nanos(t1 - t0);
      if (!result.status.ok()) {
        if (!reported.exchange(true))
          std::fprintf(stderr, "Write: %s\n", result.status.message().c_str());
        ++my_errors;
        continue;
      }
      lat.push_back(Nanos(t2 - t1));
      ++mine;
    }
    writes += mine;
    errors += my_errors;
    prepare_ns += my_prepare;
  };
  Sample s;
  RunWriters(flags, stop, writer, latencies, &s);
  s.writes = writes.load();
  s.errors = errors.load();
  FillLatencies(latencies, &s);
  feedd::StoreStats stats = store->Stats();
  char extra[200];
  std::snprintf(extra, sizeof extra, "%llu groups, %.1f req/group, prepare %.1f us/item",
                static_cast<unsigned long long>(stats.groups_committed),
                stats.groups_committed
                    ? static_cast<double>(stats.requests_committed) / stats.groups_committed
                    : 0.0,
                s.writes ? prepare_ns.load() / 1000.0 / s.writes : 0.0);
  s.extra = extra;
  store->Close();
  store.reset();
  std::filesystem::remove_all(dir);
  return s;
}

// ---- raw RocksDB ----

// "Cumulative writes: 1 writes, 2 keys, 3 commit groups, 1.0 writes per commit group, ..."
std::string CommitGroups(rocksdb::DB* db) {
  std::string stats;
  if (!db->GetProperty("rocksdb.dbstats", &stats)) return "";
  auto pos = stats.find("Cumulative writes:");
  if (pos == std::string::npos) return "";
  auto end = stats.find("ingest", pos);
  std::string line =
      stats.substr(pos, (end == std::string::npos ? stats.find('\n', pos) : end) - pos);
  while (!line.empty() && (line.back() == ' ' || line.back() == ',')) line.pop_back();
  return line;
}

Sample RunRaw(const Flags& flags, bool sync) {
  std::string dir = FreshDir(flags.dir, "raw");
  // The engine's DB options (storage/rocks_database.cc) without its block
  // cache / bloom filter details, which only matter for reads.
  rocksdb::DBOptions db_options;
  db_options.create_if_missing = true;
  db_options.create_missing_column_families = true;
  db_options.IncreaseParallelism(2);
  db_options.max_total_wal_size = 512ull << 20;
  rocksdb::ColumnFamilyOptions cf;
  cf.write_buffer_size = 64u << 20;
  cf.level_compaction_dynamic_level_bytes = true;
  cf.compression = rocksdb::kLZ4Compression;
  std::vector<rocksdb::ColumnFamilyDescriptor> descriptors = {
      {rocksdb::kDefaultColumnFamilyName, cf},
      {kf::ItemsColumnFamily(kContainer), cf},
      {std::string(kf::kFeedColumnFamily), cf},
  };
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s =
      rocksdb::DB::Open(rocksdb::Options(db_options, cf), dir, descriptors, &handles, &raw);
  if (!s.ok()) {
    std::fprintf(stderr, "rocksdb::DB::Open(%s): %s\n", dir.c_str(), s.ToString().c_str());
    std::exit(1);
  }
  rocksdb::ColumnFamilyHandle* docs = handles[1];
  rocksdb::ColumnFamilyHandle* feed = handles[2];

  rocksdb::WriteOptions wo;
  wo.sync = sync;
  std::atomic<bool> stop{false}, reported{false};
  std::atomic<uint64_t> next{0}, lsn{0}, writes{0}, errors{0};
  std::vector<std::vector<uint32_t>> latencies;
  auto writer = [&](int w, std::vector<uint32_t>& lat) {
    ItemMaker maker(w, flags.item_bytes);
    uint64_t mine = 0, my_errors = 0;
    // --raw-batch items (doc + feed record each) per DB::Write.
    rocksdb::WriteBatch batch;
    size_t in_batch = 0;
    auto write_batch = [&] {
      auto t1 = Clock::now();
      rocksdb::Status ws = raw->Write(wo, &batch);
      auto t2 = Clock::now();
      if (!ws.ok()) {
        if (!reported.exchange(true))
          std::fprintf(stderr, "DB::Write: %s\n", ws.ToString().c_str());
        my_errors += in_batch;
      } else {
        lat.push_back(Nanos(t2 - t1));
        mine += in_batch;
      }
      batch.Clear();
      in_batch = 0;
    };
    for (uint64_t seq = 0;; ++seq) {
      if (flags.items ? next.fetch_add(1) >= flags.items : stop.load(std::memory_order_relaxed))
        break;
      std::string id;
      std::string text = maker.Make(seq, &id);
      // What the engine stores for a create: the item with system properties
      // and a feed record whose envelope carries it as "after".
      const uint64_t my_lsn = lsn.fetch_add(1) + 1;
      const uint64_t ts = std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
      std::string lsn_text = std::to_string(my_lsn);
      text.pop_back();
      text += ",\"_etag\":\"\\\"" + lsn_text + "\\\"\",\"_lsn\":" + lsn_text +
              ",\"_ts\":" + std::to_string(ts) + "}";
      std::string envelope = "{\"lsn\":" + lsn_text +
                             ",\"op\":\"create\",\"container\":\"posts\",\"partitionKey\":\"" + id +
                             "\",\"id\":\"" + id + "\",\"ts\":" + std::to_string(ts) +
                             ",\"before\":null,\"after\":" + text + "}";
      batch.Put(docs, kf::ItemKey(id, id), kf::ItemValue(my_lsn, text));
      batch.Put(feed, kf::FeedKey(my_lsn),
                kf::FeedValue(ts, feedd::ChangeOp::kCreate, kContainer, id, id, envelope));
      if (++in_batch < flags.raw_batch) continue;
      write_batch();
    }
    if (in_batch > 0) write_batch();
    writes += mine;
    errors += my_errors;
  };
  Sample sample;
  RunWriters(flags, stop, writer, latencies, &sample);
  sample.writes = writes.load();
  sample.errors = errors.load();
  FillLatencies(latencies, &sample);
  sample.extra = CommitGroups(raw);
  for (auto* h : handles) raw->DestroyColumnFamilyHandle(h);
  raw->Close();
  delete raw;
  std::filesystem::remove_all(dir);
  return sample;
}

std::string FormatSeconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

void PrintSample(int run, const char* name, const Sample& s) {
  std::printf(
      "  run %d %-5s %8.0f writes/s (%llu in %.2f s)  commit p50 %6.0f us p99 %6.0f us"
      " max %6.0f us  cpu %.2f bg %.2f%s  [%s]\n",
      run, name, s.rate(), static_cast<unsigned long long>(s.writes), s.seconds, s.p50_us, s.p99_us,
      s.max_us, s.self_cpu, s.bg_cpu,
      s.errors ? ("  ERRORS " + std::to_string(s.errors)).c_str() : "", s.extra.c_str());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags = ParseFlags(argc, argv);
  feedd::SetLogLevel(feedd::LogLevel::kWarning);  // no open/close chatter per run
  const std::string command = CommandLine(argc, argv);
  std::printf(
      "ingest_bench: %zu-byte JSON items, container %s (index /userId), %d writer "
      "threads (1 synchronous write in flight each), %d runs of %s, dir %s\n",
      flags.item_bytes, kContainer, flags.writers, flags.runs,
      flags.items ? (std::to_string(flags.items) + " items").c_str()
                  : (FormatSeconds(flags.seconds) + " s").c_str(),
      flags.dir.c_str());
  std::printf(
      "  feedd = parse + PrepareItem + DocumentStore::Write (1 kUpsert op per request)\n"
      "  raw   = DB::Write of a WriteBatch {item put, feed put} (2 CFs), same sync\n");
  bool failed = false;
  struct Summary {
    bool sync;
    double engine, raw, engine_p50, engine_p99, raw_p50, raw_p99, max_bg;
  };
  std::vector<Summary> summaries;
  for (bool sync : flags.syncs) {
    std::printf("\nsync=%s\n", sync ? "true" : "false");
    std::vector<Sample> engine, raw;
    for (int run = 1; run <= flags.runs; ++run) {
      // Alternate which goes first so drift on the box hits both alike.
      auto run_engine = [&] {
        if (!flags.feedd) return;
        engine.push_back(RunEngine(flags, sync));
        PrintSample(run, "feedd", engine.back());
      };
      auto run_raw = [&] {
        if (!flags.raw) return;
        raw.push_back(RunRaw(flags, sync));
        PrintSample(run, "raw", raw.back());
      };
      if (run % 2 == 1) {
        run_engine();
        run_raw();
      } else {
        run_raw();
        run_engine();
      }
    }
    auto collect = [](const std::vector<Sample>& v, auto field) {
      std::vector<double> out;
      for (const auto& s : v) out.push_back(field(s));
      return out;
    };
    auto rate = [](const Sample& s) { return s.rate(); };
    auto p50 = [](const Sample& s) { return s.p50_us; };
    auto p99 = [](const Sample& s) { return s.p99_us; };
    Summary sum{sync,
                Median(collect(engine, rate)),
                Median(collect(raw, rate)),
                Median(collect(engine, p50)),
                Median(collect(engine, p99)),
                Median(collect(raw, p50)),
                Median(collect(raw, p99)),
                0.0};
    for (const auto& s : engine) sum.max_bg = std::max(sum.max_bg, s.bg_cpu);
    for (const auto& s : raw) sum.max_bg = std::max(sum.max_bg, s.bg_cpu);
    summaries.push_back(sum);
    for (const auto& s : engine) failed |= s.errors > 0 || s.writes == 0;
    for (const auto& s : raw) failed |= s.errors > 0 || s.writes == 0;
  }

  std::printf("\nSUMMARY (median of %d runs; latency = median over runs of each run's p50/p99)\n",
              flags.runs);
  for (const auto& s : summaries) {
    std::printf(
        "  sync=%-5s feedd %8.0f writes/s  raw %8.0f writes/s  feedd/raw %.2f   "
        "commit p50/p99: feedd %.0f/%.0f us, raw %.0f/%.0f us  (other processes used <= %.2f "
        "cores)\n",
        s.sync ? "true" : "false", s.engine, s.raw, s.raw > 0 ? s.engine / s.raw : 0.0,
        s.engine_p50, s.engine_p99, s.raw_p50, s.raw_p99, s.max_bg);
  }
  std::printf("  command: %s\n", command.c_str());
  return failed ? 1 : 0;
}
