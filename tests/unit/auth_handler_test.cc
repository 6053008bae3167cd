// AuthHandler (daemon/auth_handler.h): the head's admission carried to the
// body, and a reload between the two.
#include "daemon/auth_handler.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "daemon/http_server.h"
#include "daemon/route_match.h"
#include "tests/unit/http_exchange.h"

namespace feedd {
namespace {

class CapturingSink : public ResponseSink {
 public:
  void Deliver(HttpResponse response) override { response_ = std::move(response); }
  void Abandon() override { abandoned_ = true; }
  void Post(std::function<void()> work) override { work(); }
  std::optional<HttpResponse> response_;
  bool abandoned_ = false;
};

class NoBodyStream : public BodyStream {
 public:
  void Consume(std::string_view, std::function<void(bool)> next) override { next(true); }
  void Finish(Status, Responder responder) override { responder.Send(HttpResponse{}); }
};

// What the fake routes need.
Access AccessOf(std::string_view target) {
  if (target == "/healthz") return Access::kOpen;
  if (target == "/admin") return Access::kAdmin;
  return Access::kWrite;
}

// Routes by AccessOf(), answers 200 and records what it was handed.
class InnerHandler : public HttpHandler {
 public:
  void Route(HttpRequest& head) override {
    ++routed_;
    auto route = std::make_shared<RouteMatch>();
    route->access = AccessOf(head.target);
    head.route = std::move(route);
  }
  void Handle(HttpRequest request, Responder responder) override {
    handled_.push_back(request.target);
    responder.Send(HttpResponse{});
  }
  std::unique_ptr<BodyStream> StreamBody(const HttpRequest& head) override {
    return head.target == "/stream" ? std::make_unique<NoBodyStream>() : nullptr;
  }
  void OnServerStopping() override {}
  int routed_ = 0;
  std::vector<std::string> handled_;
};

class CountingObserver : public AuthObserver {
 public:
  void AuthFailed(std::string_view reason) override { ++failures_[std::string(reason)]; }
  std::map<std::string, int> failures_;
};

std::shared_ptr<const TokenSet> Tokens(std::vector<TokenEntry> entries) {
  return std::make_shared<const TokenSet>(std::move(entries));
}

class AuthHandlerTest : public ::testing::Test {
 protected:
  // A request head, routed as the server would.
  HttpRequest Request(std::string target, std::string secret) {
    HttpRequest request;
    request.method = HttpMethod::kPost;
    request.target = std::move(target);
    request.peer = "127.0.0.1:5000";
    request.headers.push_back({"Authorization", "Bearer " + secret});
    auth_.Route(request);
    return request;
  }

  // Handle() of `request`: the status answered.
  int Handle(HttpRequest request) {
    auto sink = std::make_shared<CapturingSink>();
    auth_.Handle(std::move(request), Responder(sink));
    EXPECT_TRUE(sink->response_.has_value());
    return sink->response_ ? sink->response_->status : 0;
  }

