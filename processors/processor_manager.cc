#include "processors/processor_manager.h"

#include <algorithm>

#include "processors/commit_change_source.h"
#include "util/logging.h"

namespace feedd {
namespace {

Status ParseCount(const ProcessorSettings& s, const std::string& key, const std::string& fallback,
                  uint64_t min, uint64_t max, uint64_t* out) {
  std::string text = s.Optional(key, fallback);
  try {
    size_t used = 0;
    unsigned long long v = std::stoull(text, &used);
    if (used != text.size() || v < min || v > max) throw std::out_of_range(key);
    *out = v;
    return Status::Ok();
  } catch (const std::exception&) {
    return s.Error(key, "must be an integer " + std::to_string(min) + ".." + std::to_string(max) +
                            ", got '" + text + "'");
  }
}

struct ParsedInstance {
  ProcessorConfig config;
  std::unique_ptr<ProcessorKind> kind;
};

Result<std::vector<ParsedInstance>> ParseInstances(
    const std::map<std::string, std::string>& settings,
    const std::vector<ContainerSpec>& containers, bool kafka_enabled) {
  std::map<std::string, ProcessorSettings> by_name;
  for (const auto& [key, value] : settings) {
    size_t dot = key.find('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 == key.size()) {
      return Status(ErrorCode::kInvalidRequest,
                    "processor." + key + ": expected processor.<name>.<key>");
    }
    ProcessorSettings& s = by_name[key.substr(0, dot)];
    s.name = key.substr(0, dot);
    s.values[key.substr(dot + 1)] = value;
  }
  std::vector<ParsedInstance> parsed;
  for (auto& [name, s] : by_name) {
    ProcessorConfig config;
    config.name = name;
    auto kind_name = s.Required("kind");
    if (!kind_name.ok()) return kind_name.status();
    config.kind = *kind_name;
    std::string run = s.Optional("run", "daemon");
    if (run == "worker") {
      if (!kafka_enabled) return s.Error("run", "is worker but kafka.brokers = none");
      config.host = ProcessorHost::kWorker;
    } else if (run != "daemon") {
      return s.Error("run", "must be daemon or worker, got '" + run + "'");
    }
    // Where changes come from follows from where the instance runs: in the
    // daemon from the commit path (and the durable feed), in a worker from
    // Kafka. `source` may only say so.
    const std::string source = s.Optional("source", run == "worker" ? "kafka" : "local");
    if (source != "kafka" && source != "local") {
      return s.Error("source", "must be local or kafka, got '" + source + "'");
    }
    if (run == "worker" && source == "local") {
      return s.Error("source", "is local, but a worker (run = worker) reads Kafka");
    }
    if (run == "daemon" && source == "kafka") {
      FEEDD_LOG(kWarning, "processor")
          << "processor." << name
          << ".source = kafka is ignored: in the daemon, processors take changes in-process "
             "from the commit path and the durable feed; run = worker consumes Kafka";
    }
    if (s.values.count("kafka_grace_ms") != 0) {
      FEEDD_LOG(kWarning, "processor")
          << "processor." << name
          << ".kafka_grace_ms is ignored: in-daemon processors no longer read Kafka";
    }
    uint64_t parallelism, attempts, backoff, memo_mb;
    const std::string default_memo_mb = std::to_string(ProcessorConfig{}.read_memo_bytes >> 20);
    for (auto [key, fallback, min, max, out] :
         {std::tuple{"parallelism", "4", 1, 64, &parallelism},
          std::tuple{"max_attempts", "5", 1, 100, &attempts},
          std::tuple{"retry_backoff_ms", "50", 1, 60000, &backoff},
          std::tuple{"read_memo_mb", default_memo_mb.c_str(), 0, 65536, &memo_mb}}) {
      if (Status st = ParseCount(s, key, fallback, min, max, out); !st.ok()) return st;
    }
    config.parallelism = parallelism;
    config.max_attempts = static_cast<int>(attempts);
    config.retry_backoff = std::chrono::milliseconds(backoff);
    config.read_memo_bytes = static_cast<size_t>(memo_mb) << 20;
    for (const char* key : {"kind", "source", "run", "parallelism", "max_attempts",
                            "retry_backoff_ms", "read_memo_mb", "kafka_grace_ms"}) {
      s.values.erase(key);
    }
    config.settings = s;
    auto kind = ProcessorRegistry::Create(config.kind, s, containers);
    if (!kind.ok()) return kind.status();
    if (config.host == ProcessorHost::kWorker && !(*kind)->Distributable()) {
      return s.Error("run", "is worker, but kind " + config.kind +
                                " keeps one view for all changes and must run in one place: "
                                "the daemon");
    }
    parsed.push_back({std::move(config), std::move(*kind)});
  }
  return parsed;
}

// A container only processors may write (writers = processors) that no
// declared processor writes into would stay empty and refuse every write.
Status CheckDerivedContainersAreWritten(const std::vector<ParsedInstance>& parsed,
                                        const std::vector<ContainerSpec>& containers) {
  for (const ContainerSpec& spec : containers) {
    if (spec.writers != ContainerWriters::kProcessors) continue;
    bool written = std::any_of(parsed.begin(), parsed.end(), [&](const ParsedInstance& p) {
      std::vector<std::string> targets = p.kind->TargetContainers();
      return std::find(targets.begin(), targets.end(), spec.name) != targets.end();
    });
    if (!written) {
      return Status(ErrorCode::kInvalidRequest,
                    "container " + spec.name +
                        " is written by processors only (writers = processors), but no declared "
                        "processor writes into it: declare the processor that fills it "
                        "([processor.<name>] with target_container = " +
                        spec.name + ") or set container." + spec.name + ".writers = any");
    }
  }
  return Status::Ok();
}

// ParseInstances, then the checks of the daemon's whole set of processors.
Result<std::vector<ParsedInstance>> ParseDaemonInstances(
    const std::map<std::string, std::string>& settings,
    const std::vector<ContainerSpec>& containers, bool kafka_enabled) {
  auto parsed = ParseInstances(settings, containers, kafka_enabled);
  if (!parsed.ok()) return parsed.status();
  if (Status s = CheckDerivedContainersAreWritten(*parsed, containers); !s.ok()) return s;
  return parsed;
}

}  // namespace

Status ProcessorManager::Validate(const std::map<std::string, std::string>& settings,
                                  const std::vector<ContainerSpec>& containers,
                                  bool kafka_enabled) {
  return ParseDaemonInstances(settings, containers, kafka_enabled).status();
}

Result<std::unique_ptr<ProcessorManager>> ProcessorManager::Create(
    DocumentStore* store, const std::map<std::string, std::string>& settings, bool kafka_enabled,
    size_t max_admin_tasks,
    const std::function<void(const std::string& processor, double seconds)>& on_view_committed) {
  auto parsed = ParseDaemonInstances(settings, store->containers(), kafka_enabled);
  if (!parsed.ok()) return parsed.status();
  auto manager = std::make_unique<ProcessorManager>();
  manager->store_ = store;
  manager->admin_tasks_ = std::make_unique<AdminTasks>(std::max<size_t>(max_admin_tasks, 1));
  for (auto& p : *parsed) {
    if (p.config.host != ProcessorHost::kDaemon) continue;  // run by feedd worker
    if (on_view_committed) {
      p.config.on_view_committed = [on_view_committed, name = p.config.name](double seconds) {
        on_view_committed(name, seconds);
      };
    }
    auto source = std::make_unique<CommitChangeSource>(
        store, CommitChangeSource::Options{ProcessorInstance::ConsumerName(p.config.name)});
    manager->pumps_.push_back(std::make_unique<SourcePump>("src-" + p.config.name));
    SourcePump* pump = manager->pumps_.back().get();
    manager->instances_.push_back(std::make_unique<ProcessorInstance>(
        store, pump, std::move(p.config), std::move(p.kind), std::move(source)));
  }
  return manager;
}

Result<std::vector<std::unique_ptr<ProcessorWorker>>> ProcessorManager::CreateWorkers(
    const std::map<std::string, std::string>& settings,
    const std::vector<ContainerSpec>& containers, const WorkerOptions& options,
    const std::vector<std::string>& names,
    const std::function<void(const std::string& processor, double seconds)>& on_view_committed) {
  auto parsed = ParseInstances(settings, containers, /*kafka_enabled=*/true);
  if (!parsed.ok()) return parsed.status();
  std::vector<std::unique_ptr<ProcessorWorker>> workers;
  for (auto& p : *parsed) {
    bool named = std::find(names.begin(), names.end(), p.config.name) != names.end();
    if (names.empty() ? p.config.host != ProcessorHost::kWorker : !named) continue;
    if (on_view_committed) {
      p.config.on_view_committed = [on_view_committed, name = p.config.name](double seconds) {
        on_view_committed(name, seconds);
      };
    }
    auto worker =
        ProcessorWorker::Create(std::move(p.config), std::move(p.kind), containers, options);
    if (!worker.ok()) return worker.status();
    workers.push_back(std::move(*worker));
  }
  for (const auto& name : names) {
    bool found = std::any_of(workers.begin(), workers.end(),
                             [&](const auto& w) { return w->name() == name; });
    if (!found) return Status(ErrorCode::kInvalidRequest, "no processor named '" + name + "'");
  }
  if (workers.empty()) {
    return Status(ErrorCode::kInvalidRequest,
                  "no processor to run: none has processor.<name>.run = worker");
  }
  return workers;
}

Status ProcessorManager::Start() {
  auto jobs =
      JobRegistry::Open(store_->options().data_dir + "/" + kJobsFile, store_->options().clock);
  if (!jobs.ok()) return jobs.status();
  jobs_ = std::move(*jobs);
  // The watermark of a processor the daemon no longer runs (removed from
  // the configuration, or moved to feedd worker) would hold the change
  // feed's retention forever. If it comes back, it starts as a new view.
  const std::string prefix = ProcessorInstance::kConsumerPrefix;
  for (const auto& consumer : store_->Consumers()) {
    if (consumer.name.rfind(prefix, 0) != 0) continue;
    if (Find(consumer.name.substr(prefix.size())) != nullptr) continue;
    if (Status s = store_->UnregisterConsumer(consumer.name); !s.ok()) return s;
    FEEDD_LOG(kWarning, "processor")
        << consumer.name << " is no longer run by the daemon: its retention watermark (LSN "
        << consumer.acked << ") is dropped";
  }
  for (auto& instance : instances_) {
    if (Status s = instance->Start(); !s.ok()) {
      return Status(s.code(), "processor " + instance->name() + ": " + s.message());
    }
  }
  return Status::Ok();
}

void ProcessorManager::Stop() {
  // Running rebuilds and verifies are asked to stop (their jobs fail) and
  // joined.
  admin_tasks_->Shutdown();
  for (auto it = instances_.rbegin(); it != instances_.rend(); ++it) (*it)->Stop();
}

ProcessorInstance* ProcessorManager::Find(const std::string& name) const {
  for (const auto& instance : instances_) {
    if (instance->name() == name) return instance.get();
  }
  return nullptr;
}

std::vector<ProcessorInstance*> ProcessorManager::WritersOf(const std::string& container) const {
  std::vector<ProcessorInstance*> writers;
  for (const auto& instance : instances_) {
    auto targets = instance->kind().TargetContainers();
    if (std::find(targets.begin(), targets.end(), container) != targets.end()) {
      writers.push_back(instance.get());
    }
  }
  return writers;
}

}  // namespace feedd
