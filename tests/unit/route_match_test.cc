// RouteMatch (daemon/route_match.h): a request's path is matched against the
// route table once, from its head (ApiRouter::Match via Route()), and the
// match is carried on the request to the metrics label, the authentication
// and the handler, over the real HttpServer and the real decorators.
#include "daemon/route_match.h"

#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "daemon/api_router.h"
#include "daemon/auth_handler.h"
#include "daemon/http_probe.h"
#include "daemon/http_server.h"
#include "tests/unit/http_exchange.h"

namespace feedd {
namespace {

TEST(ApiRouterMatchTest, TemplateAccessAndCapturesComeFromTheRouteTable) {
  RouteMatch item = ApiRouter::Match("/v1/containers/posts/items/u%2F1/p1?x=1", HttpMethod::kPut);
  EXPECT_EQ(item.kind, RouteKind::kItem);
  EXPECT_EQ(item.route_template, "/v1/containers/{c}/items/{pk}/{id}");
  EXPECT_EQ(item.access, Access::kWrite);
  EXPECT_TRUE(item.method_allowed);
  EXPECT_TRUE(item.error.ok());
  EXPECT_EQ(item.container, "posts");
  EXPECT_EQ(item.pk, "u/1");
  EXPECT_EQ(item.id, "p1");
  EXPECT_EQ(item.processor, std::nullopt);
  EXPECT_EQ(item.job, std::nullopt);

  RouteMatch rebuild = ApiRouter::Match("/v1/processors/top/rebuild", HttpMethod::kPost);
  EXPECT_EQ(rebuild.route_template, "/v1/processors/{name}/rebuild");
  EXPECT_EQ(rebuild.access, Access::kAdmin);
  EXPECT_EQ(rebuild.processor, "top");
  EXPECT_EQ(rebuild.container, std::nullopt);

  RouteMatch cancel = ApiRouter::Match("/v1/jobs/j7/cancel", HttpMethod::kPost);
  EXPECT_EQ(cancel.access, Access::kAdmin);
  EXPECT_EQ(cancel.job, "j7");

  // An empty segment is captured as it is (and later answered as no such
  // container), not taken for a missing one.
  RouteMatch empty = ApiRouter::Match("/v1/containers//query", HttpMethod::kPost);
  EXPECT_EQ(empty.kind, RouteKind::kQuery);
  EXPECT_EQ(empty.access, Access::kRead);
  EXPECT_EQ(empty.container, "");

  // A method the route does not answer (405): kRead, except on the probes.
  RouteMatch wrong = ApiRouter::Match("/v1/containers", HttpMethod::kDelete);
  EXPECT_EQ(wrong.route_template, "/v1/containers");
  EXPECT_FALSE(wrong.method_allowed);
  EXPECT_EQ(wrong.access, Access::kRead);
  RouteMatch probe = ApiRouter::Match("/healthz", HttpMethod::kPost);
  EXPECT_FALSE(probe.method_allowed);
  EXPECT_EQ(probe.access, Access::kOpen);
  EXPECT_EQ(ApiRouter::Match("/readyz", HttpMethod::kGet).access, Access::kOpen);
}

TEST(ApiRouterMatchTest, AnUnknownOrUnreadablePathIsNoRoute) {
  RouteMatch unknown = ApiRouter::Match("/v1/nothing/here", HttpMethod::kGet);
  EXPECT_EQ(unknown.kind, RouteKind::kNone);
  EXPECT_EQ(unknown.route_template, "other");
  EXPECT_EQ(unknown.access, Access::kRead);
  EXPECT_TRUE(unknown.error.ok());
  EXPECT_EQ(unknown.container, std::nullopt);

  RouteMatch unreadable = ApiRouter::Match("/v1/containers/a%zz/items", HttpMethod::kPost);
  EXPECT_EQ(unreadable.kind, RouteKind::kNone);
  EXPECT_EQ(unreadable.route_template, "other");
  EXPECT_EQ(unreadable.access, Access::kRead);
  EXPECT_EQ(unreadable.error.code(), ErrorCode::kInvalidRequest);

  // A request nothing routed carries no route: the same as no match.
  HttpRequest unrouted;
  unrouted.target = "/healthz";
  EXPECT_EQ(RouteOf(unrouted).kind, RouteKind::kNone);
  EXPECT_EQ(RouteOf(unrouted).route_template, "other");
}

class NoBodyStream : public BodyStream {
 public:
  void Consume(std::string_view, std::function<void(bool)> next) override { next(true); }
  void Finish(Status, Responder responder) override { responder.Send(HttpResponse{}); }
};

// Routes with ApiRouter::Match, counting its calls, and records the route
// each later step was handed; streams imports, answers the rest 200.
class RecordingRouter : public HttpHandler {
 public:
  void Route(HttpRequest& head) override {
    auto route = std::make_shared<const RouteMatch>(ApiRouter::Match(head.target, head.method));
    std::lock_guard<std::mutex> lock(mu_);
    routed_.push_back(route.get());
    head.route = std::move(route);
  }
  std::optional<HttpResponse> Screen(HttpRequest& head) override {
    std::lock_guard<std::mutex> lock(mu_);
    screened_.push_back(head.route.get());
    return std::nullopt;
  }
  std::unique_ptr<BodyStream> StreamBody(const HttpRequest& head) override {
    if (RouteOf(head).kind != RouteKind::kImport) return nullptr;
    std::lock_guard<std::mutex> lock(mu_);
    streamed_.push_back(head.route.get());
    return std::make_unique<NoBodyStream>();
  }
  void Handle(HttpRequest request, Responder responder) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      handled_.push_back(request.route.get());
    }
    responder.Send(HttpResponse{});
  }
  void OnServerStopping() override {}

