#include "daemon/http_server.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/ssl.hpp>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "daemon/http_request_head.h"
#include "util/logging.h"
#include "util/thread_name.h"
#include "util/tls_context.h"

namespace feedd {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
namespace ssl = asio::ssl;

// After a 413 or a malformed request the client may still be sending: read
// and discard for a while so that closing does not reset the connection
// before the client has read the answer.
constexpr auto kLingerTimeout = std::chrono::seconds(2);
constexpr size_t kLingerMaxBytes = 16 * 1024 * 1024;
constexpr size_t kLingerChunk = 16 * 1024;
// A BodyStream's pieces, at most, and what one read of a streamed body asks
// the socket for (Beast reads no more than the buffer's free capacity, at
// least 512 bytes: an import read 512 bytes per system call).
constexpr size_t kStreamPieceBytes = 64 * 1024;
constexpr auto kAcceptRetryDelay = std::chrono::milliseconds(100);
constexpr int kLogIntervalSeconds = 10;  // for repeated warnings

class SessionBase;

double SecondsSince(std::chrono::steady_clock::time_point then) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - then).count();
}

class NoObserver : public HttpServerObserver {
 public:
  void ConnectionsChanged(int64_t) override {}
  void ConnectionRejected(std::string_view) override {}
  void BufferedBytesChanged(int64_t) override {}
  void RequestRefused(std::string_view) override {}
};

// What the server and its sessions share; outlives both.
struct ServerState {
  HttpHandler* handler = nullptr;
  HttpServerObserver* observer = nullptr;  // never null
  size_t max_request_bytes = 0;
  size_t max_connections = 0;
  size_t max_buffered_bytes = 0;
  bool screen_heads = false;
  std::chrono::milliseconds idle_timeout{0};
  std::atomic<size_t> connections{0};     // incremented on the acceptor's strand only
  std::atomic<size_t> buffered_bytes{0};  // <= max_buffered_bytes
  std::atomic<bool> stopping{false};      // answer in-flight requests, then close
  std::atomic<bool> stopped{false};       // I/O threads are gone: drop responses
  std::atomic<int64_t> in_flight{0};

  std::mutex mu;
  std::condition_variable sessions_changed;
  std::unordered_map<SessionBase*, std::weak_ptr<SessionBase>> sessions;  // GUARDED_BY(mu)

  // HTTPS: the context new connections use (replaced by ReloadTls);
  // nullptr when the API is plain HTTP.
  std::mutex tls_mu;
  std::shared_ptr<ssl::context> tls;  // GUARDED_BY(tls_mu)
  std::shared_ptr<ssl::context> CurrentTls() {
    std::lock_guard<std::mutex> lock(tls_mu);
    return tls;
  }

  // Takes `bytes` of the body budget; false (and nothing taken) when that
  // would exceed max_buffered_bytes.
  bool ReserveBody(size_t bytes) {
    size_t held = buffered_bytes.load();
    do {
      if (bytes > max_buffered_bytes - held) return false;
    } while (!buffered_bytes.compare_exchange_weak(held, held + bytes));
    observer->BufferedBytesChanged(static_cast<int64_t>(bytes));
    return true;
  }
  void ReleaseBody(size_t bytes) {
    buffered_bytes -= bytes;
    observer->BufferedBytesChanged(-static_cast<int64_t>(bytes));
  }
};

// An error answered by the server itself. `message` must not need escaping.
HttpResponse ServerError(int status, std::string_view code, std::string_view message) {
  HttpResponse response;
  response.status = status;
  response.body = R"({"error":{"code":")";
  response.body.append(code);
  response.body += R"(","message":")";
  response.body.append(message);
  response.body += R"("}})";
  if (status == 503) response.headers.push_back({"Retry-After", "1"});
  return response;
}

// Answers a connection over http.max_connections (when `answer`: plain
// HTTP; over TLS it is only closed) and closes it, without a session: the
// socket is new, so the short answer fits its send buffer.
void RefuseConnection(tcp::socket socket, size_t max_connections, bool answer) {
  static const std::string kBody =
      R"json({"error":{"code":"unavailable","message":"too many connections (http.max_connections)"}})json";
  std::string text =
      "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
      "Retry-After: 1\r\nConnection: close\r\nContent-Length: " +
      std::to_string(kBody.size()) + "\r\n\r\n" + kBody;
  beast::error_code ec;
  socket.non_blocking(true, ec);
  if (!ec && answer) socket.write_some(asio::buffer(text), ec);
  socket.shutdown(tcp::socket::shutdown_send, ec);
  socket.close(ec);
  FEEDD_LOG_EVERY_N_SEC(kWarning, "http", kLogIntervalSeconds)
      << "refused a connection: " << max_connections
      << " connections are open (http.max_connections)";
}

