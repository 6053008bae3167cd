// A raw HTTP/1.1 exchange with a server on 127.0.0.1, for the unit tests of
// what an HttpServer carries from a request's head to its handler.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace feedd::testutil {

// Sends `requests` on one connection to `address` (HOST:PORT, the port is
// used) and returns the status codes answered, once `count` arrived or the
// connection ended.
inline std::vector<int> Exchange(const std::string& address, const std::string& requests,
                                 size_t count) {
  std::string port = address.substr(address.rfind(':') + 1);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in peer{};
  peer.sin_family = AF_INET;
  peer.sin_port = htons(static_cast<uint16_t>(std::stoi(port)));
  peer.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::vector<int> statuses;
  if (connect(fd, reinterpret_cast<sockaddr*>(&peer), sizeof(peer)) == 0 &&
      send(fd, requests.data(), requests.size(), 0) == static_cast<ssize_t>(requests.size())) {
    std::string received;
    char buffer[4096];
    while (statuses.size() < count) {
      ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
      if (n <= 0) break;
      received.append(buffer, static_cast<size_t>(n));
      statuses.clear();
      for (size_t at = received.find("HTTP/1.1 "); at != std::string::npos;
           at = received.find("HTTP/1.1 ", at + 1)) {
        statuses.push_back(std::stoi(received.substr(at + 9, 3)));
      }
    }
  }
  close(fd);
  return statuses;
}

}  // namespace feedd::testutil
