// feedd: the change-feed document-store daemon.
//
// Start-up: configuration (daemon/options.h) and the tokens file; the API
// and metrics ports are bound before storage opens (a taken port fails
// start-up without touching the data directory); storage, Kafka, processors;
// the API serves; then the --ready-file. SIGTERM/SIGINT stop it in reverse
// order (HTTP gracefully, then storage) and exit 0; a second signal while
// stopping kills it at once. SIGHUP reloads auth.tokens_file and the TLS
// certificates and keys (http.tls_*, metrics.tls_*); a reload that fails
// keeps what was loaded before and logs why.
// Exit codes: 0 ok, 1 start-up failure, 2 bad configuration.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/ssl/context.hpp>
#include <csignal>
#include <cstring>
#include <functional>
#include <iostream>
#include <optional>

#include "daemon/api_router.h"
#include "daemon/auth_handler.h"
#include "daemon/http_probe.h"
#include "daemon/http_server.h"
#include "daemon/import_probe.h"
#include "daemon/import_spool.h"
#include "daemon/long_poll_probe.h"
#include "daemon/metrics_access.h"
#include "daemon/metrics_server.h"
#include "daemon/options.h"
#include "daemon/ready_file.h"
#include "daemon/state_collector.h"
#include "daemon/systemd_notifier.h"
#include "daemon/worker_main.h"
#include "feed/embedded_broker.h"
#include "feed/kafka_message.h"
#include "feed/publisher.h"
#include "processors/processor_manager.h"
#include "processors/view_commit_probe.h"
#include "storage/commit_probe.h"
#include "storage/document_store.h"
#include "util/atomic_file.h"
#include "util/logging.h"

extern char** environ;

namespace feedd {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitStartupFailure = 1;
constexpr int kExitBadConfig = 2;

// File descriptors kept, besides the API connections, for RocksDB (WAL, SST
// and manifest files), Kafka sockets, the metrics server and the ready file.
constexpr rlim_t kReservedFds = 256;

// http.max_connections plus kReservedFds must fit the open-files limit. When
// `raise`, a soft limit below that is raised (up to the hard limit).
Status CheckFdLimit(const DaemonConfig& config, bool raise) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return Status::Ok();
  const rlim_t needed = config.http_max_connections + kReservedFds;
  if (limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur >= needed) return Status::Ok();
  if (limit.rlim_max == RLIM_INFINITY || limit.rlim_max >= needed) {
    if (!raise) return Status::Ok();
    rlimit raised = limit;
    raised.rlim_cur = needed;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) return Status::Ok();
  }
  rlim_t hard = limit.rlim_max == RLIM_INFINITY ? limit.rlim_cur : limit.rlim_max;
  return Status(
      ErrorCode::kInvalidRequest,
      "invalid value for http.max_connections: " + std::to_string(config.http_max_connections) +
          " connections and " + std::to_string(kReservedFds) +
          " descriptors for storage and Kafka need " + std::to_string(needed) +
          " open files, but the limit (ulimit -n) is " + std::to_string(hard) +
          ": lower http.max_connections or raise the limit (systemd: LimitNOFILE=)");
}

HttpServerOptions HttpOptions(const DaemonConfig& config, HttpServerObserver* observer) {
  HttpServerOptions options;
  options.listen = config.http_listen;
  options.threads = config.http_threads;
  options.max_request_bytes = config.http_max_request_bytes;
  options.max_connections = config.http_max_connections;
  options.max_buffered_bytes = config.http_max_buffered_bytes;
  options.idle_timeout = std::chrono::seconds(config.http_idle_timeout_seconds);
  options.shutdown_grace = std::chrono::seconds(config.http_shutdown_grace_seconds);
  options.observer = observer;
  options.screen_heads = !config.auth_tokens_file.empty();
  if (!config.http_tls_cert_file.empty()) {
    options.tls = TlsServerFiles{config.http_tls_cert_file, config.http_tls_key_file,
                                 config.http_tls_client_ca_file};
  }
  return options;
}

// The TLS files of http.tls_* and metrics.tls_*, loaded once to report a
// bad certificate or key as a configuration error (exit 2) before anything
// starts. The message names the options.
Status CheckTlsFiles(const DaemonConfig& config) {
  if (Status s = CheckTlsFilesLoad(HttpOptions(config, nullptr).tls, "http.tls_*"); !s.ok()) {
    return s;
  }
  return CheckTlsFilesLoad(MetricsTls(config), "metrics.tls_*");
}

}  // namespace

