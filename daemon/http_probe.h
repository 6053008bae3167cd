// HttpProbe: the HTTP metrics of docs/metrics.md, and MeteredHandler, an
// HttpHandler decorator that records them for every request of the handler
// it wraps (requests by route template and status, latency by route,
// in-flight requests, request and response bytes). The probe is also the
// HttpServer's observer (connections, the body budget, refusals) and the
// AuthHandler's (authentication failures).
//
// Thread-safety: both are safe to use from every I/O thread.
// Ownership: the probe's metrics live in the prometheus::Registry given to
// it; MeteredHandler borrows the probe and the wrapped handler.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <string_view>

#include "daemon/auth_handler.h"
#include "daemon/http_handler.h"
#include "daemon/http_server.h"

namespace feedd {

class HttpProbe : public HttpServerObserver, public AuthObserver {
 public:
  explicit HttpProbe(prometheus::Registry& registry);

  void Started() { in_flight_.Increment(); }
  void Finished(std::string_view route, HttpMethod method, int status, double seconds,
                size_t request_bytes, size_t response_bytes);

  // HttpServerObserver
  void ConnectionsChanged(int64_t delta) override {
    connections_.Increment(static_cast<double>(delta));
  }
  void ConnectionRejected(std::string_view reason) override;
  void BufferedBytesChanged(int64_t delta) override {
    buffered_bytes_.Increment(static_cast<double>(delta));
  }
  void RequestRefused(std::string_view reason) override;
  void HandOverWaited(double seconds) override { hand_over_wait_.Observe(seconds); }

  // AuthObserver
  void AuthFailed(std::string_view reason) override;

 private:
  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Family<prometheus::Histogram>& duration_;
  prometheus::Gauge& in_flight_;
  prometheus::Family<prometheus::Counter>& request_bytes_;
  prometheus::Family<prometheus::Counter>& response_bytes_;
  prometheus::Gauge& connections_;
  prometheus::Family<prometheus::Counter>& connections_rejected_;
  prometheus::Gauge& buffered_bytes_;
  prometheus::Family<prometheus::Counter>& requests_refused_;
  prometheus::Histogram& hand_over_wait_;
  prometheus::Family<prometheus::Counter>& auth_failures_;
};

class MeteredHandler : public HttpHandler {
 public:
  // A request's route label is the template of the route it carries
  // (HttpRequest::route, set by the wrapped handler's Route()), "other" when
  // it carries none.
  MeteredHandler(HttpHandler* inner, HttpProbe* probe) : inner_(inner), probe_(probe) {}

  void Route(HttpRequest& head) override { inner_->Route(head); }
  void Handle(HttpRequest request, Responder responder) override;
  // Records a refusal of the wrapped handler's Screen() like an answer.
  std::optional<HttpResponse> Screen(HttpRequest& head) override;
  std::unique_ptr<BodyStream> StreamBody(const HttpRequest& head) override;
  void OnServerStopping() override { inner_->OnServerStopping(); }

 private:
  HttpHandler* const inner_;
  HttpProbe* const probe_;
};

}  // namespace feedd