std::string PeerOf(const tcp::socket& socket) {
  beast::error_code ec;
  tcp::endpoint peer = socket.remote_endpoint(ec);
  if (ec) return "";
  return HostPort{peer.address().to_string(), peer.port()}.ToString();
}

// What the server holds of a connection, whatever its stream.
class SessionBase : public ResponseSink {
 public:
  // The server is stopping: close the connection now if it is idle.
  virtual void OnServerStopping() = 0;
};

// One connection over `Stream`: beast::tcp_stream (HTTP) or
// beast::ssl_stream<beast::tcp_stream> (HTTPS, which starts with the TLS
// handshake). Every member is used on the connection's I/O thread only (the
// one thread that runs its io_context), except Deliver(), Abandon(), Post()
// and OnServerStopping(), which post to it.
template <typename Stream>
class Session : public std::enable_shared_from_this<Session<Stream>>, public SessionBase {
 public:
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;

  Session(tcp::socket&& socket, std::shared_ptr<ServerState> state) requires(!kTls)
      : peer_(PeerOf(socket)), stream_(std::move(socket)), state_(std::move(state)) {}
  Session(tcp::socket&& socket, std::shared_ptr<ServerState> state,
          std::shared_ptr<ssl::context> tls) requires(kTls)
      : peer_(PeerOf(socket)),
        tls_(std::move(tls)),
        stream_(std::move(socket), *tls_),
        state_(std::move(state)) {}

  // REQUIRES: the caller counted this connection in state->connections.
  ~Session() override {
    ReleaseBody();
    --state_->connections;
    state_->observer->ConnectionsChanged(-1);
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->sessions.erase(this);
    state_->sessions_changed.notify_all();
  }

