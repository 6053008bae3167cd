// HostPort: a "HOST:PORT" network address as written in the configuration
// (http.listen, metrics.listen, kafka.brokers). HOST is an IPv4 address, a
// host name, or an IPv6 address in brackets ("[::1]:8080"); PORT is 0..65535,
// where 0 asks the operating system for a free port when listening.
//
// Thread-safety: plain value.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "util/status.h"

namespace feedd {

struct HostPort {
  std::string host;  // without brackets, e.g. "::1"
  uint16_t port = 0;

  // "127.0.0.1:8080", or "[::1]:8080" when host contains ':'.
  std::string ToString() const;
};

// Parses "HOST:PORT". Fails (invalid_request) with a message saying what is
// wrong: a missing or non-numeric port, a port above 65535, an empty host.
Result<HostPort> ParseHostPort(std::string_view text);

// Parses the address of a feedd API to connect to: "HOST:PORT" or
// "http://HOST:PORT" (a trailing "/" allowed), with a non-zero port. Fails
// (invalid_request) for another scheme (https included: the API is plain
// HTTP), a path, or what ParseHostPort() refuses.
Result<HostPort> ParseApiAddress(std::string_view text);

}  // namespace feedd
