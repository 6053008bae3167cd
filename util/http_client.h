// HttpClient: a blocking HTTP/1.1 client with one kept-alive connection, for
// the programs that talk to a running feedd (feedd worker, feedctl).
//
// Every call is bounded by the timeout given to the constructor. A request
// that fails on a reused connection (the server closed it while idle) is
// sent once more on a new one; any other failure is returned as
// `unavailable` naming the address.
//
// Thread-safety: not thread-safe; use one client per thread.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "util/status.h"

namespace feedd {

struct HttpReply {
  int status = 0;
  std::string body;
};

class HttpClient {
 public:
  // `address` is HOST:PORT.
  HttpClient(std::string address, std::chrono::milliseconds timeout);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  const std::string& address() const { return address_; }

  // Sends `method` (GET, POST, PUT, PATCH, DELETE) to `target` with a JSON
  // body when `body` is not empty.
  Result<HttpReply> Send(std::string_view method, std::string_view target,
                         std::string_view body = {});

 private:
  class Connection;
  std::string address_;
  std::chrono::milliseconds timeout_;
  std::unique_ptr<Connection> connection_;
};

// The Status of a reply that is not 2xx: the code and message of its
// {"error":{"code","message"}} body, or `unavailable` with the HTTP status.
Status StatusOfReply(const HttpReply& reply);

// `segment` percent-encoded for a URL path (unreserved characters stay).
std::string PercentEncodeSegment(std::string_view segment);

}  // namespace feedd
