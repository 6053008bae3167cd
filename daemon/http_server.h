// HttpServer: feedd's HTTP/1.1 server (Boost.Beast over Asio), keep-alive,
// one request at a time per connection (no pipelining).
//
// Operation
//   Listen() binds HOST:PORT (port 0 picks a free port; bound_address() tells
//   which); connections wait in the backlog until Start(), which binds first
//   if Listen() was not called, and starts `threads` I/O threads, each running an io_context of
//   its own. Connections are dealt to the threads round robin and stay on theirs, so a
//   request's read, handling and write never hop threads. Every
//   connection is a session on its thread's io_context: it reads a request (body at
//   most max_request_bytes, else 413 `payload_too_large` and the connection
//   is closed), hands it to the HttpHandler with a Responder, and writes the
//   response when the Responder is completed, from whatever thread. The
//   handler's Route() sees every head first; the route it may set on it
//   (HttpRequest::route) goes with the request to Screen(), StreamBody() and
//   Handle(). With screen_heads the handler's Screen() sees the head next
//   and may refuse the request before its body is read; the admission it
//   may set on the head (HttpRequest::admission) goes with the request to
//   StreamBody() and Handle().
//   A connection idle for idle_timeout is closed.
//   When the handler's StreamBody() returns a BodyStream for a request head,
//   the body is not buffered: it is read in pieces of at most 64 KiB, each
//   handed to the stream, the next read only once the stream asks for more
//   (no max_request_bytes, no max_buffered_bytes: the stream bounds what it
//   holds). A stream that stops early gets its answer sent and the rest of
//   the body drained for a moment before the connection is closed.
//
// HTTPS (HttpServerOptions::tls): every connection starts with a TLS
//   handshake (util/tls_context.h: TLS >= 1.2, Mozilla intermediate), within
//   idle_timeout; one that fails (plain HTTP, a missing or untrusted client
//   certificate) is closed and counted as ConnectionRejected("tls_handshake").
//   ReloadTls() reads the files again for the connections accepted after it;
//   open ones keep the context they started with.
//
// Limits (docs/api.md, "Limits")
//   - max_connections: a connection accepted beyond it is answered 503
//     `unavailable` (Retry-After: 1) and closed at once (over TLS: closed).
//   - max_buffered_bytes: request bodies held by all connections together,
//     counted from the Content-Length when the header arrives (what the body
//     buffer reserves) or as a chunked body grows, and released when the
//     request is answered. A request that would go over it is answered 503
//     `unavailable` (Retry-After: 1) and its connection closed.
//   - Transfer-Encoding: only `chunked`, alone (RFC 9112 6.1). Any other
//     coding is 501 `not_implemented`; a repeated `chunked`, a
//     Transfer-Encoding with a Content-Length or in HTTP/1.0 is 400
//     `invalid_request`. Either way the connection is closed and the body is
//     never read as a request.
//   Failed accepts (e.g. EMFILE) are retried after 100 ms and logged at most
//   once per 10 s.
//
// Lifecycle
//   Stop() closes the acceptor, tells the handler (OnServerStopping), closes
//   idle connections, lets in-flight requests finish (answered with
//   `Connection: close`), waits up to shutdown_grace for connections to end,
//   then stops the io_context and joins the threads. Responses completed
//   after Stop() are dropped. The io_context (and with it any connection
//   still referenced) is destroyed with the HttpServer; destroy it only after
//   nothing that may complete a Responder (the storage commit thread) runs.
//
// Thread-safety: Listen(), Start() and Stop() from one controlling thread;
// in_flight_requests() and bound_address() from any thread after Start().
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "daemon/host_port.h"
#include "daemon/http_handler.h"
#include "util/status.h"
#include "util/tls_context.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace feedd {

// What the server reports for its metrics (HttpProbe implements it). Called
// from the I/O threads; must not block.
class HttpServerObserver {
 public:
  virtual ~HttpServerObserver() = default;
  // Open connections went up or down by `delta`.
  virtual void ConnectionsChanged(int64_t delta) = 0;
  // A connection was not served: "max_connections", "accept_error" or
  // "tls_handshake".
  virtual void ConnectionRejected(std::string_view reason) = 0;
  // Buffered request body bytes went up or down by `delta`.
  virtual void BufferedBytesChanged(int64_t delta) = 0;
  // A request was refused by the server itself: "max_buffered_bytes" or
  // "transfer_coding".
  virtual void RequestRefused(std::string_view reason) = 0;
  // Work handed to a connection's I/O thread (ResponseSink::Post() or
  // Deliver(): a write's completion, a read its X-Feedd-Min-Lsn wait
  // released, a response) waited `seconds` for that thread to run it.
  virtual void HandOverWaited(double seconds) { (void)seconds; }
};

struct HttpServerOptions {
  HostPort listen;
  uint32_t threads = 2;
  size_t max_request_bytes = 8 * 1024 * 1024;
  size_t max_connections = 512;
  size_t max_buffered_bytes = 256 * 1024 * 1024;  // >= max_request_bytes
  std::chrono::milliseconds idle_timeout{60000};
  std::chrono::seconds shutdown_grace{10};
  // Ask the handler to screen each request head (HttpHandler::Screen) before
  // reading its body: set when authentication is on, so that a client
  // without a token cannot make the server hold its body.
  bool screen_heads = false;
  // HTTPS with these files; nullopt = plain HTTP.
  std::optional<TlsServerFiles> tls;
  // Not owned; nullptr reports nothing. Must outlive the server.
  HttpServerObserver* observer = nullptr;
  // The I/O threads are named <thread_name>-<i> (at most 15 characters).
  std::string thread_name = "feedd-http";
};

class HttpServer {
 public:
  explicit HttpServer(HttpServerOptions options);
  ~HttpServer();  // Stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // The first I/O thread's io_context; handlers may use it for timers and
  // posted work. Valid for the lifetime of the HttpServer.
  boost::asio::io_context& io_context();

  // Binds the listening socket, so that a taken port is found before
  // anything else starts. Fails with `unavailable` when the address cannot
  // be resolved or bound. Idempotent once it succeeded.
  Status Listen();
  // Binds (unless Listen() did) and starts serving with `handler` (not
  // owned; must outlive the server's threads, i.e. until Stop() returns).
  // Fails with invalid_request when the TLS files cannot be loaded.
  Status Start(HttpHandler* handler);
  // HTTPS: loads the TLS files again for new connections. On failure the
  // previous context stays in use. No-op for plain HTTP. Any thread.
  Status ReloadTls();
  // The address actually bound, e.g. "127.0.0.1:41234". REQUIRES: Listen()
  // or Start() ok.
  std::string bound_address() const;
  // Requests handed to the handler and not yet answered.
  int64_t in_flight_requests() const;
  // Graceful stop, see above. Idempotent.
  void Stop();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace feedd