namespace {

// The start-up steps of Run(). Each logs why it fails and returns the exit
// code, kExitOk to go on.

// Loads auth.tokens_file into `tokens` (nullptr when not set) and checks the
// TLS files; logs whether the API authenticates.
int LoadSecurity(const DaemonConfig& config, std::shared_ptr<const TokenSet>* tokens) {
  Result<std::shared_ptr<const TokenSet>> loaded = LoadTokens(config);
  if (!loaded.ok()) {
    FEEDD_LOG(kError, "main") << "cannot load auth.tokens_file: " << loaded.status().message();
    return kExitBadConfig;
  }
  if (Status tls = CheckTlsFiles(config); !tls.ok()) {
    FEEDD_LOG(kError, "main") << "cannot load the TLS files: " << tls.message();
    return kExitBadConfig;
  }
  *tokens = std::move(*loaded);
  if (*tokens) {
    FEEDD_LOG(kInfo, "main") << "authentication on: " << (*tokens)->size() << " token(s) from "
                             << config.auth_tokens_file;
  } else if (config.auth_allow_unauthenticated) {
    FEEDD_LOG(kWarning, "main") << "no auth.tokens_file and auth.allow_unauthenticated = true: "
                                   "anyone who can reach "
                                << config.http_listen.ToString() << " may read, write and "
                                << "administer everything";
  }
  return kExitOk;
}

void LogStarting(const DaemonConfig& config) {
  FEEDD_LOG(kInfo, "main") << "feedd " << FEEDD_VERSION << " starting: instance "
                           << config.instance_name << ", data in " << config.store.data_dir << ", "
                           << config.store.containers.size() << " container(s)"
                           << (config.config_file.empty() ? "" : ", config ") << config.config_file;
  if (config.default_scenario) {
    FEEDD_LOG(kInfo, "main") << "no container or processor declared: the default scenario of "
                                "the built-in configs/feedd.conf, with any processor.* "
                                "tuning keys over it";
  }
}

// Binds the API port and starts /metrics, whose basic authentication
// (metrics.authenticate) checks `metrics_credentials`.
int BindPorts(const DaemonConfig& config, HttpServer& http, MetricsServer& metrics,
              const MetricsCredentials& metrics_credentials, std::string* metrics_address) {
  if (Status s = http.Listen(); !s.ok()) {
    FEEDD_LOG(kError, "main") << "cannot start the HTTP API: " << s.message() << " (http.listen)";
    return kExitStartupFailure;
  }
  Result<std::string> address =
      metrics.Start(MetricsServerOptions(config, config.metrics_listen, &metrics_credentials));
  if (!address.ok()) {
    FEEDD_LOG(kError, "main") << address.status().message() << " (metrics.listen)";
    return kExitStartupFailure;
  }
  *metrics_address = std::move(*address);
  return kExitOk;
}

// Opens the store; its group commits feed `commit_probe`.
int OpenStore(const DaemonConfig& config, CommitProbe& commit_probe,
              std::unique_ptr<DocumentStore>* store) {
  StoreOptions store_options = config.store;
  store_options.on_group_commit = commit_probe.Observer();
  store_options.on_wal_sync = commit_probe.WalSyncObserver();
  store_options.on_queue_wait = commit_probe.QueueWaitObserver();
  Result<std::unique_ptr<DocumentStore>> opened = DocumentStore::Open(store_options);
  if (!opened.ok()) {
    FEEDD_LOG(kError, "main") << "cannot open the store in " << config.store.data_dir << ": "
                              << opened.status().ToString();
    return kExitStartupFailure;
  }
  *store = std::move(*opened);
  return kExitOk;
}

// Kafka as the daemon runs it: the embedded broker (in-memory, development
// and tests) or a real cluster, and the publisher. Members in start-up
// order, so they are destroyed the other way round.
struct Kafka {
  std::unique_ptr<EmbeddedBroker> broker;
  std::unique_ptr<Publisher> publisher;
  std::optional<std::string> bootstrap;  // none: kafka.brokers = none
  bool embedded = false;
};

// Starts the embedded broker with a topic for every container (and the
// heartbeat topic).
int StartEmbeddedBroker(const DaemonConfig& config, const DocumentStore& store,
                        std::unique_ptr<EmbeddedBroker>* broker) {
  auto started = EmbeddedBroker::Start(1, config.kafka.embedded_port);
  if (!started.ok()) {
    FEEDD_LOG(kError, "main") << started.status().ToString();
    return kExitStartupFailure;
  }
  *broker = std::move(*started);
  for (const ContainerSpec& spec : store.containers()) {
    Status s =
        (*broker)->CreateTopic(config.kafka.topic_prefix + spec.name, config.kafka.partitions);
    if (!s.ok()) {
      FEEDD_LOG(kError, "main") << s.ToString();
      return kExitStartupFailure;
    }
  }
  if (config.kafka.heartbeat_interval_ms > 0) {
    if (Status s = (*broker)->CreateTopic(HeartbeatTopic(config.kafka), 1); !s.ok()) {
      FEEDD_LOG(kError, "main") << s.ToString();
      return kExitStartupFailure;
    }
  }
  return kExitOk;
}

// Starts Kafka unless kafka.brokers = none. The publisher never blocks
// start-up on the broker.
int StartKafka(const DaemonConfig& config, DocumentStore* store, Kafka* kafka) {
  if (config.kafka.brokers == KafkaBrokers::kNone) return kExitOk;
  kafka->embedded = config.kafka.brokers == KafkaBrokers::kEmbedded;
  if (kafka->embedded) {
    if (int rc = StartEmbeddedBroker(config, *store, &kafka->broker); rc != kExitOk) return rc;
  }
  kafka->bootstrap = kafka->embedded ? kafka->broker->bootstrap() : config.kafka.bootstrap;
  auto started = Publisher::Start(store, config.kafka, *kafka->bootstrap, kafka->embedded);
  if (!started.ok()) {
    FEEDD_LOG(kError, "main") << "cannot start the Kafka publisher: "
                              << started.status().ToString();
    return kExitStartupFailure;
  }
  kafka->publisher = std::move(*started);
  FEEDD_LOG(kInfo, "main") << "kafka bootstrap " << *kafka->bootstrap
                           << (kafka->embedded ? " (embedded, in-memory)" : "");
  return kExitOk;
}

// What is wrong with the processors and containers of `config`, and, when it
// declares them, that none comes from the default scenario.
std::string ScenarioError(const DaemonConfig& config, const Status& status) {
  if (config.default_scenario) return status.message();
  return status.message() +
         " (the configuration declares its containers and processors, so none comes from the "
         "built-in configs/feedd.conf: docs/configuration.md)";
}

// Creates and starts the processors of the configuration (processors.enabled).
int StartProcessors(const DaemonConfig& config, DocumentStore* store, bool kafka_enabled,
                    ViewCommitProbe& view_commit_probe,
                    std::unique_ptr<ProcessorManager>* processors) {
  if (!config.processors_enabled) return kExitOk;
  auto created =
      ProcessorManager::Create(store, config.processor_settings, kafka_enabled,
                               config.processors_max_admin_tasks, view_commit_probe.Observer());
  if (!created.ok()) {
    FEEDD_LOG(kError, "main") << "bad processor configuration: "
                              << ScenarioError(config, created.status());
    return kExitBadConfig;
  }
  *processors = std::move(*created);
  if (Status s = (*processors)->Start(); !s.ok()) {
    FEEDD_LOG(kError, "main") << "cannot start processors: " << s.ToString();
    (*processors)->Stop();
    return kExitStartupFailure;
  }
  return kExitOk;
}

// The jobs: the processors' registry, or the daemon's own (`own_jobs`) when
// there are no processors (import jobs). Import jobs that were running when
// the daemon stopped are failed by the registry.
int OpenJobs(const DaemonConfig& config, ProcessorManager* processors,
             std::unique_ptr<JobRegistry>* own_jobs) {
  if (processors) return kExitOk;
  auto opened = JobRegistry::Open(config.store.data_dir + "/" + ProcessorManager::kJobsFile,
                                  config.store.clock);
  if (!opened.ok()) {
    FEEDD_LOG(kError, "main") << "cannot open the jobs: " << opened.status().ToString();
    return kExitStartupFailure;
  }
  *own_jobs = std::move(*opened);
  return kExitOk;
}

// Empties `import_spool_dir` of the spools of import jobs the restart failed.
int PrepareImportSpool(const std::string& import_spool_dir, ProcessorManager* processors) {
  size_t stale_spools = 0;
  if (Status s = ResetSpoolDirectory(import_spool_dir, &stale_spools); !s.ok()) {
    FEEDD_LOG(kError, "main") << "cannot prepare the import spool: " << s.message();
    if (processors) processors->Stop();
    return kExitStartupFailure;
  }
  if (stale_spools > 0) {
    FEEDD_LOG(kInfo, "main") << "removed " << stale_spools
                             << " import spool(s) of jobs the restart failed";
  }
  return kExitOk;
}

ApiRouter::Options RouterOptions(const DaemonConfig& config, const Kafka& kafka,
                                 ProcessorManager* processors, LongPollProbe& long_poll_probe,
                                 ImportProbe* import_probe, const std::string& import_spool_dir,
                                 JobRegistry* jobs) {
  ApiRouter::Options options;
  options.publisher = kafka.publisher.get();
  options.embedded_broker = kafka.embedded;
  options.processors = processors;
  options.query_limits = config.query_limits;
  options.feed_max_page_bytes = config.feed_max_page_bytes;
  options.query_threads = config.query_threads;
  options.query_max_queued = config.query_max_queued;
  options.polls_waiting = long_poll_probe.waiting();
  options.import_limits.batch_bytes = config.import_batch_bytes;
  options.import_limits.sync_bytes = config.import_sync_bytes;
  options.import_limits.max_item_bytes = config.store.max_item_bytes;
  options.import_max_concurrent = config.import_max_concurrent;
  options.import_probe = import_probe;
  options.import_spool_dir = import_spool_dir;
  options.import_spool_max_bytes = config.import_spool_max_bytes;
  options.jobs = jobs;
  return options;
}

// Serves `handler` on the bound API port; `api` is its address.
int ServeApi(const DaemonConfig& config, HttpServer& http, HttpHandler* handler, std::string* api) {
  if (Status status = http.Start(handler); !status.ok()) {
    FEEDD_LOG(kError, "main") << "cannot start the HTTP API: " << status.ToString();
    return kExitStartupFailure;
  }
  *api = http.bound_address();
  FEEDD_LOG(kInfo, "main") << "api listening on " << *api
                           << (config.http_tls_cert_file.empty()        ? " (HTTP)"
                               : config.http_tls_client_ca_file.empty() ? " (HTTPS)"
                                                                        : " (HTTPS, mTLS)");
  return kExitOk;
}

// Writes the ready file (when set) and tells systemd.
int AnnounceReady(const DaemonConfig& config, const std::string& api,
                  const std::string& metrics_address, const std::optional<std::string>& bootstrap,
                  SystemdNotifier& notifier) {
  if (!config.ready_file.empty()) {
    Status status =
        WriteFileAtomically(config.ready_file, ReadyFileJson(api, metrics_address, bootstrap));
    if (!status.ok()) {
      FEEDD_LOG(kError, "main") << "cannot write the ready file: " << status.ToString();
      return kExitStartupFailure;
    }
  }
  FEEDD_LOG(kInfo, "main") << "ready";
  notifier.Ready("serving, api on " + api);
  return kExitOk;
}

// SIGHUP, for one server: reloads the certificate of `cert_file` (none: no
// TLS there); a reload that fails keeps what was loaded before.
void ReloadTls(const std::string& cert_file, const std::function<Status()>& reload) {
  if (cert_file.empty()) return;
  if (Status s = reload(); !s.ok()) {
    FEEDD_LOG(kError, "main") << "SIGHUP: cannot reload the TLS certificate " << cert_file
                              << ", keeping the one loaded before: " << s.message();
  } else {
    FEEDD_LOG(kInfo, "main") << "SIGHUP: reloaded the TLS certificate " << cert_file
                             << " for new connections";
  }
}

// SIGHUP: reloads the TLS certificates and the tokens (`auth`, when the API
// authenticates, and /metrics' `metrics_credentials`); a reload that fails
// keeps what was loaded before.
void Reload(const DaemonConfig& config, HttpServer& http, MetricsServer& metrics, AuthHandler* auth,
            MetricsCredentials& metrics_credentials) {
  ReloadTls(config.http_tls_cert_file, [&http] { return http.ReloadTls(); });
  ReloadTls(config.metrics_tls_cert_file, [&metrics] { return metrics.ReloadTls(); });
  if (auth == nullptr) return;
  Result<std::shared_ptr<const TokenSet>> reloaded = LoadTokens(config);
  if (!reloaded.ok()) {
    FEEDD_LOG(kError, "main") << "SIGHUP: cannot reload auth.tokens_file, keeping the tokens "
                                 "loaded before: "
                              << reloaded.status().message();
    return;
  }
  FEEDD_LOG(kInfo, "main") << "SIGHUP: reloaded " << (*reloaded)->size() << " token(s) from "
                           << config.auth_tokens_file;
  metrics_credentials.SetTokens(*reloaded);
  auth->SetTokens(std::move(*reloaded));
}

// Serves SIGHUP with `reload` until SIGINT or SIGTERM, whose number it
// returns; then a second signal kills at once (default dispositions).
int WaitForStopSignal(boost::asio::io_context& signal_io, boost::asio::signal_set& signals,
                      const std::function<void()>& reload) {
  int signal_number = 0;
  std::function<void(const boost::system::error_code&, int)> on_signal =
      [&](const boost::system::error_code& ec, int number) {
        if (ec) return;
        if (number != SIGHUP) {
          signal_number = number;
          return;
        }
        reload();
        signals.async_wait(on_signal);
      };
  signals.async_wait(on_signal);
  signal_io.run();
  signals.clear();
  return signal_number;
}

int Run(const DaemonConfig& config) {
  // Installed before anything starts, so a signal during start-up is not
  // lost: it stops the daemon (or reloads) as soon as it serves.
  boost::asio::io_context signal_io(1);
  boost::asio::signal_set signals(signal_io, SIGINT, SIGTERM, SIGHUP);
  std::signal(SIGPIPE, SIG_IGN);

  std::shared_ptr<const TokenSet> tokens;
  if (int rc = LoadSecurity(config, &tokens); rc != kExitOk) return rc;
  LogStarting(config);

  // Both ports first: a taken one stops start-up before the data directory
  // is opened (and locked). API connections wait in the backlog until the
  // API serves; /metrics serves the registry at once.
  // /metrics' basic authentication (metrics.authenticate). Declared before
  // `metrics`, which uses it until it stops.
  MetricsCredentials metrics_credentials(tokens);
  MetricsServer metrics;
  HttpProbe http_probe(metrics.registry());
  // Before the server: an import's last callbacks may run as its
  // io_context is destroyed.
  ImportProbe import_probe(metrics.registry());
  // Before the store, the processors and the router, which report to them
  // until they go.
  CommitProbe commit_probe(metrics.registry());
  ViewCommitProbe view_commit_probe(metrics.registry());
  LongPollProbe long_poll_probe(metrics.registry());
  HttpServer http(HttpOptions(config, &http_probe));
  std::string metrics_address;
  if (int rc = BindPorts(config, http, metrics, metrics_credentials, &metrics_address);
      rc != kExitOk) {
    return rc;
  }

  std::unique_ptr<DocumentStore> store;
  if (int rc = OpenStore(config, commit_probe, &store); rc != kExitOk) return rc;

  // systemd (Type=notify, WatchdogSec): no-op without NOTIFY_SOCKET. Declared
  // after `store` so its watchdog thread is joined before the store goes.
  SystemdNotifier notifier;
  // Pings go on while the store is below its disk reserve or recovers from
  // a failed write; they stop when only a restart can help.
  notifier.StartWatchdog(
      [&store] { return store && store->Health().code() != ErrorCode::kStorageError; });

  Kafka kafka;
  if (int rc = StartKafka(config, store.get(), &kafka); rc != kExitOk) return rc;
  std::unique_ptr<ProcessorManager> processors;
  if (int rc = StartProcessors(config, store.get(), kafka.bootstrap.has_value(), view_commit_probe,
                               &processors);
      rc != kExitOk) {
    return rc;
  }

  std::unique_ptr<JobRegistry> own_jobs;
  if (int rc = OpenJobs(config, processors.get(), &own_jobs); rc != kExitOk) return rc;
  const std::string import_spool_dir = config.store.data_dir + "/" + kImportSpoolDir;
  if (int rc = PrepareImportSpool(import_spool_dir, processors.get()); rc != kExitOk) return rc;

  ApiRouter router(
      store.get(),
      RouterOptions(config, kafka, processors.get(), long_poll_probe, &import_probe,
                    import_spool_dir, processors ? &processors->jobs() : own_jobs.get()),
      http.io_context());
  // Authentication inside the metering, so refusals count as requests too.
  std::optional<AuthHandler> auth;
  HttpHandler* served = &router;
  if (tokens) {
    auth.emplace(&router, tokens, &http_probe);
    served = &*auth;
  }
  MeteredHandler metered_router(served, &http_probe);

  // Reverse order of start-up. The store goes before the router and the
  // server: its callbacks reference both. Running rebuilds and verifies are
  // cancelled and joined first, so their requests are answered (503) within
  // the HTTP drain. Processors record their applied watermark, the
  // publisher delivers what is in flight and records its checkpoint, then
  // the store closes.
  auto shut_down = [&] {
    notifier.Stopping();  // STOPPING=1; joins the watchdog thread
    metrics.Stop();
    if (processors) processors->admin_tasks().Shutdown();
    router.StopImportJobs();
    http.Stop();
    if (processors) processors->Stop();
    if (kafka.publisher) kafka.publisher->Stop();
    store->Close();
    processors.reset();
    store.reset();
    kafka.publisher.reset();
    kafka.broker.reset();
  };

  std::string api;
  if (int rc = ServeApi(config, http, &metered_router, &api); rc != kExitOk) {
    shut_down();
    return rc;
  }

  // The exposer holds collectables weakly: this one lives until the end.
  auto state =
      std::make_shared<StateCollector>(store.get(), kafka.publisher.get(), processors.get());
  metrics.AddCollectable(state);
  FEEDD_LOG(kInfo, "main") << "metrics on "
                           << (config.metrics_tls_cert_file.empty() ? "http://" : "https://")
                           << metrics_address << "/metrics";

  if (int rc = AnnounceReady(config, api, metrics_address, kafka.bootstrap, notifier);
      rc != kExitOk) {
    shut_down();
    return rc;
  }

  int signal_number = WaitForStopSignal(signal_io, signals, [&] {
    Reload(config, http, metrics, auth ? &*auth : nullptr, metrics_credentials);
  });
  FEEDD_LOG(kInfo, "main") << "received " << strsignal(signal_number) << ", stopping";
  shut_down();
  if (!config.ready_file.empty()) unlink(config.ready_file.c_str());
  FEEDD_LOG(kInfo, "main") << "stopped";
  return kExitOk;
}

// --check-config: what start-up checks before it touches anything.
int CheckConfig(const DaemonConfig& config) {
  if (Result<std::shared_ptr<const TokenSet>> tokens = LoadTokens(config); !tokens.ok()) {
    std::cerr << "feedd: cannot load auth.tokens_file: " << tokens.status().message() << "\n";
    return kExitBadConfig;
  }
  if (Status tls = CheckTlsFiles(config); !tls.ok()) {
    std::cerr << "feedd: cannot load the TLS files: " << tls.message() << "\n";
    return kExitBadConfig;
  }
  if (config.processors_enabled) {
    Status s = ProcessorManager::Validate(config.processor_settings, config.store.containers,
                                          config.kafka.brokers != KafkaBrokers::kNone);
    if (!s.ok()) {
      std::cerr << "feedd: " << ScenarioError(config, s) << "\n";
      return kExitBadConfig;
    }
  }
  std::cout << "feedd: configuration OK\n";
  return kExitOk;
}

}  // namespace
}  // namespace feedd

