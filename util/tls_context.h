// TLS contexts (OpenSSL through Boost.Asio) for feedd's HTTP API server and
// for the programs that call it (feedd worker, feedctl), with one policy:
// TLS 1.2 or newer, Mozilla's "intermediate" cipher list for TLS 1.2 (the
// TLS 1.3 suites are all acceptable), no compression, no renegotiation
// (docs/security.md, "TLS").
//
// Thread-safety: free functions. A context, once made, is only read: it may
// be shared by any number of connections on any threads.
// Ownership: the caller owns the returned context; every stream made from
// it must be destroyed before it (hold the shared_ptr in the connection).
#pragma once

#include <memory>
#include <string>

#include "util/status.h"

namespace boost::asio::ssl {
class context;
}  // namespace boost::asio::ssl

namespace feedd {

struct TlsServerFiles {
  std::string cert_file;       // PEM certificate chain, leaf first
  std::string key_file;        // PEM private key of the leaf
  std::string client_ca_file;  // PEM CAs; "" = no client certificate asked
};

struct TlsClientFiles {
  // PEM CAs that sign the server (for a public CA, the system's bundle:
  // /etc/ssl/certs/ca-certificates.crt).
  std::string ca_file;
  std::string cert_file;  // PEM client certificate (mTLS); "" = none
  std::string key_file;   // its key; required with cert_file
};

// Loads the files into a new server context. With a client CA file, a
// client must present a certificate that it signs. Fails (invalid_request)
// naming the file and OpenSSL's reason, e.g. a key that does not match.
Result<std::shared_ptr<boost::asio::ssl::context>> MakeServerTlsContext(
    const TlsServerFiles& files);

// A client context that verifies the server's certificate chain; the host
// name is checked per connection (HttpClient).
Result<std::shared_ptr<boost::asio::ssl::context>> MakeClientTlsContext(
    const TlsClientFiles& files);

}  // namespace feedd
