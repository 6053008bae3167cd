// Tests of where HttpServer (daemon/http_server.h) runs a connection's work:
// every request of a connection on one I/O thread, connections dealt to the
// threads in turn, and Responder::Post() back on the connection's thread,
// reporting how long it waited for that thread.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "daemon/http_server.h"
#include "daemon/http_util.h"
#include "tests/unit/http_exchange.h"

namespace feedd {
namespace {

// Records the thread that handled each request, by target. A target
// starting with /post answers from a thread of its own through
// Responder::Post(), and records the thread `work` ran on under
// "<target>/work".
class ThreadRecordingHandler : public HttpHandler {
 public:
  void Handle(HttpRequest request, Responder responder) override {
    Record(request.target);
    if (request.target.rfind("/post", 0) != 0) return responder.Send(JsonResponse(200, "{}"));
    auto pending = std::make_shared<Responder>(std::move(responder));
    std::thread([this, pending, target = request.target] {
      pending->Post([this, pending, target] {
        Record(target + "/work");
        pending->Send(JsonResponse(200, "{}"));
      });
    }).detach();
  }
  void OnServerStopping() override {}

  std::map<std::string, std::thread::id> threads() {
    std::lock_guard<std::mutex> lock(mu_);
    return threads_;
  }

 private:
  void Record(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    threads_[key] = std::this_thread::get_id();
  }

  std::mutex mu_;
  std::map<std::string, std::thread::id> threads_;
};

std::string Requests(const std::string& connection, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) {
    out += "GET /" + connection + "/" + std::to_string(i) +
           " HTTP/1.1\r\nHost: test\r\nContent-Length: 0\r\n\r\n";
  }
  return out;
}

class HttpServerThreadsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HttpServerOptions options;
    options.listen = HostPort{"127.0.0.1", 0};
    options.threads = 2;
    server_ = std::make_unique<HttpServer>(options);
    ASSERT_TRUE(server_->Start(&handler_).ok());
  }
  void TearDown() override { server_->Stop(); }

  ThreadRecordingHandler handler_;
  std::unique_ptr<HttpServer> server_;
};

TEST_F(HttpServerThreadsTest, AConnectionStaysOnOneThreadAndTheNextGoesToTheOther) {
  const int kRequests = 20;
  ASSERT_EQ(testutil::Exchange(server_->bound_address(), Requests("a", kRequests), kRequests),
            std::vector<int>(kRequests, 200));
  ASSERT_EQ(testutil::Exchange(server_->bound_address(), Requests("b", kRequests), kRequests),
            std::vector<int>(kRequests, 200));
  std::map<std::string, std::thread::id> threads = handler_.threads();
  const std::thread::id a = threads.at("/a/0"), b = threads.at("/b/0");
  for (int i = 1; i < kRequests; ++i) {
    EXPECT_EQ(threads.at("/a/" + std::to_string(i)), a) << "request " << i << " hopped threads";
    EXPECT_EQ(threads.at("/b/" + std::to_string(i)), b) << "request " << i << " hopped threads";
  }
  EXPECT_NE(a, b) << "two connections in a row on one of two threads";
}

TEST_F(HttpServerThreadsTest, PostedWorkRunsOnTheConnectionsThread) {
  const std::string request = "GET /post HTTP/1.1\r\nHost: test\r\nContent-Length: 0\r\n\r\n";
  for (int connection = 0; connection < 4; ++connection) {
    ASSERT_EQ(testutil::Exchange(server_->bound_address(), request, 1), std::vector<int>{200});
    std::map<std::string, std::thread::id> threads = handler_.threads();
    EXPECT_EQ(threads.at("/post/work"), threads.at("/post")) << "connection " << connection;
  }
}

// Records every HandOverWaited() report.
class HandOverObserver : public HttpServerObserver {
 public:
  void ConnectionsChanged(int64_t) override {}
  void ConnectionRejected(std::string_view) override {}
  void BufferedBytesChanged(int64_t) override {}
  void RequestRefused(std::string_view) override {}
  void HandOverWaited(double seconds) override {
    std::lock_guard<std::mutex> lock(mu_);
    waits_.push_back(seconds);
  }
  std::vector<double> waits() {
    std::lock_guard<std::mutex> lock(mu_);
    return waits_;
  }

 private:
  std::mutex mu_;
  std::vector<double> waits_;
};

// /post answers through Responder::Post() from a thread of its own once
// `go_post` is set (setting `posted` after the Post()); /block holds the
// I/O thread until `release` is set (after setting `blocking`).
class BlockingHandler : public HttpHandler {
 public:
  void Handle(HttpRequest request, Responder responder) override {
    if (request.target == "/block") {
      blocking.set_value();
      release_future.wait();
      return responder.Send(JsonResponse(200, "{}"));
    }
    auto pending = std::make_shared<Responder>(std::move(responder));
    post_received.set_value();
    std::thread([this, pending] {
      go_post_future.wait();
      pending->Post([pending] { pending->Send(JsonResponse(200, "{}")); });
      posted.set_value(std::chrono::steady_clock::now());
    }).detach();
  }
  void OnServerStopping() override {}

  std::promise<void> post_received, blocking, go_post, release;
  std::promise<std::chrono::steady_clock::time_point> posted;
  std::shared_future<void> go_post_future = go_post.get_future().share();
  std::shared_future<void> release_future = release.get_future().share();
};

// Work posted while the connection's thread is busy elsewhere reports a
// wait of at least the time from its Post() to the thread's release.
TEST(HttpServerHandOverTest, WorkPostedToABusyThreadReportsItsWait) {
  HandOverObserver observer;
  BlockingHandler handler;
  HttpServerOptions options;
  options.listen = HostPort{"127.0.0.1", 0};
  options.threads = 1;
  options.observer = &observer;
  HttpServer server(options);
  ASSERT_TRUE(server.Start(&handler).ok());
  const std::string address = server.bound_address();
  auto request = [](const std::string& target) {
    return "GET " + target + " HTTP/1.1\r\nHost: test\r\nContent-Length: 0\r\n\r\n";
  };
  std::vector<int> post_status, block_status;
  std::thread post_client([&] { post_status = testutil::Exchange(address, request("/post"), 1); });
  handler.post_received.get_future().wait();
  std::thread block_client(
      [&] { block_status = testutil::Exchange(address, request("/block"), 1); });
  handler.blocking.get_future().wait();  // the only I/O thread is held
  handler.go_post.set_value();
  const auto posted = handler.posted.get_future().get();
  const auto released = std::chrono::steady_clock::now();
  handler.release.set_value();
  post_client.join();
  block_client.join();
  server.Stop();
  EXPECT_EQ(post_status, std::vector<int>{200});
  EXPECT_EQ(block_status, std::vector<int>{200});
  const std::vector<double> waits = observer.waits();
  ASSERT_FALSE(waits.empty());
  EXPECT_GE(*std::max_element(waits.begin(), waits.end()),
            std::chrono::duration<double>(released - posted).count());
}

}  // namespace
}  // namespace feedd
