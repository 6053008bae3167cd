// DaemonConfig and LoadConfig(): feedd's configuration, read from the command
// line, the environment and an INI file.
//
// Every option is declared once, in the table in options.cc (name
// "section.key", default, description, validator), and turned into
// Boost.Program_options descriptions. Precedence, highest first:
//   1. command line   --section.key=VALUE (plus the contract's short aliases
//                     --data-dir, --listen, --metrics-listen, --ready-file)
//   2. environment    FEEDD_SECTION_KEY (upper-case name, '.' -> '_')
//   3. config file    --config FILE, INI with [section] headers
//   4. the declared default
// Dynamic keys, from the config file or the command line (--KEY=VALUE form):
//   container.<name>.partition_key / .indexes / .writers   containers
//   kafka.<property>                           passed through to librdkafka
//   processor.<name>.<key>                     read by processors/
// Any other unknown option is an error.
//
// The scenario rule: the containers and processors are the scenario, and a
// configuration declares it whole or not at all. When the config file and the
// command line together have any container.* or processor.* key, the
// containers are exactly the declared ones and the processors exactly the
// declared ones. When they have none, both are those of the built-in
// configs/feedd.conf (daemon/default_config.h). Keys that only tune a built-in
// processor (processor.<built-in name>.<key other than kind>, e.g.
// processor.feed.parallelism) declare nothing: the built-in scenario runs with
// them over its own. Neither storage/ nor processors/ knows a scenario
// (docs/configuration.md).
//
// Thread-safety: LoadConfig() is a pure function of its arguments (it reads
// only the named config file). DaemonConfig is a plain value.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "daemon/host_port.h"
#include "feed/kafka_options.h"
#include "storage/query.h"
#include "storage/store_options.h"
#include "util/logging.h"
#include "util/status.h"

namespace feedd {

// Filled by LoadConfig(); the defaults live in the option table (options.cc).
struct DaemonConfig {
  std::string config_file;  // --config, "" when none

  StoreOptions store;                // storage.*, feed.* and the containers
  uint64_t feed_max_page_bytes = 0;  // feed.max_page_bytes
  QueryLimits query_limits;          // query.max_*
  uint32_t query_threads = 0;        // query.threads
  uint32_t query_max_queued = 0;     // query.max_queued

  HostPort http_listen;
  uint32_t http_threads = 0;
  uint64_t http_max_request_bytes = 0;
  uint32_t http_idle_timeout_seconds = 0;
  uint32_t http_shutdown_grace_seconds = 0;
  uint32_t http_max_connections = 0;
  uint64_t http_max_buffered_bytes = 0;
  // http.tls_*: HTTPS when the certificate and key are set (both or
  // neither); a client CA file asks clients for certificates (mTLS).
  std::string http_tls_cert_file;
  std::string http_tls_key_file;
  std::string http_tls_client_ca_file;

  // auth.*: bearer tokens (docs/security.md). Without a tokens file the API
  // is open, which only a loopback http.listen allows unless
  // auth_allow_unauthenticated.
  std::string auth_tokens_file;  // "" = no authentication
  bool auth_allow_unauthenticated = false;

  // import.*: bulk imports (daemon/import_stream.h).
  uint64_t import_batch_bytes = 0;
  uint64_t import_sync_bytes = 0;
  uint32_t import_max_concurrent = 0;
  uint64_t import_spool_max_bytes = 0;

  HostPort metrics_listen;
  bool metrics_authenticate = false;  // basic authentication with the tokens
  uint32_t metrics_request_timeout_ms = 0;
  // metrics.tls_*: HTTPS on the metrics port, as http.tls_* on the API's.
  std::string metrics_tls_cert_file;
  std::string metrics_tls_key_file;
  std::string metrics_tls_client_ca_file;

  LogLevel log_level = LogLevel::kInfo;

  // kafka.*; every kafka.<property> not in the option table goes to
  // kafka.properties, keyed by <property> (e.g. "linger.ms").
  KafkaOptions kafka;

  // processor.<rest> keys, keyed by <rest> (e.g. "user_posts.kind"): the
  // declared ones, or the default scenario's.
  std::map<std::string, std::string> processor_settings;
  // true when no container or processor is declared (keys that tune a
  // built-in processor aside), so that the containers and processors are
  // those of the built-in configs/feedd.conf.
  bool default_scenario = false;
  // processors.enabled: run the processors of processor_settings.
  bool processors_enabled = true;
  size_t processors_max_admin_tasks = 2;  // rebuilds/verifies at once

  std::string ready_file;  // "" when none

  // feedd worker (docs/processors.md, "Scale-out"): the daemon's API, the
  // processors to run ("" = those with run = worker), and where to serve
  // the worker's metrics.
  std::string worker_api;
  // How the worker reaches the API: its bearer token (ClientBearerToken) and,
  // for HTTPS, the CA file (required) and a client certificate (mTLS).
  std::string worker_token_file;
  std::string worker_tls_ca_file;
  std::string worker_tls_cert_file;
  std::string worker_tls_key_file;
  std::vector<std::string> worker_processors;
  HostPort worker_metrics_listen;
  bool worker_verify = false;  // check the views and exit
  std::string instance_name;
};

// What the command line asked for besides running the daemon.
struct CommandFlags {
  bool help = false;          // --help: print OptionsHelp() and exit 0
  bool version = false;       // --version: print "feedd FEEDD_VERSION" and exit 0
  bool check_config = false;  // --check-config: validate, report, exit
};

// Reads the configuration. `envp` is a null-terminated "NAME=VALUE" array
// (may be null). On error the Status (invalid_request) names the bad option,
// e.g. "invalid value for http.threads: expected an integer in 1..64, got '0'".
// When --help or --version is given, neither the environment nor a config
// file is read and the returned configuration holds the defaults.
// REQUIRES: flags != nullptr.
Result<DaemonConfig> LoadConfig(int argc, const char* const* argv, const char* const* envp,
                                CommandFlags* flags);

// The --help text: usage line and every option with default and description.
std::string OptionsHelp();

}  // namespace feedd