  const TokenEntry app_{"app", Role::kWrite, Sha256("app-secret")};
  const TokenEntry ops_{"ops", Role::kAdmin, Sha256("ops-secret")};
  InnerHandler inner_;
  CountingObserver observer_;
  AuthHandler auth_{&inner_, Tokens({app_, ops_}), &observer_};
};

TEST_F(AuthHandlerTest, HandleTakesTheAdmissionOfTheHeadWithoutAuthenticatingAgain) {
  HttpRequest head = Request("/admin", "ops-secret");
  ASSERT_EQ(auth_.Screen(head), std::nullopt);
  ASSERT_NE(head.admission, nullptr);
  EXPECT_EQ(head.admission->token->name, "ops");

  // The request handed to Handle() carries the head's admission. Its header
  // is changed here to a token whose role may not use the route: checked
  // again, it would be refused (403); taken from the head, it passes.
  HttpRequest request = Request("/admin", "app-secret");
  request.admission = head.admission;
  EXPECT_EQ(Handle(std::move(request)), 200);
  EXPECT_EQ(inner_.handled_, std::vector<std::string>{"/admin"});
  EXPECT_TRUE(observer_.failures_.empty());
}

TEST_F(AuthHandlerTest, WhatARequestNeedsIsTheAccessOfTheRouteItCarries) {
  // Routed once, from the head: Screen() and Handle() take the route the
  // request carries and do not route it again.
  HttpRequest head = Request("/admin", "app-secret");
  EXPECT_EQ(inner_.routed_, 1);
  std::optional<HttpResponse> refusal = auth_.Screen(head);
  ASSERT_TRUE(refusal.has_value());
  EXPECT_EQ(refusal->status, 403);
  EXPECT_EQ(Handle(head), 403);
  EXPECT_EQ(inner_.routed_, 1);
  EXPECT_EQ(observer_.failures_["forbidden"], 2);

  // The carried route decides, not the target: a request whose route needs
  // no token is let through without one.
  HttpRequest open = Request("/healthz", "");
  open.headers.clear();
  open.target = "/admin";
  EXPECT_EQ(Handle(std::move(open)), 200);
  // A request nothing routed needs a token (Access::kRead).
  HttpRequest unrouted = Request("/healthz", "");
  unrouted.headers.clear();
  unrouted.route = nullptr;
  EXPECT_EQ(Handle(std::move(unrouted)), 401);
  EXPECT_EQ(inner_.handled_, std::vector<std::string>{"/admin"});
}

TEST_F(AuthHandlerTest, ATokenRemovedByAReloadBetweenHeadAndBodyIsRefused) {
  HttpRequest head = Request("/items", "app-secret");
  ASSERT_EQ(auth_.Screen(head), std::nullopt);
  ASSERT_NE(head.admission, nullptr);

  auth_.SetTokens(Tokens({ops_}));  // SIGHUP: app is gone
  HttpRequest request = Request("/items", "app-secret");
  request.admission = head.admission;
  EXPECT_EQ(Handle(std::move(request)), 401);
  EXPECT_EQ(observer_.failures_["unknown_token"], 1);
  EXPECT_TRUE(inner_.handled_.empty());
  // A streamed body is not started either.
  HttpRequest stream_head = Request("/stream", "app-secret");
  stream_head.admission = head.admission;
  EXPECT_EQ(auth_.StreamBody(stream_head), nullptr);
}

TEST_F(AuthHandlerTest, AReloadThatKeepsTheTokenStillAdmits) {
  HttpRequest head = Request("/items", "app-secret");
  ASSERT_EQ(auth_.Screen(head), std::nullopt);
  auth_.SetTokens(Tokens({app_}));
  HttpRequest request = Request("/items", "app-secret");
  request.admission = head.admission;
  EXPECT_EQ(Handle(std::move(request)), 200);
  EXPECT_TRUE(observer_.failures_.empty());
}

TEST_F(AuthHandlerTest, AnUnscreenedRequestIsAuthenticatedByHandle) {
  EXPECT_EQ(Handle(Request("/admin", "app-secret")), 403);
  EXPECT_EQ(Handle(Request("/items", "nope")), 401);
  HttpRequest missing = Request("/items", "");
  missing.headers.clear();
  EXPECT_EQ(Handle(std::move(missing)), 401);
  EXPECT_EQ(Handle(Request("/admin", "ops-secret")), 200);
  EXPECT_EQ(observer_.failures_,
            (std::map<std::string, int>{{"forbidden", 1}, {"unknown_token", 1}, {"missing", 1}}));
  EXPECT_EQ(inner_.handled_, std::vector<std::string>{"/admin"});
}

TEST_F(AuthHandlerTest, ScreenRefusesOnTheHeadAndLeavesNoAdmission) {
  HttpRequest head = Request("/admin", "app-secret");
  std::optional<HttpResponse> refusal = auth_.Screen(head);
  ASSERT_TRUE(refusal.has_value());
  EXPECT_EQ(refusal->status, 403);
  EXPECT_EQ(head.admission, nullptr);
  HttpRequest open = Request("/healthz", "");
  open.headers.clear();
  EXPECT_EQ(auth_.Screen(open), std::nullopt);
  EXPECT_EQ(open.admission, nullptr);
}

TEST_F(AuthHandlerTest, AnAdmittedHeadStreamsItsBody) {
  HttpRequest head = Request("/stream", "app-secret");
  ASSERT_EQ(auth_.Screen(head), std::nullopt);
  EXPECT_NE(auth_.StreamBody(head), nullptr);
  HttpRequest refused = Request("/stream", "nope");
  EXPECT_EQ(auth_.StreamBody(refused), nullptr);
}

// The server's side: what Screen() set on the head reaches Handle() of the
// same request, over a buffered body, and not the next request's.
class AdmittingHandler : public HttpHandler {
 public:
  std::optional<HttpResponse> Screen(HttpRequest& head) override {
    if (head.target == "/admit") head.admission = admission_;
    return std::nullopt;
  }
  void Handle(HttpRequest request, Responder responder) override {
    HttpResponse response;
    response.status = request.admission == nullptr      ? 204
                      : request.admission == admission_ ? 200
                                                        : 500;
    responder.Send(std::move(response));
  }
  void OnServerStopping() override {}
  const std::shared_ptr<const Admission> admission_ = std::make_shared<const Admission>();
};

TEST(AuthHandlerServerTest, TheHeadsAdmissionReachesHandleOfTheSameRequest) {
  HttpServerOptions options;
  options.listen = HostPort{"127.0.0.1", 0};
  options.threads = 1;
  options.screen_heads = true;
  AdmittingHandler handler;
  HttpServer server(options);
  ASSERT_TRUE(server.Start(&handler).ok());
  std::string body = "{\"a\":1}";
  std::string requests =
      "POST /admit HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) +
      "\r\n\r\n" + body + "GET /other HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  EXPECT_EQ(testutil::Exchange(server.bound_address(), requests, 2), (std::vector<int>{200, 204}));
  server.Stop();
}

}  // namespace
}  // namespace feedd
