// Tests of HttpClient::SendStream (util/http_client.h) against the daemon's
// HttpServer: a streamed body arrives whole and in order, chunked, with the
// head's fields; a failing source ends the request with its error; a server
// that refuses the body early is answered with its refusal.
#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>
#include <string>

#include "daemon/http_server.h"
#include "daemon/http_util.h"
#include "util/http_client.h"

namespace feedd {
namespace {

// Collects a streamed body and answers with its size; with refuse_after set,
// stops reading once that many bytes arrived and answers 413.
class CollectingHandler : public HttpHandler {
 public:
  explicit CollectingHandler(size_t refuse_after = 0) : refuse_after_(refuse_after) {}

  std::unique_ptr<BodyStream> StreamBody(const HttpRequest& head) override {
    std::lock_guard<std::mutex> lock(mu_);
    content_type_ = std::string(head.Header("Content-Type").value_or(""));
    authorization_ = std::string(head.Header("Authorization").value_or(""));
    return std::make_unique<Stream>(this);
  }
  void Handle(HttpRequest, Responder responder) override {
    responder.Send(JsonResponse(500, "{}"));
  }
  void OnServerStopping() override {}

  std::string body() {
    std::lock_guard<std::mutex> lock(mu_);
    return body_;
  }
  std::string content_type() {
    std::lock_guard<std::mutex> lock(mu_);
    return content_type_;
  }
  std::string authorization() {
    std::lock_guard<std::mutex> lock(mu_);
    return authorization_;
  }
  size_t pieces() {
    std::lock_guard<std::mutex> lock(mu_);
    return pieces_;
  }

 private:
  class Stream : public BodyStream {
   public:
    explicit Stream(CollectingHandler* handler) : handler_(handler) {}
    void Consume(std::string_view piece, std::function<void(bool)> next) override {
      std::lock_guard<std::mutex> lock(handler_->mu_);
      handler_->body_.append(piece);
      ++handler_->pieces_;
      next(handler_->refuse_after_ == 0 || handler_->body_.size() < handler_->refuse_after_);
    }
    void Finish(Status error, Responder responder) override {
      std::lock_guard<std::mutex> lock(handler_->mu_);
      if (handler_->refuse_after_ != 0) {
        responder.Send(ErrorResponse(Status(ErrorCode::kPayloadTooLarge, "too much")));
        return;
      }
      responder.Send(JsonResponse(error.ok() ? 200 : 400,
                                  "{\"bytes\":" + std::to_string(handler_->body_.size()) + "}"));
    }

   private:
    CollectingHandler* handler_;
  };

