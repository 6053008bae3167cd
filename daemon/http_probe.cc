#include "daemon/http_probe.h"

#include <chrono>
#include <functional>
#include <string>

#include "daemon/route_match.h"

namespace feedd {
namespace {

// Latency buckets from 50 µs to 10 s.
const prometheus::Histogram::BucketBoundaries& LatencyBuckets() {
  static const prometheus::Histogram::BucketBoundaries buckets = {
      0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
      0.05,    0.1,    0.25,    0.5,    1,     2.5,    5,     10};
  return buckets;
}

// Records the response of one request, then hands it to the connection.
class MeteredSink : public ResponseSink {
 public:
  MeteredSink(std::shared_ptr<ResponseSink> inner, HttpProbe* probe, std::string_view route,
              HttpMethod method, size_t request_bytes)
      : inner_(std::move(inner)),
        probe_(probe),
        route_(route),
        method_(method),
        request_bytes_(request_bytes),
        started_(std::chrono::steady_clock::now()) {}

  void Deliver(HttpResponse response) override {
    Record(response.status, response.body.size());
    inner_->Deliver(std::move(response));
  }

  void Abandon() override {
    Record(500, 0);
    inner_->Abandon();
  }

  void Post(std::function<void()> work) override { inner_->Post(std::move(work)); }

 private:
  void Record(int status, size_t response_bytes) {
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    probe_->Finished(route_, method_, status, seconds, request_bytes_, response_bytes);
  }

