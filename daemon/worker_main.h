// RunWorker: `feedd worker` - runs processor instances outside the storage
// daemon (docs/processors.md, "Scale-out with feedd worker"). It reads the
// same configuration as the daemon, finds the daemon at worker.api (waiting
// for it), takes the Kafka bootstrap from the configuration or, with the
// embedded broker, from the daemon (GET /v1/feed), runs the selected
// ProcessorWorkers and serves their metrics on worker.metrics_listen, with
// the daemon's metrics.tls_* and metrics.authenticate (metrics_access.h).
// SIGTERM/SIGINT commit what is applied, leave the consumer groups and exit 0.
// SIGHUP reloads the metrics port's TLS certificate and key and the tokens of
// auth.tokens_file; a reload that fails keeps what was loaded and logs why.
// With worker.verify = true it checks the views instead and exits.
//
// Exit codes: 0 stopped by a signal (verify: views right), 1 start-up failure
// (verify: differences), 2 bad configuration.
#pragma once

#include "daemon/options.h"

namespace feedd {

int RunWorker(const DaemonConfig& config);

}  // namespace feedd
