// MetricsServer: the Prometheus registry in which the modules' probes
// register their families (docs/metrics.md), and the port serving it on
// metrics.listen (or worker.metrics_listen).
//
// Serving: feedd's own HttpServer (http_server.h), so the metrics port has
// the API's TLS (MetricsServerOptions::tls: HTTPS, mTLS, ReloadTls on
// SIGHUP), keep-alive and idle timeout. GET or HEAD /metrics answers the
// registry and every added collectable in the Prometheus text format
// (prometheus-cpp's TextSerializer, `text/plain; version=0.0.4`); another
// path is 404, another method 405. One I/O thread, at most
// kMaxMetricsConnections connections (more are refused and counted in
// feedd_metrics_connections_rejected_total{reason="max_connections"}, as
// are failed TLS handshakes), no request body.
//
// Thread-safety: the registry may be used from any thread; Start,
// AddCollectable, ReloadTls and Stop from the controlling thread.
// Ownership: owns the registry and the server; holds added collectables
// weakly (the caller keeps them alive until Stop()).
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/registry.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "daemon/host_port.h"
#include "util/status.h"
#include "util/tls_context.h"

namespace feedd {

class HttpServer;

constexpr size_t kMaxMetricsConnections = 16;

class MetricsServer {
 public:
  // Checks HTTP basic authentication (user, password) of a /metrics request;
  // called on the serving thread.
  using BasicAuth = std::function<bool(const std::string& user, const std::string& password)>;

  struct Options {
    HostPort listen;
    // A client that sends or reads nothing for this long is dropped (the
    // TLS handshake included); an idle keep-alive connection too.
    std::chrono::milliseconds request_timeout{3000};
    // HTTPS with these files; nullopt = plain HTTP.
    std::optional<TlsServerFiles> tls;
    // With it, a request without credentials it accepts is answered 401
    // with `WWW-Authenticate: Basic realm="feedd"`.
    BasicAuth auth;
  };

  MetricsServer();
  ~MetricsServer();  // Stop()
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  prometheus::Registry& registry() { return *registry_; }

  // Binds options.listen and serves there; returns the bound HOST:PORT.
  // Fails with `unavailable` naming the cause (e.g. "Address already in
  // use"), or invalid_request when the TLS files do not load. Called before
  // storage opens, so a taken port stops start-up first.
  Result<std::string> Start(Options options);
  // Serves `state` too (a collector of what starts after Start(): the store,
  // the publisher, processors). REQUIRES: Start() ok.
  void AddCollectable(const std::shared_ptr<prometheus::Collectable>& state);
  // HTTPS: loads the TLS files again for new connections; on failure the
  // previous ones stay in use. No-op for plain HTTP or before Start().
  Status ReloadTls();
  // Stops serving (before what the collectables sample goes away).
  // Idempotent.
  void Stop();

 private:
  class Handler;
  class Observer;

  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<Observer> observer_;
  std::unique_ptr<Handler> handler_;
  std::unique_ptr<HttpServer> server_;
};

}  // namespace feedd
