#include "util/http_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/json.hpp>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <vector>

#include "util/json_parse.h"

namespace feedd {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;

constexpr size_t kMaxReplyBytes = 256u << 20;
// A streamed body is sent in chunks of at most this many bytes.
constexpr size_t kStreamPieceBytes = 256u << 10;

// The fields every request carries: Host, keep-alive and the bearer token.
template <typename Request>
void SetCommonFields(Request& request, const std::string& address, const std::string& token) {
  request.set(http::field::host, address);
  request.keep_alive(true);
  if (!token.empty()) request.set(http::field::authorization, "Bearer " + token);
}

}  // namespace

// One TCP connection, TLS or not, driven synchronously: each operation runs
// the io_context until it completes or the deadline closes the socket.
class HttpClient::Connection {
 public:
  Connection(std::chrono::milliseconds timeout, boost::asio::ssl::context* tls)
      : timeout_(timeout) {
    if (tls != nullptr) {
      tls_.emplace(io_, *tls);
    } else {
      plain_.emplace(io_);
    }
  }

  boost::system::error_code Connect(const std::string& host, const std::string& port) {
    tcp::resolver resolver(io_);
    boost::system::error_code ec;
    auto endpoints = resolver.resolve(host, port, ec);
    if (ec) return ec;
    tcp_stream().expires_after(timeout_);
    tcp_stream().async_connect(endpoints,
                               [&](boost::system::error_code e, const tcp::endpoint&) { ec = e; });
    Run();
    if (!ec) tcp_stream().socket().set_option(tcp::no_delay(true), ec);
    if (ec || !tls_) return ec;
    // SNI for a DNS name (never for an address literal, RFC 6066 3).
    boost::system::error_code not_an_address;
    boost::asio::ip::make_address(host, not_an_address);
    if (not_an_address && SSL_set_tlsext_host_name(tls_->native_handle(), host.c_str()) != 1) {
      return boost::asio::error::invalid_argument;
    }
    tls_->set_verify_callback(boost::asio::ssl::host_name_verification(host));
    tcp_stream().expires_after(timeout_);
    tls_->async_handshake(boost::asio::ssl::stream_base::client,
                          [&](boost::system::error_code e) { ec = e; });
    Run();
    return ec;
  }

  boost::system::error_code Exchange(http::request<http::string_body>& request,
                                     http::response<http::string_body>* response) {
    return tls_ ? Exchange(*tls_, request, response) : Exchange(*plain_, request, response);
  }

  // Sends `head` and then the body `source` gives, in chunks, and reads the
  // answer; read even when sending failed (a server that refuses a body
  // answers and stops reading it). A failure of `source` ends the exchange
  // at once, in *source_error.
  boost::system::error_code ExchangeStreamed(http::request<http::empty_body>& head,
                                             const HttpClient::BodySource& source,
                                             Status* source_error,
                                             http::response<http::string_body>* response) {
    return tls_ ? ExchangeStreamed(*tls_, head, source, source_error, response)
                : ExchangeStreamed(*plain_, head, source, source_error, response);
  }

 private:
  template <typename Stream>
  boost::system::error_code Exchange(Stream& stream, http::request<http::string_body>& request,
                                     http::response<http::string_body>* response) {
    boost::system::error_code ec;
    tcp_stream().expires_after(timeout_);
    http::async_write(stream, request, [&](boost::system::error_code e, size_t) { ec = e; });
    Run();
    if (ec) return ec;
    return Read(stream, response);
  }

  template <typename Stream>
  boost::system::error_code ExchangeStreamed(Stream& stream, http::request<http::empty_body>& head,
                                             const HttpClient::BodySource& source,
                                             Status* source_error,
                                             http::response<http::string_body>* response) {
    boost::system::error_code ec;
    auto written = [&](boost::system::error_code e, size_t) { ec = e; };
    http::request_serializer<http::empty_body> serializer(head);
    tcp_stream().expires_after(timeout_);
    http::async_write_header(stream, serializer, written);
    Run();
    std::vector<char> piece(kStreamPieceBytes);
    while (!ec) {
      Result<size_t> n = source(piece.data(), piece.size());
      if (!n.ok()) {
        *source_error = n.status();
        return ec;
      }
      tcp_stream().expires_after(timeout_);
      if (*n == 0) {
        boost::asio::async_write(stream, http::make_chunk_last(), written);
        Run();
        break;
      }
      boost::asio::async_write(stream, http::make_chunk(boost::asio::buffer(piece.data(), *n)),
                               written);
      Run();
    }
    boost::system::error_code read_ec = Read(stream, response);
    if (read_ec && ec) return ec;  // the cause: sending failed
    return read_ec;
  }

