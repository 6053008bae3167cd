#include "daemon/metrics_server.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace feedd {
namespace {

constexpr int kServingThreads = 2;

// Why CivetWeb could not listen on `listen` (it only throws "null context"):
// binds a socket there the way it does and returns the error.
std::string ListenError(const HostPort& listen) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  int rc = getaddrinfo(listen.host.empty() ? nullptr : listen.host.c_str(),
                       std::to_string(listen.port).c_str(), &hints, &found);
  if (rc != 0) return gai_strerror(rc);
  std::string error = "unknown error";
  for (addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    int fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
    if (fd < 0) {
      error = std::strerror(errno);
      continue;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    bool bound = bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && ::listen(fd, 1) == 0;
    if (!bound) error = std::strerror(errno);
    close(fd);
    if (bound) {
      error = "the address could be bound a moment later; another process may hold it";
      break;
    }
  }
  freeaddrinfo(found);
  return error;
}

}  // namespace

MetricsServer::MetricsServer() : registry_(std::make_shared<prometheus::Registry>()) {}

MetricsServer::~MetricsServer() = default;

Result<std::string> MetricsServer::Start(const HostPort& listen,
                                         std::chrono::milliseconds request_timeout,
                                         BasicAuth auth) {
  try {
    exposer_ = std::make_unique<prometheus::Exposer>(std::vector<std::string>{
        "listening_ports", listen.ToString(), "num_threads", std::to_string(kServingThreads),
        "request_timeout_ms", std::to_string(request_timeout.count()), "enable_keep_alive", "no"});
  } catch (const std::exception&) {
    return Status(ErrorCode::kUnavailable,
                  "cannot serve metrics on " + listen.ToString() + ": " + ListenError(listen));
  }
  exposer_->RegisterCollectable(registry_);
  if (auth) exposer_->RegisterAuth(std::move(auth), "feedd", "/metrics");
  std::vector<int> ports = exposer_->GetListeningPorts();
  HostPort bound = listen;
  if (!ports.empty()) bound.port = static_cast<uint16_t>(ports.front());
  return bound.ToString();
}

void MetricsServer::AddCollectable(std::shared_ptr<prometheus::Collectable> state) {
  exposer_->RegisterCollectable(state);
}

}  // namespace feedd
