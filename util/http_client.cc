#include "util/http_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>

#include "util/json_parse.h"

namespace feedd {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;

constexpr size_t kMaxReplyBytes = 256u << 20;

}  // namespace

// One TCP connection driven synchronously: each operation runs the
// io_context until it completes or the deadline closes the socket.
class HttpClient::Connection {
 public:
  explicit Connection(std::chrono::milliseconds timeout) : timeout_(timeout), stream_(io_) {}

  boost::system::error_code Connect(const std::string& host, const std::string& port) {
    tcp::resolver resolver(io_);
    boost::system::error_code ec;
    auto endpoints = resolver.resolve(host, port, ec);
    if (ec) return ec;
    stream_.expires_after(timeout_);
    stream_.async_connect(endpoints,
                          [&](boost::system::error_code e, const tcp::endpoint&) { ec = e; });
    Run();
    if (!ec) stream_.socket().set_option(tcp::no_delay(true), ec);
    return ec;
  }

  boost::system::error_code Exchange(http::request<http::string_body>& request,
                                     http::response<http::string_body>* response) {
    boost::system::error_code ec;
    stream_.expires_after(timeout_);
    http::async_write(stream_, request, [&](boost::system::error_code e, size_t) { ec = e; });
    Run();
    if (ec) return ec;
    http::response_parser<http::string_body> parser;
    parser.body_limit(kMaxReplyBytes);
    stream_.expires_after(timeout_);
    http::async_read(stream_, buffer_, parser,
                     [&](boost::system::error_code e, size_t) { ec = e; });
    Run();
    if (!ec) *response = parser.release();
    return ec;
  }

 private:
  void Run() {
    io_.restart();
    io_.run();
  }

  const std::chrono::milliseconds timeout_;
  boost::asio::io_context io_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
};

HttpClient::HttpClient(std::string address, std::chrono::milliseconds timeout)
    : address_(std::move(address)), timeout_(timeout) {}

HttpClient::~HttpClient() = default;

Result<HttpReply> HttpClient::Send(std::string_view method, std::string_view target,
                                   std::string_view body) {
  http::verb verb = http::string_to_verb(method);
  if (verb == http::verb::unknown) {
    return Status(ErrorCode::kInvalidRequest, "unknown HTTP method " + std::string(method));
  }
  http::request<http::string_body> request(verb, target, 11);
  request.set(http::field::host, address_);
  request.keep_alive(true);
  if (!body.empty()) {
    request.set(http::field::content_type, "application/json");
    request.body().assign(body);
  }
  request.prepare_payload();

  size_t colon = address_.rfind(':');
  if (colon == std::string::npos) {
    return Status(ErrorCode::kInvalidRequest, "'" + address_ + "' is not HOST:PORT");
  }
  std::string host = address_.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  boost::system::error_code ec;
  http::response<http::string_body> response;
  for (int attempt = 0; attempt < 2; ++attempt) {
    const bool reused = connection_ != nullptr;
    if (!reused) {
      connection_ = std::make_unique<Connection>(timeout_);
      ec = connection_->Connect(host, address_.substr(colon + 1));
      if (ec) break;
    }
    ec = connection_->Exchange(request, &response);
    if (!ec) break;
    connection_.reset();
    if (!reused) break;  // a fresh connection failed: do not try again
  }
  if (ec) {
    connection_.reset();
    return Status(ErrorCode::kUnavailable, std::string(method) + " http://" + address_ +
                                               std::string(target) + ": " + ec.message());
  }
  if (!response.keep_alive()) connection_.reset();
  HttpReply reply;
  reply.status = response.result_int();
  reply.body = std::move(response.body());
  return reply;
}

Status StatusOfReply(const HttpReply& reply) {
  if (reply.status >= 200 && reply.status < 300) return Status::Ok();
  Result<boost::json::value> body = ParseJson(reply.body);
  const boost::json::object* error = nullptr;
  if (body.ok() && body->is_object()) {
    if (const auto* e = body->as_object().if_contains("error")) error = e->if_object();
  }
  if (error != nullptr) {
    const auto* code = error->if_contains("code");
    const auto* message = error->if_contains("message");
    if (code != nullptr && code->is_string() && message != nullptr && message->is_string()) {
      return Status(ErrorCodeFromName(code->as_string()), std::string(message->as_string()));
    }
  }
  return Status(ErrorCode::kUnavailable,
                "HTTP " + std::to_string(reply.status) + ": " + reply.body.substr(0, 200));
}

std::string PercentEncodeSegment(std::string_view segment) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(segment.size());
  for (unsigned char c : segment) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

}  // namespace feedd