  std::mutex mu_;
  // The routes made, and the ones each step was handed (GUARDED_BY(mu_)).
  std::vector<const RouteMatch*> routed_, screened_, streamed_, handled_;
};

std::string Post(const std::string& target, const std::string& body) {
  return "POST " + target +
         " HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
         body;
}

class ServerRouteTest : public ::testing::TestWithParam<bool> {};

TEST_P(ServerRouteTest, EachHeadIsRoutedOnceAndTheRouteReachesEveryStepOfItsRequest) {
  HttpServerOptions options;
  options.listen = HostPort{"127.0.0.1", 0};
  options.threads = 1;
  options.screen_heads = GetParam();
  RecordingRouter router;
  HttpServer server(options);
  ASSERT_TRUE(server.Start(&router).ok());
  std::string requests = Post("/v1/containers/c/items", "{\"id\":\"a\"}") +
                         Post("/v1/containers/c/import", "{\"id\":\"b\"}\n") +
                         "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  EXPECT_EQ(testutil::Exchange(server.bound_address(), requests, 3),
            (std::vector<int>{200, 200, 200}));
  server.Stop();

  std::lock_guard<std::mutex> lock(router.mu_);
  ASSERT_EQ(router.routed_.size(), 3u);
  const std::vector<const RouteMatch*>& r = router.routed_;
  EXPECT_EQ(router.screened_,
            GetParam() ? r : std::vector<const RouteMatch*>{});  // only with screen_heads
  EXPECT_EQ(router.streamed_, (std::vector<const RouteMatch*>{r[1]}));
  EXPECT_EQ(router.handled_, (std::vector<const RouteMatch*>{r[0], r[2]}));
}

INSTANTIATE_TEST_SUITE_P(ScreenHeads, ServerRouteTest, ::testing::Bool());

// feedd_http_requests_total of `route` and `status`, 0 when absent.
double Requests(prometheus::Registry& registry, const std::string& route,
                const std::string& status) {
  for (const prometheus::MetricFamily& family : registry.Collect()) {
    if (family.name != "feedd_http_requests_total") continue;
    for (const prometheus::ClientMetric& metric : family.metric) {
      std::map<std::string, std::string> labels;
      for (const auto& label : metric.label) labels[label.name] = label.value;
      if (labels["route"] == route && labels["status"] == status) return metric.counter.value;
    }
  }
  return 0;
}

class CapturingSink : public ResponseSink {
 public:
  void Deliver(HttpResponse response) override { status_ = response.status; }
  void Abandon() override { status_ = 0; }
  void Post(std::function<void()> work) override { work(); }
  int status_ = -1;
};

// The daemon's chain (MeteredHandler over AuthHandler over the router): the
// label and the role come from the one route the router matched.
TEST(HandlerChainRouteTest, TheMetricsLabelAndTheRoleComeFromTheOneMatch) {
  prometheus::Registry registry;
  HttpProbe probe(registry);
  RecordingRouter router;
  const TokenEntry reader{"dash", Role::kRead, Sha256("read-secret")};
  AuthHandler auth(&router, std::make_shared<const TokenSet>(std::vector<TokenEntry>{reader}),
                   &probe);
  MeteredHandler metered(&auth, &probe);

  // As the server does: Route(), Screen(), StreamBody(), then Handle().
  auto serve = [&](HttpMethod method, std::string target) {
    HttpRequest head;
    head.method = method;
    head.target = std::move(target);
    head.headers.push_back({"Authorization", "Bearer read-secret"});
    metered.Route(head);
    if (std::optional<HttpResponse> refusal = metered.Screen(head)) return refusal->status;
    EXPECT_EQ(metered.StreamBody(head), nullptr);
    auto sink = std::make_shared<CapturingSink>();
    metered.Handle(std::move(head), Responder(sink));
    return sink->status_;
  };
  EXPECT_EQ(serve(HttpMethod::kGet, "/v1/containers/c/items/p/i"), 200);
  EXPECT_EQ(serve(HttpMethod::kPut, "/v1/containers/c/items/p/i"), 403);  // needs write
  EXPECT_EQ(serve(HttpMethod::kGet, "/v1/a%zz"), 200);                    // the router's to answer

  std::lock_guard<std::mutex> lock(router.mu_);
  ASSERT_EQ(router.routed_.size(), 3u);  // once per request, by the router
  EXPECT_EQ(router.screened_.size(), 2u);
  EXPECT_EQ(router.handled_,
            (std::vector<const RouteMatch*>{router.routed_[0], router.routed_[2]}));
  EXPECT_EQ(Requests(registry, "/v1/containers/{c}/items/{pk}/{id}", "200"), 1);
  EXPECT_EQ(Requests(registry, "/v1/containers/{c}/items/{pk}/{id}", "403"), 1);
  EXPECT_EQ(Requests(registry, "other", "200"), 1);
}

}  // namespace
}  // namespace feedd
