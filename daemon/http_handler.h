// The interface between the HTTP server (http_server.h) and what answers
// requests (api_router.h): plain request/response values, a Responder that
// delivers exactly one response, and the HttpHandler the server calls.
// Nothing here depends on Boost.Beast.
//
// Concurrency
//   HttpHandler::Handle() runs on an I/O thread and must not block. It may
//   complete the Responder later, from any thread (e.g. the storage commit
//   thread); the server moves the response back to the connection's strand.
//
// Ownership
//   A Responder is move-only and owns the right to answer one request; it
//   keeps the connection alive until it is used or destroyed. Destroying an
//   unused Responder abandons the request: the server answers 500 `internal`
//   (and logs it as a bug) unless it is shutting down, so a lost callback
//   never hangs a client.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/status.h"

namespace feedd {

enum class HttpMethod { kGet, kHead, kPost, kPut, kPatch, kDelete, kOptions, kOther };

// "GET", "POST", ...; "OTHER" for kOther.
std::string_view HttpMethodName(HttpMethod method);

struct HttpHeader {
  std::string name;
  std::string value;
};

// What a screening handler concluded from a request's head (AuthHandler:
// the token that admitted it); defined by that handler (auth_handler.h).
struct Admission;
// Where a request goes, matched once from its head by HttpHandler::Route()
// (ApiRouter: the route table); defined in route_match.h.
struct RouteMatch;

struct HttpRequest {
  HttpMethod method = HttpMethod::kGet;
  std::string target;  // origin-form, e.g. "/v1/changefeed?from=now"
  std::vector<HttpHeader> headers;
  std::string body;
  std::string peer;  // the client's address, HOST:PORT ("" when unknown)
  // Set by HttpHandler::Screen() on a head it admitted; the server hands it
  // to StreamBody() and Handle() of the same request, so that they need not
  // check the head again. Null when nothing admitted the request.
  std::shared_ptr<const Admission> admission;
  // Set by HttpHandler::Route() on every head, before anything else sees
  // it; the server hands it to Screen(), StreamBody() and Handle() of the
  // same request, so that none of them matches the path again. Null when
  // the handler routes nothing.
  std::shared_ptr<const RouteMatch> route;

  // The first header named `name` (ASCII case-insensitive), or nullopt.
  std::optional<std::string_view> Header(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  // Besides Content-Length and Connection; without a Content-Type the body
  // is sent as application/json.
  std::vector<HttpHeader> headers;
  std::string body;  // must be empty for 204
};

// Implemented by the server's connection; all may be called from any thread.
class ResponseSink {
 public:
  virtual ~ResponseSink() = default;
  virtual void Deliver(HttpResponse response) = 0;
  // The Responder was destroyed unused.
  virtual void Abandon() = 0;
  // Runs `work` on the thread that will write the response (the
  // connection's); dropped when the server has stopped. A decorating sink
  // passes it on.
  virtual void Post(std::function<void()> work) = 0;
};

class Responder {
 public:
  explicit Responder(std::shared_ptr<ResponseSink> sink) : sink_(std::move(sink)) {}
  Responder(Responder&& other) noexcept = default;
  Responder& operator=(Responder&& other) noexcept;
  Responder(const Responder&) = delete;
  Responder& operator=(const Responder&) = delete;
  ~Responder();

  // Answers the request. REQUIRES: not sent yet.
  void Send(HttpResponse response);
  // Runs `work` on the I/O thread of the request's connection, from any
  // thread: e.g. to build a response off the storage commit thread without
  // a second hop to the connection. `work` answers through this Responder
  // (keep it alive in a shared_ptr). REQUIRES: not sent yet.
  void Post(std::function<void()> work);
  // Hands over the right to answer (to a decorating sink); this Responder is
  // then empty and its destruction abandons nothing.
  std::shared_ptr<ResponseSink> Release() { return std::move(sink_); }

 private:
  std::shared_ptr<ResponseSink> sink_;
};

// Takes a request body piece by piece, for bodies too large to buffer
// (HttpHandler::StreamBody). The server reads the next piece only once the
// previous one was taken, so a slow consumer slows the client down (TCP
// back-pressure) instead of filling memory.
//
// Concurrency: Consume() and Finish() are called on the connection's strand,
// one at a time; `next` may be called from any thread.
class BodyStream {
 public:
  virtual ~BodyStream() = default;
  // The next piece of the body, valid during the call only. Call `next`
  // exactly once, now or later, from any thread: next(true) reads on,
  // next(false) stops reading (the server then calls Finish() and closes the
  // connection after the answer).
  virtual void Consume(std::string_view piece, std::function<void(bool more)> next) = 0;
  // The body ended (`error` OK), reading was stopped by next(false) (OK
  // too), or reading failed (`error` says why: a malformed chunk, the
  // connection closed, the idle timeout). Answer through `responder`.
  virtual void Finish(Status error, Responder responder) = 0;
};

class HttpHandler {
 public:
  virtual ~HttpHandler() = default;
  // Called on an I/O thread with every request's head (its body empty)
  // first, before Screen(), StreamBody() and Handle(): it may set
  // head.route, which the server carries to them. A decorator passes it on
  // to the handler it wraps. Must not block. Default: routes nothing.
  virtual void Route(HttpRequest& head) { (void)head; }
  // Called on an I/O thread with a request's head (its body empty) before
  // the body is read: a BodyStream to stream the body into, without the
  // http.max_request_bytes limit and outside http.max_buffered_bytes, or
  // nullptr (the default) to have the body buffered and handed to Handle().
  virtual std::unique_ptr<BodyStream> StreamBody(const HttpRequest& head) {
    (void)head;
    return nullptr;
  }
  // Called on an I/O thread for every request. Must complete `responder`
  // exactly once, now or later, from any thread.
  virtual void Handle(HttpRequest request, Responder responder) = 0;
  // Called on an I/O thread with the head of a request (no body) before the
  // server reads its body, when HttpServerOptions::screen_heads is set. A
  // response refuses the request: the server answers it at once, without
  // reading the body (and closes the connection when a body was coming), and
  // Handle() is not called. Otherwise it may set head.admission, which the
  // server carries to StreamBody() and Handle(). Must not block. Default:
  // admit everything.
  virtual std::optional<HttpResponse> Screen(HttpRequest& head) { return std::nullopt; }
  // Called once when the server starts stopping (acceptor closed): requests
  // that are parked waiting (long polls) should be answered now.
  virtual void OnServerStopping() = 0;
};

}  // namespace feedd
