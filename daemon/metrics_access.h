// Who may read a metrics port: the daemon's (metrics.listen) and a worker's
// (worker.metrics_listen) are configured by the same options, built here
// (docs/security.md, "The metrics port"):
//
//   - metrics.tls_cert_file / tls_key_file: HTTPS; metrics.tls_client_ca_file:
//     client certificates that CA signed are required (mTLS);
//   - metrics.authenticate: HTTP basic authentication, user a token's NAME
//     and password its secret, checked against auth.tokens_file
//     (MetricsCredentials, replaced on SIGHUP).
//
// Thread-safety: MetricsCredentials may be used from any thread (SetTokens
// from a SIGHUP reload, Authenticates on the metrics server's thread); the
// functions are pure functions of their arguments but for reading files.
// Ownership: MetricsServerOptions' callback borrows the credentials, which
// must outlive the MetricsServer started with it.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string_view>

#include "daemon/auth_tokens.h"
#include "daemon/host_port.h"
#include "daemon/metrics_server.h"
#include "daemon/options.h"
#include "util/status.h"
#include "util/tls_context.h"

namespace feedd {

// The tokens of auth.tokens_file, or nullptr when it is not set.
Result<std::shared_ptr<const TokenSet>> LoadTokens(const DaemonConfig& config);

// HTTPS on a metrics port (metrics.tls_*), or nullopt.
std::optional<TlsServerFiles> MetricsTls(const DaemonConfig& config);

// Loads `files` once (none: OK), so that a bad certificate or key is a
// configuration error (exit 2) before anything starts; the message names
// `options` (e.g. "metrics.tls_*").
Status CheckTlsFilesLoad(const std::optional<TlsServerFiles>& files, const std::string& options);

// The tokens a metrics port's basic authentication accepts.
class MetricsCredentials {
 public:
  explicit MetricsCredentials(std::shared_ptr<const TokenSet> tokens);

  // Takes effect for the next request (a SIGHUP reload).
  void SetTokens(std::shared_ptr<const TokenSet> tokens);
  // Whether `secret` is the secret of the token named `name` (any role). A
  // refusal is logged (component "audit", at most one line per 10 s).
  bool Authenticates(std::string_view name, std::string_view secret) const;

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const TokenSet> tokens_;  // GUARDED_BY(mu_); nullptr refuses all
};

// The options of a metrics port on `listen`: metrics.request_timeout_ms,
// MetricsTls(config), and with metrics.authenticate basic authentication
// against `credentials` (which may be nullptr only without it).
MetricsServer::Options MetricsServerOptions(const DaemonConfig& config, const HostPort& listen,
                                            const MetricsCredentials* credentials);

}  // namespace feedd
