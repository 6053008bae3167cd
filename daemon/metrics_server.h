// MetricsServer: the Prometheus registry in which the modules' probes
// register their families (docs/metrics.md), and the pull exposer serving
// it on metrics.listen: CivetWeb with two serving threads, no keep-alive,
// and a request timeout, so that a client that sends or reads nothing holds
// a thread for that long at most.
//
// Thread-safety: the registry may be used from any thread.
// Ownership: owns the registry and exposer; a collectable given to
// AddCollectable() is shared with the exposer.
#pragma once

#include <prometheus/exposer.h>
#include <prometheus/registry.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "daemon/host_port.h"
#include "util/status.h"

namespace feedd {

class MetricsServer {
 public:
  MetricsServer();
  ~MetricsServer();

  prometheus::Registry& registry() { return *registry_; }

  // Checks HTTP basic authentication (user, password) of a /metrics request;
  // called on the serving threads.
  using BasicAuth = std::function<bool(const std::string& user, const std::string& password)>;

  // Binds `listen` and serves the registry there, dropping a client after
  // `request_timeout` without progress; returns the bound HOST:PORT. Fails
  // with `unavailable` naming the cause (e.g. "Address already in use").
  // Called before storage opens, so a taken port stops start-up first.
  // With `auth`, a request without credentials it accepts is answered 401
  // with `WWW-Authenticate: Basic realm="feedd"`.
  Result<std::string> Start(const HostPort& listen, std::chrono::milliseconds request_timeout,
                            BasicAuth auth = nullptr);
  // Serves `state` too (a collector of what starts after Start(): the store,
  // the publisher, processors). REQUIRES: Start() ok.
  void AddCollectable(std::shared_ptr<prometheus::Collectable> state);
  // Stops serving (before what the collectable samples goes away).
  void Stop() { exposer_.reset(); }

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<prometheus::Exposer> exposer_;
};

}  // namespace feedd