  void Start() {
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      state_->sessions.emplace(this, this->weak_from_this());
    }
    asio::dispatch(stream_.get_executor(), [self = this->shared_from_this()] {
      if (self->state_->stopping) {
        self->Close();
      } else if constexpr (kTls) {
        self->Handshake();
      } else {
        self->ReadHeader();
      }
    });
  }

  void Deliver(HttpResponse response) override {
    if (state_->stopped) return;
    HandOver([self = shared_from_this(), response = std::move(response)]() mutable {
      self->Write(std::move(response), /*linger=*/false);
    });
  }

  void Abandon() override {
    if (state_->stopped) return;
    FEEDD_LOG(kError, "http") << "bug: a request was dropped without an answer";
    Deliver(ServerError(500, "internal", "the request was dropped without an answer"));
  }

  void Post(std::function<void()> work) override {
    if (state_->stopped) return;
    HandOver(std::move(work));
  }

  // Runs `work` on this connection's I/O thread, reporting how long it
  // waited for it (HttpServerObserver::HandOverWaited).
  template <typename Work>
  void HandOver(Work work) {
    asio::post(stream_.get_executor(),
               [self = shared_from_this(), handed = std::chrono::steady_clock::now(),
                work = std::move(work)]() mutable {
                 self->state_->observer->HandOverWaited(SecondsSince(handed));
                 work();
               });
  }

  // The server is stopping: close the connection now if it is idle.
  void OnServerStopping() override {
    asio::post(stream_.get_executor(), [self = this->shared_from_this()] {
      bool request_started =
          self->buffer_.size() > 0 || (self->parser_ && self->parser_->got_some());
      if (self->phase_ == Phase::kReading && !request_started) self->tcp_layer().cancel();
    });
  }

 private:
  enum class Phase { kReading, kHandling, kWriting, kClosing };

  using std::enable_shared_from_this<Session<Stream>>::shared_from_this;

  beast::tcp_stream& tcp_layer() { return beast::get_lowest_layer(stream_); }

  // HTTPS: the TLS handshake, within idle_timeout. A client that fails it
  // (plain HTTP, no or a wrong client certificate, an old protocol) is
  // counted and closed.
  void Handshake() {
    tcp_layer().expires_after(state_->idle_timeout);
    stream_.async_handshake(
        ssl::stream_base::server, [self = shared_from_this()](beast::error_code ec) {
          if (!ec) return self->ReadHeader();
          self->state_->observer->ConnectionRejected("tls_handshake");
          FEEDD_LOG_EVERY_N_SEC(kWarning, "http", kLogIntervalSeconds)
              << "TLS handshake with " << self->peer_ << " failed: " << ec.message();
          self->Close();
        });
  }

  void ReadHeader() {
    phase_ = Phase::kReading;
    head_request_ = false;
    parser_.emplace();
    ConfigureRequestParser(*parser_, state_->max_request_bytes);
    tcp_layer().expires_after(state_->idle_timeout);
    http::async_read_header(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->OnHeader(ec); });
  }

  void OnHeader(beast::error_code ec) {
    if (ec) return OnReadError(ec);
    const auto& request = parser_->get();
    if (Status framing = CheckFraming(request); !framing.ok()) {
      state_->observer->RequestRefused("transfer_coding");
      return Write(ServerError(ErrorCodeHttpStatus(framing.code()), ErrorCodeName(framing.code()),
                               framing.message()),
                   /*linger=*/true);
    }
    HttpRequest head = HeadOf(request);
    head.peer = peer_;
    state_->handler->Route(head);
    if (state_->screen_heads) {
      if (std::optional<HttpResponse> refusal = state_->handler->Screen(head)) {
        keep_alive_ = request.keep_alive();
        head_request_ = request.method() == http::verb::head;
        // A body that is coming is never read: close after the answer.
        return Write(std::move(*refusal), /*linger=*/!parser_->is_done());
      }
    }
    if (std::unique_ptr<BodyStream> body_stream = StreamBodyOf(head)) {
      return StartStream(std::move(body_stream));
    }
    admission_ = std::move(head.admission);
    route_ = std::move(head.route);
    // A string body reserves its Content-Length at once.
    if (auto length = parser_->content_length(); length && *length > 0) {
      if (!ReserveBody(*length)) return RefuseBody();
    }
    if (request.version() >= 11 && !parser_->is_done() &&
        beast::iequals(request[http::field::expect], "100-continue")) {
      continue_.emplace(http::status::continue_, request.version());
      http::async_write(stream_, *continue_,
                        [self = shared_from_this()](beast::error_code write_ec, size_t) {
                          if (write_ec) return self->Close();
                          self->ReadBody();
                        });
      return;
    }
    ReadBody();
  }

  // Reads the body piece by piece, so that a chunked body is counted in the
  // body budget as it grows.
  void ReadBody() {
    if (parser_->is_done()) return Dispatch();
    http::async_read_some(
        stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, size_t) {
          if (ec) return self->OnReadError(ec);
          size_t held = self->parser_->get().body().size();
          if (held > self->reserved_ && !self->ReserveBody(held - self->reserved_))
            return self->RefuseBody();
          self->ReadBody();
        });
  }

  // The handler's BodyStream for this request, or null (buffer the body).
  std::unique_ptr<BodyStream> StreamBodyOf(const HttpRequest& head) {
    try {
      return state_->handler->StreamBody(head);
    } catch (const std::exception& e) {
      FEEDD_LOG(kError, "http") << "StreamBody failed: " << e.what();
      return nullptr;
    }
  }

  // Streams the body into `body_stream` piece by piece (BodyStream), with no
  // body limit: what it holds is the stream's business.
  void StartStream(std::unique_ptr<BodyStream> body_stream) {
    phase_ = Phase::kHandling;
    auto& message = parser_->get();
    keep_alive_ = message.keep_alive();
    if (LogEnabled(LogLevel::kDebug)) {
      request_line_ = std::string(message.method_string()) + " " + std::string(message.target());
      started_ = std::chrono::steady_clock::now();
    }
    const bool expects_continue = message.version() >= 11 && !parser_->is_done() &&
                                  beast::iequals(message[http::field::expect], "100-continue");
    const unsigned version = message.version();
    body_stream_ = std::move(body_stream);
    stream_parser_.emplace(std::move(*parser_));
    parser_.reset();
    stream_parser_->body_limit(boost::none);
    piece_.resize(kStreamPieceBytes);
    buffer_.reserve(buffer_.size() + kStreamPieceBytes);
    ++state_->in_flight;
    in_flight_ = true;
    if (expects_continue) {
      continue_.emplace(http::status::continue_, version);
      http::async_write(
          stream_, *continue_, [self = shared_from_this()](beast::error_code ec, size_t) {
            if (ec)
              return self->EndStream(Status(ErrorCode::kInvalidRequest, "the connection failed"));
            self->ReadPiece();
          });
      return;
    }
    ReadPiece();
  }

  void ReadPiece() {
    if (stream_parser_->is_done()) return EndStream(Status::Ok());
    auto& body = stream_parser_->get().body();
    body.data = piece_.data();
    body.size = piece_.size();
    body.more = true;
    tcp_layer().expires_after(state_->idle_timeout);
    http::async_read_some(
        stream_, buffer_, *stream_parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) {
          if (ec == http::error::need_buffer) ec = {};
          if (ec) {
            bool closed =
                ec == http::error::end_of_stream || ec == http::error::partial_message ||
                ec.category() != http::make_error_code(http::error::bad_method).category();
            return self->EndStream(Status(
                ErrorCode::kInvalidRequest,
                closed ? "the connection closed or timed out before the body ended: " + ec.message()
                       : "malformed HTTP body: " + ec.message()));
          }
          size_t got = self->piece_.size() - self->stream_parser_->get().body().size;
          if (got == 0) return self->ReadPiece();
          self->tcp_layer().expires_never();
          self->body_stream_->Consume(
              std::string_view(self->piece_.data(), got), [self](bool more) {
                asio::post(self->stream_.get_executor(), [self, more] {
                  if (!more) {
                    self->stopped_reading_ = !self->stream_parser_->is_done();
                    return self->EndStream(Status::Ok());
                  }
                  self->ReadPiece();
                });
              });
        });
  }

  void EndStream(Status error) {
    tcp_layer().expires_never();
    buffer_.shrink_to_fit();  // an idle connection holds no stream's buffer
    std::string().swap(piece_);
    if (!error.ok() || stopped_reading_) keep_alive_ = false;
    std::unique_ptr<BodyStream> body_stream = std::move(body_stream_);
    try {
      body_stream->Finish(std::move(error), Responder(shared_from_this()));
    } catch (const std::exception& e) {
      FEEDD_LOG(kError, "http") << "a body stream failed: " << e.what();
    }
  }

  bool ReserveBody(size_t bytes) {
    if (!state_->ReserveBody(bytes)) return false;
    reserved_ += bytes;
    return true;
  }

  void ReleaseBody() {
    if (reserved_ > 0) state_->ReleaseBody(reserved_);
    reserved_ = 0;
  }

  void RefuseBody() {
    state_->observer->RequestRefused("max_buffered_bytes");
    FEEDD_LOG_EVERY_N_SEC(kWarning, "http", kLogIntervalSeconds)
        << "refused a request: the request bodies being received hold "
        << state_->buffered_bytes.load() << " bytes (http.max_buffered_bytes "
        << state_->max_buffered_bytes << ")";
    Write(ServerError(503, "unavailable",
                      "the server holds too many request bodies (http.max_buffered_bytes); "
                      "retry later"),
          /*linger=*/true);
  }

  void OnReadError(beast::error_code ec) {
    if (ec == http::error::body_limit) {
      return Write(ServerError(413, "payload_too_large",
                               "the request body is larger than http.max_request_bytes (" +
                                   std::to_string(state_->max_request_bytes) + " bytes)"),
                   /*linger=*/true);
    }
    bool parse_error = ec.category() == http::make_error_code(http::error::bad_method).category();
    if (parse_error && ec != http::error::end_of_stream && ec != http::error::partial_message) {
      return Write(ServerError(400, "invalid_request", "malformed HTTP request"),
                   /*linger=*/true);
    }
    // End of stream, idle timeout, cancelled by Stop(), or a socket error.
    Close();
  }

  void Dispatch() {
    phase_ = Phase::kHandling;
    tcp_layer().expires_never();
    auto& message = parser_->get();
    keep_alive_ = message.keep_alive();
    head_request_ = message.method() == http::verb::head;

    HttpRequest request = ToHttpRequest(message);
    request.peer = peer_;
    request.admission = std::move(admission_);
    request.route = std::move(route_);
    if (LogEnabled(LogLevel::kDebug)) {
      request_line_ = std::string(message.method_string()) + " " + request.target;
      started_ = std::chrono::steady_clock::now();
    }

    ++state_->in_flight;
    in_flight_ = true;
    try {
      state_->handler->Handle(std::move(request), Responder(shared_from_this()));
    } catch (const std::exception& e) {
      // The Responder was destroyed by the unwinding, which answered 500.
      FEEDD_LOG(kError, "http") << "request handler failed: " << e.what();
    }
  }

  void Write(HttpResponse response, bool linger) {
    ReleaseBody();
    // A body left unread: drain a little of it so the client reads the answer.
    if (stopped_reading_) linger = true;
    stopped_reading_ = false;
    stream_parser_.reset();
    if (in_flight_) {
      --state_->in_flight;
      in_flight_ = false;
    }
    if (phase_ == Phase::kClosing) return;
    phase_ = Phase::kWriting;
    bool close = linger || !keep_alive_ || state_->stopping;
    auto message = std::make_unique<http::response<http::string_body>>(
        static_cast<http::status>(response.status), 11);
    for (HttpHeader& header : response.headers) message->set(header.name, header.value);
    if (response.status == 204) {
      response.body.clear();
    } else if (message->find(http::field::content_type) == message->end()) {
      message->set(http::field::content_type, "application/json");
    }
    message->body() = std::move(response.body);
    message->keep_alive(!close);
    message->prepare_payload();
    if (head_request_) message->body().clear();  // keeps the Content-Length
    response_ = std::move(message);

    tcp_layer().expires_after(state_->idle_timeout);
    http::async_write(stream_, *response_,
                      [self = shared_from_this(), close, linger](beast::error_code ec, size_t) {
                        self->OnWrite(ec, close, linger);
                      });
  }

  void OnWrite(beast::error_code ec, bool close, bool linger) {
    if (!request_line_.empty()) {
      auto micros = std::chrono::duration_cast<std::chrono::microseconds>(
                        std::chrono::steady_clock::now() - started_)
                        .count();
      FEEDD_LOG(kDebug, "http") << request_line_ << " -> " << response_->result_int() << " in "
                                << micros << " us";
      request_line_.clear();
    }
    response_.reset();
    if (ec) return Close();
    if (linger) return LingeringClose();
    if (close || state_->stopping) return Close();
    ReadHeader();
  }

  // Over TLS the connection ends without close_notify: every response has
  // its length, so a client loses nothing (and a truncation attack gains
  // nothing).
  void Close() {
    phase_ = Phase::kClosing;
    beast::error_code ignored;
    tcp_layer().socket().shutdown(tcp::socket::shutdown_send, ignored);
    tcp_layer().close();
  }

  // Reads and drops what the client still sends (raw bytes, below TLS).
  void LingeringClose() {
    phase_ = Phase::kClosing;
    beast::error_code ignored;
    tcp_layer().socket().shutdown(tcp::socket::shutdown_send, ignored);
    tcp_layer().expires_after(kLingerTimeout);
    buffer_.clear();
    Drain(0);
  }

  void Drain(size_t drained) {
    tcp_layer().async_read_some(buffer_.prepare(kLingerChunk), [self = shared_from_this(), drained](
                                                                   beast::error_code ec, size_t n) {
      if (ec || drained + n > kLingerMaxBytes) return self->tcp_layer().close();
      self->Drain(drained + n);
    });
  }

  const std::string peer_;  // HOST:PORT of the client
  // HTTPS: the context this connection was accepted with; outlives stream_.
  const std::shared_ptr<ssl::context> tls_;
  Stream stream_;
  std::shared_ptr<ServerState> state_;
  beast::flat_buffer buffer_;
  std::optional<RequestParser> parser_;
  // A body streamed into a BodyStream (StartStream) instead of parser_.
  std::optional<http::request_parser<http::buffer_body>> stream_parser_;
  std::unique_ptr<BodyStream> body_stream_;
  std::string piece_;             // the stream's read buffer
  bool stopped_reading_ = false;  // the stream said next(false) before the body ended
  std::optional<http::response<http::empty_body>> continue_;
  std::unique_ptr<http::response<http::string_body>> response_;  // being written
  Phase phase_ = Phase::kReading;
  bool keep_alive_ = true;     // of the current request
  bool head_request_ = false;  // the current request is a HEAD: no body
  bool in_flight_ = false;     // counted in state_->in_flight
  size_t reserved_ = 0;        // of state_->buffered_bytes, for the current request
  // What Screen() concluded from the current request's head, for Handle().
  std::shared_ptr<const Admission> admission_;
  // What Route() matched from the current request's head, for Handle().
  std::shared_ptr<const RouteMatch> route_;
  std::string request_line_;  // for the debug access log
  std::chrono::steady_clock::time_point started_;
};

}  // namespace

