// BootstrapRelay: a TCP relay on a fixed loopback port to the embedded
// broker's own port, so that kafka.embedded_port gives a bootstrap address
// that survives restarts. Debian's librdkafka (2.0.2) binds every mock
// broker to 127.0.0.1:0, a port the kernel chooses, and has no call to
// choose it or to advertise another (docs/kafka.md, "The embedded broker").
// Clients bootstrap through the relay; the broker's metadata then names its
// own address on 127.0.0.1, which they connect to directly.
//
// Limits: at most kMaxConnections relayed connections at once; one more is
// closed at once, logged (the first time) and counted in RefusedTotal(), the
// process-wide count behind feedd_kafka_embedded_relay_refused_total. Each
// direction of a connection buffers at most kBufferBytes.
//
// Thread-safety: port() and RefusedTotal() from any thread; the relay runs on its
// own thread (feedd-krelay), stopped and joined by the destructor, which
// closes every relayed connection.
// Ownership: owns its sockets and thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "util/status.h"

namespace feedd {

class BootstrapRelay {
 public:
  static constexpr size_t kMaxConnections = 64;
  static constexpr size_t kBufferBytes = 64 * 1024;

  // Listens on 127.0.0.1:`port` and relays each connection to
  // 127.0.0.1:`target_port`. An unavailable port is an error naming it.
  static Result<std::unique_ptr<BootstrapRelay>> Start(uint16_t port, uint16_t target_port);
  ~BootstrapRelay();

  uint16_t port() const { return port_; }
  // Connections refused over kMaxConnections by every relay of the process.
  static uint64_t RefusedTotal();

 private:
  class Impl;
  BootstrapRelay(std::unique_ptr<Impl> impl, uint16_t port);
  std::unique_ptr<Impl> impl_;
  uint16_t port_;
};

}  // namespace feedd
