// HttpClient: a blocking HTTP/1.1 client with one kept-alive connection, for
// the programs that talk to a running feedd (feedd worker, feedctl).
//
// With HttpClientSecurity::tls the connection is HTTPS: the server's
// certificate must chain to the context's CAs and name the HOST of the
// address (a DNS name or an IP address in its subjectAltName). A bearer
// token, when given, goes with every request (docs/security.md).
//
// Every call is bounded by the timeout given to the constructor (a streamed
// body: each piece written, and the answer). A request that fails on a
// reused connection (the server closed it while idle) is sent once more on
// a new one; any other failure is returned as `unavailable` naming the
// address. A streamed body (SendStream) cannot be sent twice: it always goes
// on a new connection.
//
// Thread-safety: not thread-safe; use one client per thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "util/status.h"

namespace boost::asio::ssl {
class context;
}  // namespace boost::asio::ssl

namespace feedd {

struct HttpClientSecurity {
  std::string bearer_token;  // sent as "Authorization: Bearer <token>"; "" = none
  // HTTPS with this context (util/tls_context.h); nullptr = plain HTTP.
  std::shared_ptr<boost::asio::ssl::context> tls;
};

// The bearer token a client program sends: the first line of `token_file`
// (spaces and tabs trimmed) when it is not empty, else that of the file
// named by $FEEDD_TOKEN_FILE, else $FEEDD_TOKEN, else "" (none). Never a
// command-line argument, which `ps` shows. Fails (invalid_request) naming
// the file when it cannot be read or its first line is empty.
Result<std::string> ClientBearerToken(const std::string& token_file);

struct HttpReply {
  int status = 0;
  std::string body;
};

class HttpClient {
 public:
  // `address` is HOST:PORT.
  HttpClient(std::string address, std::chrono::milliseconds timeout,
             HttpClientSecurity security = {});
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  const std::string& address() const { return address_; }

  // Sends `method` (GET, POST, PUT, PATCH, DELETE) to `target` with a JSON
  // body when `body` is not empty.
  Result<HttpReply> Send(std::string_view method, std::string_view target,
                         std::string_view body = {});

  // Gives a streamed body piece by piece: fills up to `capacity` bytes of
  // `buffer` and returns how many, 0 at the end of the body, or an error
  // that ends the request (returned by SendStream as it is).
  using BodySource = std::function<Result<size_t>(char* buffer, size_t capacity)>;

  // Sends `method` to `target` with the body `source` gives, in chunked
  // transfer coding with `content_type`, holding one piece at a time in
  // memory. When the server answers before it has taken the whole body (a
  // refusal) and the sending fails, that answer is still read and returned.
  Result<HttpReply> SendStream(std::string_view method, std::string_view target,
                               std::string_view content_type, const BodySource& source);

 private:
  class Connection;
  // Makes connection_ a new connection to address_; an error message, or
  // "" when it is connected.
  std::string Connect();
  // The `unavailable` Status of a failed request.
  Status Failure(std::string_view method, std::string_view target,
                 const std::string& message) const;
  std::string address_;
  std::chrono::milliseconds timeout_;
  HttpClientSecurity security_;
  std::unique_ptr<Connection> connection_;
};

// The Status of a reply that is not 2xx: the code and message of its
// {"error":{"code","message"}} body, or `unavailable` with the HTTP status.
Status StatusOfReply(const HttpReply& reply);

// `segment` percent-encoded for a URL path (unreserved characters stay).
std::string PercentEncodeSegment(std::string_view segment);

}  // namespace feedd
