#include "daemon/worker_main.h"

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/json.hpp>
#include <csignal>
#include <cstring>
#include <functional>
#include <iostream>
#include <optional>
#include <thread>

#include "daemon/metrics_access.h"
#include "daemon/metrics_server.h"
#include "daemon/systemd_notifier.h"
#include "processors/http_view_context.h"
#include "processors/processor_manager.h"
#include "processors/view_commit_probe.h"
#include "processors/worker_probe.h"
#include "util/http_client.h"
#include "util/json_parse.h"
#include "util/logging.h"
#include "util/tls_context.h"

namespace feedd {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitStartupFailure = 1;
constexpr int kExitBadConfig = 2;

// The embedded broker's address, as the daemon reports it.
Result<std::string> EmbeddedBootstrap(HttpClient& client) {
  auto reply = client.Send("GET", "/v1/feed");
  if (!reply.ok()) return reply.status();
  if (Status s = StatusOfReply(*reply); !s.ok()) return s;
  Result<boost::json::value> info = ParseJson(reply->body);
  const boost::json::value* bootstrap = nullptr;
  if (info.ok() && info->is_object()) {
    if (const auto* kafka = info->as_object().if_contains("kafka"); kafka && kafka->is_object()) {
      bootstrap = kafka->as_object().if_contains("bootstrapServers");
    }
  }
  if (bootstrap == nullptr || !bootstrap->is_string()) {
    return Status(ErrorCode::kUnavailable, "the daemon at " + client.address() +
                                               " does not publish to Kafka (kafka.brokers = none)");
  }
  return std::string(bootstrap->as_string());
}

// The worker's token and TLS context for worker.api.
Result<HttpClientSecurity> ApiSecurity(const DaemonConfig& config) {
  HttpClientSecurity security;
  Result<std::string> token = ClientBearerToken(config.worker_token_file);
  if (!token.ok()) return token.status();
  security.bearer_token = std::move(*token);
  if (!config.worker_tls_ca_file.empty()) {
    auto tls = MakeClientTlsContext(TlsClientFiles{
        config.worker_tls_ca_file, config.worker_tls_cert_file, config.worker_tls_key_file});
    if (!tls.ok()) return tls.status();
    security.tls = std::move(*tls);
  } else if (!config.worker_tls_cert_file.empty()) {
    return Status(ErrorCode::kInvalidRequest,
                  "worker.tls_cert_file needs worker.tls_ca_file (HTTPS)");
  }
  return security;
}

// SIGHUP: the metrics port's certificate and key (metrics.tls_*) for new
// connections and, with metrics.authenticate, the tokens of
// auth.tokens_file. What fails to load is kept as it was, and logged.
void ReloadMetricsAccess(const DaemonConfig& config, MetricsServer& metrics,
                         MetricsCredentials& credentials) {
  if (!config.metrics_tls_cert_file.empty()) {
    if (Status s = metrics.ReloadTls(); !s.ok()) {
      FEEDD_LOG(kError, "worker") << "SIGHUP: cannot reload the TLS certificate "
                                  << config.metrics_tls_cert_file
                                  << ", keeping the one loaded before: " << s.message();
    } else {
      FEEDD_LOG(kInfo, "worker") << "SIGHUP: reloaded the TLS certificate "
                                 << config.metrics_tls_cert_file << " for new connections";
    }
  }
  if (!config.metrics_authenticate) return;
  Result<std::shared_ptr<const TokenSet>> reloaded = LoadTokens(config);
  if (!reloaded.ok()) {
    FEEDD_LOG(kError, "worker") << "SIGHUP: cannot reload auth.tokens_file, keeping the tokens "
                                   "loaded before: "
                                << reloaded.status().message();
    return;
  }
  FEEDD_LOG(kInfo, "worker") << "SIGHUP: reloaded " << (*reloaded)->size() << " token(s) from "
                             << config.auth_tokens_file;
  credentials.SetTokens(std::move(*reloaded));
}

}  // namespace

