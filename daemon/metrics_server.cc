#include "daemon/metrics_server.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/text_serializer.h>

#include <mutex>
#include <string_view>
#include <vector>

#include "daemon/auth_tokens.h"
#include "daemon/http_server.h"
#include "daemon/http_util.h"
#include "util/logging.h"

namespace feedd {
namespace {

constexpr int kRefusalLogSeconds = 10;
constexpr auto kShutdownGrace = std::chrono::seconds(1);
constexpr std::string_view kTextFormat = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace

// Counts what the server refuses on the metrics port.
class MetricsServer::Observer : public HttpServerObserver {
 public:
  explicit Observer(prometheus::Registry& registry)
      : rejected_(prometheus::BuildCounter()
                      .Name("feedd_metrics_connections_rejected_total")
                      .Help("Connections to the metrics port not served, by reason")
                      .Register(registry)) {
    // At 0 before the first one, so that increase() sees it.
    for (const char* reason : {"max_connections", "accept_error", "tls_handshake"}) {
      rejected_.Add({{"reason", reason}});
    }
  }

  void ConnectionRejected(std::string_view reason) override {
    rejected_.Add({{"reason", std::string(reason)}}).Increment();
  }
  void ConnectionsChanged(int64_t) override {}
  void BufferedBytesChanged(int64_t) override {}
  void RequestRefused(std::string_view) override {}

 private:
  prometheus::Family<prometheus::Counter>& rejected_;
};

// Answers GET /metrics with the registry and the added collectables.
class MetricsServer::Handler : public HttpHandler {
 public:
  explicit Handler(const std::shared_ptr<prometheus::Registry>& registry) {
    collectables_.push_back(registry);
  }

  // REQUIRES: before the server starts.
  void SetAuth(BasicAuth auth) { auth_ = std::move(auth); }

  void Add(std::weak_ptr<prometheus::Collectable> collectable) {
    std::lock_guard<std::mutex> lock(mu_);
    collectables_.push_back(std::move(collectable));
  }

  void Handle(HttpRequest request, Responder responder) override {
    std::string_view path = std::string_view(request.target).substr(0, request.target.find('?'));
    if (path != "/metrics") {
      return responder.Send(ErrorResponse(
          Status(ErrorCode::kNotFound, "no such path: this port serves /metrics only")));
    }
    if (request.method != HttpMethod::kGet && request.method != HttpMethod::kHead) {
      HttpResponse response =
          ErrorResponse(Status(ErrorCode::kMethodNotAllowed, "allowed methods: GET, HEAD"));
      response.headers.push_back({"Allow", "GET, HEAD"});
      return responder.Send(std::move(response));
    }
    if (auth_ && !Authenticated(request)) {
      HttpResponse response = ErrorResponse(Status(
          ErrorCode::kUnauthorized, "/metrics needs HTTP basic authentication with a token"));
      response.headers.push_back({"WWW-Authenticate", R"(Basic realm="feedd")"});
      return responder.Send(std::move(response));
    }
    HttpResponse response;
    response.headers.push_back({"Content-Type", std::string(kTextFormat)});
    response.body = prometheus::TextSerializer().Serialize(Collect());
    responder.Send(std::move(response));
  }

  void OnServerStopping() override {}

 private:
  bool Authenticated(const HttpRequest& request) const {
    std::optional<std::string_view> header = request.Header("Authorization");
    Result<BasicCredentials> credentials =
        header ? ParseBasic(*header) : Status(ErrorCode::kInvalidRequest, "none");
    if (!credentials.ok()) {
      FEEDD_LOG_EVERY_N_SEC(kWarning, "audit", kRefusalLogSeconds)
          << "refused a /metrics request from " << request.peer << ": "
          << (header ? "malformed Authorization header" : "no Authorization header");
      return false;
    }
    return auth_(credentials->user, credentials->password);
  }

  std::vector<prometheus::MetricFamily> Collect() {
    std::vector<std::shared_ptr<prometheus::Collectable>> alive;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& weak : collectables_) {
        if (auto collectable = weak.lock()) alive.push_back(std::move(collectable));
      }
    }
    std::vector<prometheus::MetricFamily> families;
    for (const auto& collectable : alive) {
      std::vector<prometheus::MetricFamily> collected = collectable->Collect();
      families.insert(families.end(), std::make_move_iterator(collected.begin()),
                      std::make_move_iterator(collected.end()));
    }
    return families;
  }

  BasicAuth auth_;
  std::mutex mu_;
  std::vector<std::weak_ptr<prometheus::Collectable>> collectables_;  // GUARDED_BY(mu_)
};

MetricsServer::MetricsServer()
    : registry_(std::make_shared<prometheus::Registry>()),
      observer_(std::make_unique<Observer>(*registry_)),
      handler_(std::make_unique<Handler>(registry_)) {}

MetricsServer::~MetricsServer() { Stop(); }

Result<std::string> MetricsServer::Start(Options options) {
  HttpServerOptions http;
  http.listen = options.listen;
  http.threads = 1;
  http.max_request_bytes = 0;  // a scrape has no body
  http.max_buffered_bytes = 0;
  http.max_connections = kMaxMetricsConnections;
  http.idle_timeout = options.request_timeout;
  http.shutdown_grace = kShutdownGrace;
  http.tls = std::move(options.tls);
  http.observer = observer_.get();
  http.thread_name = "feedd-metrics";
  handler_->SetAuth(std::move(options.auth));
  auto server = std::make_unique<HttpServer>(std::move(http));
  if (Status s = server->Start(handler_.get()); !s.ok()) {
    return Status(s.code(), "cannot serve metrics: " + s.message());
  }
  server_ = std::move(server);
  return server_->bound_address();
}

void MetricsServer::AddCollectable(const std::shared_ptr<prometheus::Collectable>& state) {
  handler_->Add(state);
}

Status MetricsServer::ReloadTls() { return server_ ? server_->ReloadTls() : Status::Ok(); }

void MetricsServer::Stop() {
  if (server_) server_->Stop();
}

}  // namespace feedd