int main(int argc, char** argv) {
  // `feedd worker ...`: processors outside the daemon (daemon/worker_main.h).
  const bool worker = argc > 1 && std::strcmp(argv[1], "worker") == 0;
  if (worker) {
    argv[1] = argv[0];
    ++argv;
    --argc;
  }
  feedd::CommandFlags flags;
  feedd::Result<feedd::DaemonConfig> config = feedd::LoadConfig(argc, argv, environ, &flags);
  if (flags.help) {
    std::cout << feedd::OptionsHelp();
    return feedd::kExitOk;
  }
  if (flags.version) {
    std::cout << "feedd " << FEEDD_VERSION << "\n";
    return feedd::kExitOk;
  }
  if (!config.ok()) {
    std::cerr << "feedd: " << config.status().message() << "\n";
    return feedd::kExitBadConfig;
  }
  if (!worker) {
    feedd::Status s = feedd::CheckFdLimit(*config, /*raise=*/!flags.check_config);
    if (!s.ok()) {
      std::cerr << "feedd: " << s.message() << "\n";
      return feedd::kExitBadConfig;
    }
  }
  if (flags.check_config) return feedd::CheckConfig(*config);
  feedd::SetLogLevel(config->log_level);
  try {
    return worker ? feedd::RunWorker(*config) : feedd::Run(*config);
  } catch (const std::exception& e) {
    FEEDD_LOG(kError, "main") << "fatal: " << e.what();
    return feedd::kExitStartupFailure;
  }
}