class HttpServer::Impl {
 public:
  explicit Impl(HttpServerOptions options)
      : options_(std::move(options)),
        state_(std::make_shared<ServerState>()),
        contexts_(MakeContexts(options_.threads)),
        acceptor_(asio::make_strand(*contexts_.front())),
        retry_timer_(acceptor_.get_executor()) {}

  ~Impl() { Stop(); }

  asio::io_context& io_context() { return *contexts_.front(); }

  Status Listen() {
    if (acceptor_.is_open()) return Status::Ok();
    std::string where = options_.listen.ToString();
    beast::error_code ec;
    tcp::endpoint endpoint;
    asio::ip::address address = asio::ip::make_address(options_.listen.host, ec);
    if (!ec) {
      endpoint = tcp::endpoint(address, options_.listen.port);
    } else {
      tcp::resolver resolver(*contexts_.front());
      auto results = resolver.resolve(options_.listen.host, std::to_string(options_.listen.port),
                                      tcp::resolver::passive | tcp::resolver::numeric_service, ec);
      if (ec || results.empty()) {
        return Status(ErrorCode::kUnavailable,
                      "cannot resolve " + where + ": " + (ec ? ec.message() : "no address"));
      }
      endpoint = results.begin()->endpoint();
    }
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (!ec) bound_ = acceptor_.local_endpoint(ec);
    if (ec) {
      beast::error_code ignored;
      acceptor_.close(ignored);
      return Status(ErrorCode::kUnavailable, "cannot listen on " + where + ": " + ec.message());
    }
    return Status::Ok();
  }

