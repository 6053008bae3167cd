#include "feed/bootstrap_relay.h"

#include <array>
#include <boost/asio.hpp>
#include <thread>

#include "util/logging.h"
#include "util/thread_name.h"

namespace feedd {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;

std::atomic<uint64_t> refused_total{0};

// One relayed connection: client <-> broker, a buffer per direction. Runs on
// the relay's single thread only.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket client, size_t* live)
      : client_(std::move(client)), broker_(client_.get_executor()), live_(live) {
    ++*live_;
  }
  ~Session() { --*live_; }

  void Start(const tcp::endpoint& broker) {
    broker_.async_connect(broker, [self = shared_from_this()](const boost::system::error_code& e) {
      if (e) return self->Close();
      self->Pump(self->client_, self->broker_, self->up_);
      self->Pump(self->broker_, self->client_, self->down_);
    });
  }

 private:
  using Buffer = std::array<char, BootstrapRelay::kBufferBytes>;

  void Pump(tcp::socket& from, tcp::socket& to, Buffer& buffer) {
    from.async_read_some(asio::buffer(buffer), [self = shared_from_this(), &from, &to, &buffer](
                                                   const boost::system::error_code& e, size_t n) {
      if (e) return self->Close();
      asio::async_write(to, asio::buffer(buffer.data(), n),
                        [self, &from, &to, &buffer](const boost::system::error_code& w, size_t) {
                          if (w) return self->Close();
                          self->Pump(from, to, buffer);
                        });
    });
  }

  // Either side gone: both go (Kafka clients do not half-close).
  void Close() {
    boost::system::error_code ignored;
    client_.close(ignored);
    broker_.close(ignored);
  }

  tcp::socket client_;
  tcp::socket broker_;
  Buffer up_{};
  Buffer down_{};
  size_t* const live_;
};

}  // namespace

class BootstrapRelay::Impl {
 public:
  explicit Impl(uint16_t target_port)
      : acceptor_(io_), target_(asio::ip::address_v4::loopback(), target_port) {}

  ~Impl() {
    io_.stop();
    if (thread_.joinable()) thread_.join();
  }

  Status Listen(uint16_t port) {
    boost::system::error_code e;
    const tcp::endpoint at(asio::ip::address_v4::loopback(), port);
    acceptor_.open(at.protocol(), e);
    if (!e) acceptor_.set_option(tcp::acceptor::reuse_address(true), e);
    if (!e) acceptor_.bind(at, e);
    if (!e) acceptor_.listen(asio::socket_base::max_listen_connections, e);
    if (e) {
      return Status(ErrorCode::kUnavailable, "kafka.embedded_port: cannot listen on 127.0.0.1:" +
                                                 std::to_string(port) + ": " + e.message());
    }
    Accept();
    thread_ = std::thread([this] {
      SetThreadName("feedd-krelay");
      io_.run();
    });
    return Status::Ok();
  }

 private:
  void Accept() {
    acceptor_.async_accept([this](const boost::system::error_code& e, tcp::socket client) {
      if (e == asio::error::operation_aborted) return;
      if (!e) {
        if (live_ >= kMaxConnections) {
          ++refused_total;
          if (refused_++ == 0) {
            FEEDD_LOG(kWarning, "kafka") << "embedded broker relay: more than " << kMaxConnections
                                         << " connections at once; closing the newest";
          }
        } else {
          std::make_shared<Session>(std::move(client), &live_)->Start(target_);
        }
      }
      Accept();
    });
  }

  // Before io_: sessions that io_ destroys with its pending handlers count
  // themselves out of live_.
  size_t live_ = 0;       // relay thread only
  uint64_t refused_ = 0;  // relay thread only
  asio::io_context io_;
  tcp::acceptor acceptor_;
  const tcp::endpoint target_;
  std::thread thread_;
};

Result<std::unique_ptr<BootstrapRelay>> BootstrapRelay::Start(uint16_t port, uint16_t target_port) {
  auto impl = std::make_unique<Impl>(target_port);
  if (Status s = impl->Listen(port); !s.ok()) return s;
  return std::unique_ptr<BootstrapRelay>(new BootstrapRelay(std::move(impl), port));
}

BootstrapRelay::BootstrapRelay(std::unique_ptr<Impl> impl, uint16_t port)
    : impl_(std::move(impl)), port_(port) {}
BootstrapRelay::~BootstrapRelay() = default;
uint64_t BootstrapRelay::RefusedTotal() { return refused_total.load(); }

}  // namespace feedd