  template <typename Stream>
  boost::system::error_code Read(Stream& stream, http::response<http::string_body>* response) {
    boost::system::error_code ec;
    http::response_parser<http::string_body> parser;
    parser.body_limit(kMaxReplyBytes);
    tcp_stream().expires_after(timeout_);
    http::async_read(stream, buffer_, parser, [&](boost::system::error_code e, size_t) { ec = e; });
    Run();
    if (!ec) *response = parser.release();
    return ec;
  }

  beast::tcp_stream& tcp_stream() { return tls_ ? beast::get_lowest_layer(*tls_) : *plain_; }

  void Run() {
    io_.restart();
    io_.run();
  }

  const std::chrono::milliseconds timeout_;
  boost::asio::io_context io_;
  std::optional<beast::tcp_stream> plain_;
  std::optional<beast::ssl_stream<beast::tcp_stream>> tls_;
  beast::flat_buffer buffer_;
};

Result<std::string> ClientBearerToken(const std::string& token_file) {
  std::string path = token_file;
  if (path.empty()) {
    if (const char* from_env = std::getenv("FEEDD_TOKEN_FILE"); from_env && *from_env) {
      path = from_env;
    } else if (const char* token = std::getenv("FEEDD_TOKEN"); token != nullptr) {
      return std::string(token);
    } else {
      return std::string();
    }
  }
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) {
    return Status(ErrorCode::kInvalidRequest, "cannot read a token from " + path);
  }
  size_t begin = line.find_first_not_of(" \t\r");
  size_t end = line.find_last_not_of(" \t\r");
  if (begin == std::string::npos) {
    return Status(ErrorCode::kInvalidRequest, "the first line of " + path + " is empty");
  }
  return line.substr(begin, end - begin + 1);
}

HttpClient::HttpClient(std::string address, std::chrono::milliseconds timeout,
                       HttpClientSecurity security)
    : address_(std::move(address)), timeout_(timeout), security_(std::move(security)) {}

HttpClient::~HttpClient() = default;

std::string HttpClient::Connect() {
  size_t colon = address_.rfind(':');
  if (colon == std::string::npos) return "'" + address_ + "' is not HOST:PORT";
  std::string host = address_.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  connection_ = std::make_unique<Connection>(timeout_, security_.tls.get());
  boost::system::error_code ec = connection_->Connect(host, address_.substr(colon + 1));
  if (!ec) return "";
  connection_.reset();
  return ec.message();
}

Status HttpClient::Failure(std::string_view method, std::string_view target,
                           const std::string& message) const {
  return Status(ErrorCode::kUnavailable, std::string(method) +
                                             (security_.tls ? " https://" : " http://") + address_ +
                                             std::string(target) + ": " + message);
}

Result<HttpReply> HttpClient::Send(std::string_view method, std::string_view target,
                                   std::string_view body) {
  http::verb verb = http::string_to_verb(method);
  if (verb == http::verb::unknown) {
    return Status(ErrorCode::kInvalidRequest, "unknown HTTP method " + std::string(method));
  }
  http::request<http::string_body> request(verb, target, 11);
  SetCommonFields(request, address_, security_.bearer_token);
  if (!body.empty()) {
    request.set(http::field::content_type, "application/json");
    request.body().assign(body);
  }
  request.prepare_payload();

  http::response<http::string_body> response;
  for (int attempt = 0; attempt < 2; ++attempt) {
    const bool reused = connection_ != nullptr;
    if (!reused) {
      if (std::string error = Connect(); !error.empty()) return Failure(method, target, error);
    }
    boost::system::error_code ec = connection_->Exchange(request, &response);
    if (!ec) break;
    connection_.reset();
    // A fresh connection failed: do not try again.
    if (!reused) return Failure(method, target, ec.message());
  }
  if (!response.keep_alive()) connection_.reset();
  HttpReply reply;
  reply.status = response.result_int();
  reply.body = std::move(response.body());
  return reply;
}

Result<HttpReply> HttpClient::SendStream(std::string_view method, std::string_view target,
                                         std::string_view content_type, const BodySource& source) {
  http::verb verb = http::string_to_verb(method);
  if (verb == http::verb::unknown) {
    return Status(ErrorCode::kInvalidRequest, "unknown HTTP method " + std::string(method));
  }
  http::request<http::empty_body> head(verb, target, 11);
  SetCommonFields(head, address_, security_.bearer_token);
  head.set(http::field::content_type, content_type);
  head.chunked(true);

  connection_.reset();  // a body that cannot be sent twice goes on a new connection
  if (std::string error = Connect(); !error.empty()) return Failure(method, target, error);
  Status source_error;
  http::response<http::string_body> response;
  boost::system::error_code ec =
      connection_->ExchangeStreamed(head, source, &source_error, &response);
  if (!source_error.ok() || ec) {
    connection_.reset();
    if (!source_error.ok()) return source_error;
    return Failure(method, target, ec.message());
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
