#include "daemon/metrics_access.h"

#include <string>
#include <utility>

#include "util/logging.h"

namespace feedd {
namespace {

constexpr int kRefusalLogSeconds = 10;

}  // namespace

Result<std::shared_ptr<const TokenSet>> LoadTokens(const DaemonConfig& config) {
  if (config.auth_tokens_file.empty()) return std::shared_ptr<const TokenSet>();
  Result<TokenSet> tokens = LoadTokensFile(config.auth_tokens_file);
  if (!tokens.ok()) return tokens.status();
  return std::make_shared<const TokenSet>(std::move(*tokens));
}

std::optional<TlsServerFiles> MetricsTls(const DaemonConfig& config) {
  if (config.metrics_tls_cert_file.empty()) return std::nullopt;
  return TlsServerFiles{config.metrics_tls_cert_file, config.metrics_tls_key_file,
                        config.metrics_tls_client_ca_file};
}

Status CheckTlsFilesLoad(const std::optional<TlsServerFiles>& files, const std::string& options) {
  if (!files) return Status::Ok();
  Result<std::shared_ptr<boost::asio::ssl::context>> tls = MakeServerTlsContext(*files);
  if (tls.ok()) return Status::Ok();
  return Status(tls.status().code(), tls.status().message() + " (" + options + ")");
}

MetricsCredentials::MetricsCredentials(std::shared_ptr<const TokenSet> tokens)
    : tokens_(std::move(tokens)) {}

void MetricsCredentials::SetTokens(std::shared_ptr<const TokenSet> tokens) {
  std::lock_guard<std::mutex> lock(mu_);
  tokens_ = std::move(tokens);
}

bool MetricsCredentials::Authenticates(std::string_view name, std::string_view secret) const {
  std::shared_ptr<const TokenSet> tokens;
  {
    std::lock_guard<std::mutex> lock(mu_);
    tokens = tokens_;
  }
  const TokenEntry* token = tokens ? tokens->Find(secret) : nullptr;
  bool ok = token != nullptr && token->name == name;
  if (!ok) {
    FEEDD_LOG_EVERY_N_SEC(kWarning, "audit", kRefusalLogSeconds)
        << "refused a /metrics request: no token named '" << name.substr(0, 64)
        << "' with that secret";
  }
  return ok;
}

MetricsServer::Options MetricsServerOptions(const DaemonConfig& config, const HostPort& listen,
                                            const MetricsCredentials* credentials) {
  MetricsServer::Options options;
  options.listen = listen;
  options.request_timeout = std::chrono::milliseconds(config.metrics_request_timeout_ms);
  options.tls = MetricsTls(config);
  if (config.metrics_authenticate) {
    options.auth = [credentials](const std::string& user, const std::string& password) {
      return credentials != nullptr && credentials->Authenticates(user, password);
    };
  }
  return options;
}

}  // namespace feedd