  const size_t refuse_after_;
  std::mutex mu_;
  std::string body_, content_type_, authorization_;
  size_t pieces_ = 0;
};

class HttpClientStreamTest : public ::testing::Test {
 protected:
  void Serve(CollectingHandler* handler) {
    HttpServerOptions options;
    options.listen = HostPort{"127.0.0.1", 0};
    options.threads = 1;
    options.shutdown_grace = std::chrono::seconds(1);
    server_ = std::make_unique<HttpServer>(options);
    ASSERT_TRUE(server_->Start(handler).ok());
  }
  void TearDown() override {
    if (server_) server_->Stop();
  }
  std::unique_ptr<HttpServer> server_;
};

// A source of `total` bytes (a repeating pattern of digits and newlines),
// given in pieces of at most `piece` bytes.
HttpClient::BodySource PatternSource(size_t total, size_t piece, size_t* given) {
  return [total, piece, given](char* buffer, size_t capacity) -> Result<size_t> {
    const size_t n = std::min({capacity, piece, total - *given});
    for (size_t i = 0; i < n; ++i) buffer[i] = "0123456789\n"[(*given + i) % 11];
    *given += n;
    return n;
  };
}

std::string Pattern(size_t total) {
  std::string s;
  for (size_t i = 0; i < total; ++i) s.push_back("0123456789\n"[i % 11]);
  return s;
}

TEST_F(HttpClientStreamTest, SendsTheWholeBodyInOrderWithItsHead) {
  CollectingHandler handler;
  Serve(&handler);
  HttpClientSecurity security;
  security.bearer_token = "secret";
  HttpClient client(server_->bound_address(), std::chrono::seconds(30), security);
  const size_t total = 3 * 1024 * 1024 + 17;  // many chunks, the last a short one
  size_t given = 0;
  Result<HttpReply> reply = client.SendStream("POST", "/import", "application/x-ndjson",
                                              PatternSource(total, 100'003, &given));
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ(reply->status, 200);
  EXPECT_EQ(reply->body, "{\"bytes\":" + std::to_string(total) + "}");
  EXPECT_EQ(handler.body(), Pattern(total));
  EXPECT_EQ(handler.content_type(), "application/x-ndjson");
  EXPECT_EQ(handler.authorization(), "Bearer secret");
}

// The server reads a streamed body in large pieces, not in the 512 bytes
// Beast asks for when its read buffer has no room (an import of 30 MB
// took 59,404 reads; now 577).
TEST_F(HttpClientStreamTest, AStreamedBodyIsReadInLargePieces) {
  CollectingHandler handler;
  Serve(&handler);
  HttpClient client(server_->bound_address(), std::chrono::seconds(30));
  const size_t total = 4 * 1024 * 1024;
  size_t given = 0;
  Result<HttpReply> reply = client.SendStream("POST", "/import", "application/x-ndjson",
                                              PatternSource(total, 256 * 1024, &given));
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ(reply->status, 200);
  EXPECT_EQ(handler.body(), Pattern(total));
  EXPECT_LE(handler.pieces(), total / (8 * 1024)) << "pieces of less than 8 KiB on average";
}

TEST_F(HttpClientStreamTest, AnEmptyBodyIsSent) {
  CollectingHandler handler;
  Serve(&handler);
  HttpClient client(server_->bound_address(), std::chrono::seconds(30));
  size_t given = 0;
  Result<HttpReply> reply =
      client.SendStream("POST", "/import", "application/x-ndjson", PatternSource(0, 1, &given));
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ(reply->body, "{\"bytes\":0}");
}

TEST_F(HttpClientStreamTest, AFailingSourceEndsTheRequestWithItsError) {
  CollectingHandler handler;
  Serve(&handler);
  HttpClient client(server_->bound_address(), std::chrono::seconds(30));
  int calls = 0;
  Result<HttpReply> reply = client.SendStream(
      "POST", "/import", "application/x-ndjson", [&calls](char* buffer, size_t) -> Result<size_t> {
        if (++calls > 2) return Status(ErrorCode::kInvalidRequest, "cannot read the file");
        buffer[0] = 'x';
        return size_t{1};
      });
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().code(), ErrorCode::kInvalidRequest);
  EXPECT_EQ(reply.status().message(), "cannot read the file");
  // The client is usable again afterwards.
  size_t given = 0;
  reply =
      client.SendStream("POST", "/import", "application/x-ndjson", PatternSource(10, 10, &given));
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ(reply->status, 200);
}

TEST_F(HttpClientStreamTest, AnEarlyRefusalIsReturned) {
  CollectingHandler handler(/*refuse_after=*/64 * 1024);
  Serve(&handler);
  HttpClient client(server_->bound_address(), std::chrono::seconds(30));
  size_t given = 0;
  // Far more than the server reads before it answers.
  Result<HttpReply> reply = client.SendStream("POST", "/import", "application/x-ndjson",
                                              PatternSource(64u << 20, 256 * 1024, &given));
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ(reply->status, 413);
  EXPECT_EQ(StatusOfReply(*reply).code(), ErrorCode::kPayloadTooLarge);
  EXPECT_LT(given, size_t{64u << 20});
}

TEST_F(HttpClientStreamTest, AnUnreachableServerIsUnavailable) {
  HttpClient client("127.0.0.1:1", std::chrono::seconds(5));
  size_t given = 0;
  Result<HttpReply> reply =
      client.SendStream("POST", "/import", "application/x-ndjson", PatternSource(10, 10, &given));
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().code(), ErrorCode::kUnavailable);
  EXPECT_NE(reply.status().message().find("http://127.0.0.1:1/import"), std::string::npos);
}

}  // namespace
}  // namespace feedd