int RunWorker(const DaemonConfig& config) {
  boost::asio::io_context signal_io(1);
  boost::asio::signal_set signals(signal_io, SIGINT, SIGTERM, SIGHUP);
  std::signal(SIGPIPE, SIG_IGN);
  std::atomic<bool> stop{false};
  // SIGHUP asks the main loop to reload the metrics port's TLS files and
  // tokens (ReloadMetricsAccess), on the thread that controls `metrics`.
  std::atomic<bool> reload{false};
  std::function<void(const boost::system::error_code&, int)> on_signal =
      [&](const boost::system::error_code& ec, int number) {
        if (ec) return;
        if (number != SIGHUP) {
          stop = true;
          return;
        }
        reload = true;
        signals.async_wait(on_signal);
      };
  signals.async_wait(on_signal);
  std::thread signal_thread([&] { signal_io.run(); });
  auto finish = [&](int code) {
    signals.cancel();
    signal_io.stop();
    signal_thread.join();
    return code;
  };

  if (config.kafka.brokers == KafkaBrokers::kNone) {
    FEEDD_LOG(kError, "worker") << "feedd worker consumes Kafka, but kafka.brokers = none";
    return finish(kExitBadConfig);
  }
  // The tokens only serve the metrics port: without metrics.authenticate a
  // worker does not need the daemon's auth.tokens_file on its host.
  Result<std::shared_ptr<const TokenSet>> tokens =
      config.metrics_authenticate ? LoadTokens(config) : std::shared_ptr<const TokenSet>();
  if (!tokens.ok()) {
    FEEDD_LOG(kError, "worker") << "cannot load auth.tokens_file: " << tokens.status().message();
    return finish(kExitBadConfig);
  }
  if (Status tls = CheckTlsFilesLoad(MetricsTls(config), "metrics.tls_*"); !tls.ok()) {
    FEEDD_LOG(kError, "worker") << "cannot load the TLS files: " << tls.message();
    return finish(kExitBadConfig);
  }
  Result<HttpClientSecurity> security = ApiSecurity(config);
  if (!security.ok()) {
    FEEDD_LOG(kError, "worker") << security.status().message();
    return finish(kExitBadConfig);
  }
  FEEDD_LOG(kInfo, "worker") << "feedd worker " << FEEDD_VERSION << " starting; daemon at "
                             << (security->tls ? "https://" : "http://") << config.worker_api
                             << (security->bearer_token.empty() ? "" : " with a bearer token");
  // The daemon may start after us (or restart): wait for it.
  HttpClient client(config.worker_api, std::chrono::seconds(10), *security);
  Result<std::vector<ContainerSpec>> containers = FetchContainers(client);
  for (int attempt = 0; !containers.ok() && !stop; ++attempt) {
    // A token the daemon refuses will not become right by waiting.
    if (containers.status().code() == ErrorCode::kUnauthorized ||
        containers.status().code() == ErrorCode::kForbidden) {
      FEEDD_LOG(kError, "worker") << "the daemon refuses the worker's token "
                                     "(worker.token_file, $FEEDD_TOKEN_FILE, $FEEDD_TOKEN): "
                                  << containers.status().ToString();
      return finish(kExitBadConfig);
    }
    if (attempt % 10 == 0) {
      FEEDD_LOG(kWarning, "worker") << "waiting for the daemon: " << containers.status().ToString();
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));
    containers = FetchContainers(client);
  }
  if (stop) return finish(kExitOk);

  std::string bootstrap = config.kafka.bootstrap;
  if (config.kafka.brokers == KafkaBrokers::kEmbedded) {
    auto embedded = EmbeddedBootstrap(client);
    if (!embedded.ok()) {
      FEEDD_LOG(kError, "worker") << embedded.status().message();
      return finish(kExitStartupFailure);
    }
    bootstrap = *embedded;
  }

  // /metrics' basic authentication (metrics.authenticate). Declared before
  // `metrics`, which uses it until it stops.
  MetricsCredentials metrics_credentials(*tokens);
  MetricsServer metrics;
  ViewCommitProbe view_commit_probe(metrics.registry());
  WorkerOptions options;
  options.api = config.worker_api;
  options.api_security = *security;
  options.kafka =
      KafkaConsumerConfig{bootstrap, config.kafka.topic_prefix, config.kafka.properties};
  auto created =
      ProcessorManager::CreateWorkers(config.processor_settings, *containers, options,
                                      config.worker_processors, view_commit_probe.Observer());
  if (!created.ok()) {
    FEEDD_LOG(kError, "worker") << "bad processor configuration: " << created.status().message();
    return finish(kExitBadConfig);
  }
  std::vector<std::unique_ptr<ProcessorWorker>> workers = std::move(*created);
  // systemd (Type=notify, WatchdogSec; configs/feedd-worker@.service): no-op
  // without NOTIFY_SOCKET. READY=1 once every processor runs and metrics
  // serve. Declared after `workers`, which its watchdog's health check reads,
  // so its thread is joined before they go.
  SystemdNotifier notifier;
  if (config.worker_verify) {
    int rc = kExitOk;
    for (auto& w : workers) {
      auto differences = w->Verify();
      if (!differences.ok()) {
        std::cout << w->name() << ": cannot verify: " << differences.status().ToString() << "\n";
        rc = kExitStartupFailure;
      } else if (differences->empty()) {
        std::cout << w->name() << ": ok\n";
      } else {
        rc = kExitStartupFailure;
        std::cout << w->name() << ": " << differences->size() << " difference(s)\n";
        for (const auto& d : *differences) std::cout << "  " << d << "\n";
      }
    }
    return finish(rc);
  }
  auto stop_all = [&] {
    notifier.Stopping();  // STOPPING=1; joins the watchdog thread
    metrics.Stop();
    for (auto& w : workers) w->Stop();
  };
  for (auto& w : workers) {
    if (Status s = w->Start(); !s.ok()) {
      FEEDD_LOG(kError, "worker") << w->name() << ": " << s.ToString();
      stop_all();
      return finish(kExitStartupFailure);
    }
  }
  // The metrics server holds collectables weakly: this one lives until the end.
  auto collector = std::make_shared<WorkerProbe>(&workers);
  auto address = metrics.Start(
      MetricsServerOptions(config, config.worker_metrics_listen, &metrics_credentials));
  if (!address.ok()) {
    FEEDD_LOG(kError, "worker") << address.status().message() << " (worker.metrics_listen)";
    stop_all();
    return finish(kExitStartupFailure);
  }
  metrics.AddCollectable(collector);
  FEEDD_LOG(kInfo, "worker") << "ready: " << workers.size() << " processor(s), metrics on "
                             << (config.metrics_tls_cert_file.empty() ? "http://" : "https://")
                             << *address << "/metrics";
  // Healthy while every processor can report its status: a worker whose
  // threads deadlock on its state stops pinging and systemd restarts it.
  notifier.StartWatchdog([&workers] {
    for (const auto& w : workers) {
      if (w->GetStatus().state == ProcessorState::kStopped) return false;
    }
    return true;
  });
  notifier.Ready(std::to_string(workers.size()) + " processor(s), metrics on " + *address);
  while (!stop) {
    if (reload.exchange(false)) ReloadMetricsAccess(config, metrics, metrics_credentials);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  FEEDD_LOG(kInfo, "worker") << "stopping";
  stop_all();
  FEEDD_LOG(kInfo, "worker") << "stopped";
  return finish(kExitOk);
}

}  // namespace feedd
