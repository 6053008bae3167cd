// Tests of where HttpServer (daemon/http_server.h) runs a connection's work:
// every request of a connection on one I/O thread, connections dealt to the
// threads in turn, and Responder::Post() back on the connection's thread.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace feedd