  Status Start(HttpHandler* handler) {
    if (Status s = Listen(); !s.ok()) return s;
    state_->handler = handler;
    static NoObserver no_observer;
    state_->observer = options_.observer ? options_.observer : &no_observer;
    state_->max_request_bytes = options_.max_request_bytes;
    state_->max_connections = options_.max_connections;
    state_->max_buffered_bytes = std::max(options_.max_buffered_bytes, options_.max_request_bytes);
    state_->idle_timeout = options_.idle_timeout;
    state_->screen_heads = options_.screen_heads;
    if (options_.tls) {
      Result<std::shared_ptr<ssl::context>> tls = MakeServerTlsContext(*options_.tls);
      if (!tls.ok()) return tls.status();
      state_->tls = std::move(*tls);
    }

    for (auto& context : contexts_) work_.emplace_back(context->get_executor());
    Accept();
    for (size_t i = 0; i < contexts_.size(); ++i) {
      threads_.emplace_back([this, i] { RunThread(i); });
    }
    started_ = true;
    return Status::Ok();
  }

  std::string bound_address() const {
    return HostPort{bound_.address().to_string(), bound_.port()}.ToString();
  }

  int64_t in_flight_requests() const { return state_->in_flight.load(); }

  Status ReloadTls() {
    if (!options_.tls) return Status::Ok();
    Result<std::shared_ptr<ssl::context>> tls = MakeServerTlsContext(*options_.tls);
    if (!tls.ok()) return tls.status();
    std::lock_guard<std::mutex> lock(state_->tls_mu);
    state_->tls = std::move(*tls);
    return Status::Ok();
  }