  std::shared_ptr<ResponseSink> inner_;
  HttpProbe* const probe_;
  const std::string_view route_;  // a route template: static storage
  const HttpMethod method_;
  const size_t request_bytes_;
  const std::chrono::steady_clock::time_point started_;
};

}  // namespace

HttpProbe::HttpProbe(prometheus::Registry& registry)
    : requests_(prometheus::BuildCounter()
                    .Name("feedd_http_requests_total")
                    .Help("HTTP requests answered, by route template, method and status")
                    .Register(registry)),
      duration_(prometheus::BuildHistogram()
                    .Name("feedd_http_request_duration_seconds")
                    .Help("Time from a parsed request to its response, by route and method")
                    .Register(registry)),
      in_flight_(prometheus::BuildGauge()
                     .Name("feedd_http_requests_in_flight")
                     .Help("HTTP requests received and not yet answered")
                     .Register(registry)
                     .Add({})),
      request_bytes_(prometheus::BuildCounter()
                         .Name("feedd_http_request_bytes_total")
                         .Help("HTTP request body bytes, by route template")
                         .Register(registry)),
      response_bytes_(prometheus::BuildCounter()
                          .Name("feedd_http_response_bytes_total")
                          .Help("HTTP response body bytes, by route template")
                          .Register(registry)),
      connections_(prometheus::BuildGauge()
                       .Name("feedd_http_connections_open")
                       .Help("Open HTTP API connections (at most http.max_connections)")
                       .Register(registry)
                       .Add({})),
      connections_rejected_(prometheus::BuildCounter()
                                .Name("feedd_http_connections_rejected_total")
                                .Help("Connections not served: over http.max_connections "
                                      "(answered 503), or a failed accept (e.g. out of fds)")
                                .Register(registry)),
      buffered_bytes_(prometheus::BuildGauge()
                          .Name("feedd_http_buffered_body_bytes")
                          .Help("Request body bytes held by all connections (at most "
                                "http.max_buffered_bytes)")
                          .Register(registry)
                          .Add({})),
      requests_refused_(prometheus::BuildCounter()
                            .Name("feedd_http_requests_refused_total")
                            .Help("Requests refused by the HTTP server before routing: over "
                                  "http.max_buffered_bytes (503) or a transfer coding other "
                                  "than chunked (501/400)")
                            .Register(registry)),
      hand_over_wait_(prometheus::BuildHistogram()
                          .Name("feedd_http_hand_over_wait_seconds")
                          .Help("Time work handed to a connection's I/O thread from elsewhere "
                                "(a write's completion, a released read, a response) waited "
                                "for that thread")
                          .Register(registry)
                          .Add({}, LatencyBuckets())),
      auth_failures_(prometheus::BuildCounter()
                         .Name("feedd_http_auth_failures_total")
                         .Help("Requests refused by authentication (auth.tokens_file): no "
                               "Authorization header, a malformed one, an unknown token (401), "
                               "or a role that may not use the route (403)")
                         .Register(registry)) {
  for (const char* reason : {"missing", "malformed", "unknown_token", "forbidden"}) {
    auth_failures_.Add({{"reason", reason}});
  }
  for (const char* reason : {"max_connections", "accept_error", "tls_handshake"}) {
    connections_rejected_.Add({{"reason", reason}});
  }
  for (const char* reason : {"max_buffered_bytes", "transfer_coding"}) {
    requests_refused_.Add({{"reason", reason}});
  }
}

void HttpProbe::ConnectionRejected(std::string_view reason) {
  connections_rejected_.Add({{"reason", std::string(reason)}}).Increment();
}

void HttpProbe::RequestRefused(std::string_view reason) {
  requests_refused_.Add({{"reason", std::string(reason)}}).Increment();
}

void HttpProbe::AuthFailed(std::string_view reason) {
  auth_failures_.Add({{"reason", std::string(reason)}}).Increment();
}

void HttpProbe::Finished(std::string_view route, HttpMethod method, int status, double seconds,
                         size_t request_bytes, size_t response_bytes) {
  in_flight_.Decrement();
  std::string r(route), m = std::string(HttpMethodName(method));
  requests_.Add({{"route", r}, {"method", m}, {"status", std::to_string(status)}}).Increment();
  duration_.Add({{"route", r}, {"method", m}}, LatencyBuckets()).Observe(seconds);
  request_bytes_.Add({{"route", r}}).Increment(static_cast<double>(request_bytes));
  response_bytes_.Add({{"route", r}}).Increment(static_cast<double>(response_bytes));
}

std::optional<HttpResponse> MeteredHandler::Screen(HttpRequest& head) {
  std::optional<HttpResponse> refusal = inner_->Screen(head);
  if (refusal) {
    probe_->Started();
    probe_->Finished(RouteOf(head).route_template, head.method, refusal->status, 0.0, 0,
                     refusal->body.size());
  }
  return refusal;
}

// A streamed body, metered like a buffered one: from its head to its answer,
// with the bytes it streamed.
class MeteredStream : public BodyStream {
 public:
  MeteredStream(std::unique_ptr<BodyStream> inner, HttpProbe* probe, std::string_view route,
                HttpMethod method)
      : inner_(std::move(inner)), probe_(probe), route_(route), method_(method) {
    probe_->Started();
  }
  void Consume(std::string_view piece, std::function<void(bool)> next) override {
    bytes_ += piece.size();
    inner_->Consume(piece, std::move(next));
  }
  void Finish(Status error, Responder responder) override {
    auto sink = std::make_shared<MeteredSink>(responder.Release(), probe_, route_, method_, bytes_);
    inner_->Finish(std::move(error), Responder(std::move(sink)));
  }

 private:
  std::unique_ptr<BodyStream> inner_;
  HttpProbe* const probe_;
  const std::string_view route_;  // a route template: static storage
  const HttpMethod method_;
  size_t bytes_ = 0;
};

std::unique_ptr<BodyStream> MeteredHandler::StreamBody(const HttpRequest& head) {
  std::unique_ptr<BodyStream> inner = inner_->StreamBody(head);
  if (!inner) return nullptr;
  return std::make_unique<MeteredStream>(std::move(inner), probe_, RouteOf(head).route_template,
                                         head.method);
}

void MeteredHandler::Handle(HttpRequest request, Responder responder) {
  probe_->Started();
  auto sink =
      std::make_shared<MeteredSink>(responder.Release(), probe_, RouteOf(request).route_template,
                                    request.method, request.body.size());
  inner_->Handle(std::move(request), Responder(std::move(sink)));
}

}  // namespace feedd
