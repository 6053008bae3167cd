#include "daemon/host_port.h"

#include <cctype>

namespace feedd {
namespace {

Status Invalid(std::string_view text, std::string_view why) {
  std::string message = "expected HOST:PORT, got '";
  message.append(text);
  message += "' (";
  message.append(why);
  message += ")";
  return Status(ErrorCode::kInvalidRequest, std::move(message));
}

bool IsHostNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '-' || c == '_';
}

}  // namespace

std::string HostPort::ToString() const {
  std::string out;
  if (host.find(':') != std::string::npos) {
    out = "[" + host + "]";
  } else {
    out = host;
  }
  out += ":";
  out += std::to_string(port);
  return out;
}

Result<HostPort> ParseHostPort(std::string_view text) {
  size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) return Invalid(text, "no port");
  std::string_view host = text.substr(0, colon);
  std::string_view port = text.substr(colon + 1);

  HostPort out;
  if (!host.empty() && host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') return Invalid(text, "bad IPv6 brackets");
    host = host.substr(1, host.size() - 2);
    for (char c : host) {
      if (std::isxdigit(static_cast<unsigned char>(c)) == 0 && c != ':' && c != '.') {
        return Invalid(text, "bad IPv6 address");
      }
    }
  } else {
    if (host.empty()) return Invalid(text, "empty host");
    for (char c : host) {
      if (!IsHostNameChar(c)) {
        return Invalid(text, c == ':' ? "IPv6 addresses need brackets" : "bad host name");
      }
    }
  }
  out.host = std::string(host);

  if (port.empty() || port.size() > 5) return Invalid(text, "port must be 0..65535");
  uint32_t value = 0;
  for (char c : port) {
    if (c < '0' || c > '9') return Invalid(text, "port must be 0..65535");
    value = value * 10 + static_cast<uint32_t>(c - '0');
  }
  if (value > 65535) return Invalid(text, "port must be 0..65535");
  out.port = static_cast<uint16_t>(value);
  return out;
}

Result<HostPort> ParseApiAddress(std::string_view text) {
  std::string_view rest = text;
  size_t scheme_end = rest.find("://");
  if (scheme_end != std::string_view::npos) {
    std::string scheme(rest.substr(0, scheme_end));
    for (char& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (scheme != "http") {
      return Status(ErrorCode::kInvalidRequest, "expected HOST:PORT or http://HOST:PORT, got '" +
                                                    std::string(text) +
                                                    "' (feedd's API speaks plain HTTP)");
    }
    rest.remove_prefix(scheme_end + 3);
    if (rest.ends_with('/')) rest.remove_suffix(1);
    if (rest.find('/') != std::string_view::npos) {
      return Status(ErrorCode::kInvalidRequest, "expected HOST:PORT or http://HOST:PORT, got '" +
                                                    std::string(text) + "' (no path allowed)");
    }
  }
  Result<HostPort> parsed = ParseHostPort(rest);
  if (!parsed.ok()) return parsed;
  if (parsed->port == 0) return Invalid(text, "port 0 names no server to connect to");
  return parsed;
}

}  // namespace feedd