  void Stop() {
    if (!started_ || stopped_) return;
    stopped_ = true;
    state_->stopping = true;
    asio::post(acceptor_.get_executor(), [this] {
      beast::error_code ignored;
      acceptor_.close(ignored);
      retry_timer_.cancel();
    });
    state_->handler->OnServerStopping();

    std::vector<std::shared_ptr<SessionBase>> sessions;
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      for (auto& [_, weak] : state_->sessions) {
        if (auto session = weak.lock()) sessions.push_back(std::move(session));
      }
    }
    for (auto& session : sessions) session->OnServerStopping();
    sessions.clear();  // our references must not keep them open

    {
      std::unique_lock<std::mutex> lock(state_->mu);
      if (!state_->sessions_changed.wait_for(lock, options_.shutdown_grace,
                                             [&] { return state_->sessions.empty(); })) {
        FEEDD_LOG(kWarning, "http")
            << "closing " << state_->sessions.size()
            << " connection(s) still open after http.shutdown_grace_seconds ("
            << options_.shutdown_grace.count() << " s)";
      }
    }
    state_->stopped = true;
    work_.clear();
    for (auto& context : contexts_) context->stop();
    for (std::thread& thread : threads_) thread.join();
    threads_.clear();
  }

 private:
  // One io_context per I/O thread (at least one).
  static std::vector<std::unique_ptr<asio::io_context>> MakeContexts(uint32_t threads) {
    std::vector<std::unique_ptr<asio::io_context>> contexts;
    for (uint32_t i = 0; i < std::max<uint32_t>(threads, 1); ++i) {
      contexts.push_back(std::make_unique<asio::io_context>(1));
    }
    return contexts;
  }

  void RunThread(size_t index) {
    SetThreadName(options_.thread_name + "-" + std::to_string(index));
    while (true) {
      try {
        contexts_[index]->run();
        return;
      } catch (const std::exception& e) {
        FEEDD_LOG(kError, "http") << "unexpected exception in an I/O thread: " << e.what();
      }
    }
  }

  // The next connection goes to the next I/O thread's io_context, round
  // robin, and stays there.
  void Accept() {
    asio::io_context& context = *contexts_[next_context_];
    next_context_ = (next_context_ + 1) % contexts_.size();
    acceptor_.async_accept(
        context.get_executor(),  // one thread runs it: no strand needed
        [this](beast::error_code ec, tcp::socket socket) { OnAccept(ec, std::move(socket)); });
  }

  void OnAccept(beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
    if (ec) {
      // E.g. out of file descriptors: retry later instead of spinning.
      state_->observer->ConnectionRejected("accept_error");
      FEEDD_LOG_EVERY_N_SEC(kWarning, "http", kLogIntervalSeconds)
          << "accept failed: " << ec.message();
      retry_timer_.expires_after(kAcceptRetryDelay);
      retry_timer_.async_wait([this](beast::error_code wait_ec) {
        if (!wait_ec) Accept();
      });
      return;
    }
    std::shared_ptr<ssl::context> tls = state_->CurrentTls();
    if (state_->connections.load() >= state_->max_connections) {
      state_->observer->ConnectionRejected("max_connections");
      RefuseConnection(std::move(socket), state_->max_connections, /*answer=*/tls == nullptr);
      return Accept();
    }
    ++state_->connections;
    state_->observer->ConnectionsChanged(1);
    beast::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    if (tls) {
      std::make_shared<Session<beast::ssl_stream<beast::tcp_stream>>>(std::move(socket), state_,
                                                                      std::move(tls))
          ->Start();
    } else {
      std::make_shared<Session<beast::tcp_stream>>(std::move(socket), state_)->Start();
    }
    Accept();
  }

  HttpServerOptions options_;
  std::shared_ptr<ServerState> state_;
  // One per I/O thread: a connection lives on one thread (the envoy worker
  // model), so a request's read, handling and write never hop threads.
  std::vector<std::unique_ptr<asio::io_context>> contexts_;
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  tcp::acceptor acceptor_;   // used on its strand once started
  size_t next_context_ = 0;  // on the acceptor's strand
  asio::steady_timer retry_timer_;
  tcp::endpoint bound_;
  std::vector<std::thread> threads_;
  bool started_ = false;
  bool stopped_ = false;
};

HttpServer::HttpServer(HttpServerOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}

HttpServer::~HttpServer() = default;

boost::asio::io_context& HttpServer::io_context() { return impl_->io_context(); }

Status HttpServer::Listen() { return impl_->Listen(); }

Status HttpServer::Start(HttpHandler* handler) { return impl_->Start(handler); }

Status HttpServer::ReloadTls() { return impl_->ReloadTls(); }

std::string HttpServer::bound_address() const { return impl_->bound_address(); }

int64_t HttpServer::in_flight_requests() const { return impl_->in_flight_requests(); }

void HttpServer::Stop() { impl_->Stop(); }

}  // namespace feedd
