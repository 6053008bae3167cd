#include "util/tls_context.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <boost/asio/ssl/context.hpp>

namespace feedd {
namespace {

namespace ssl = boost::asio::ssl;

// Mozilla's "intermediate" configuration (Server Side TLS, version 5.7) for
// TLS 1.2; DHE suites use OpenSSL's built-in groups (SSL_CTX_set_dh_auto).
constexpr char kTls12Ciphers[] =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:"
    "DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384:DHE-RSA-CHACHA20-POLY1305";
constexpr char kTls13Suites[] =
    "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256";
constexpr char kGroups[] = "X25519:prime256v1:secp384r1";
constexpr unsigned char kSessionIdContext[] = "feedd";

// OpenSSL's reasons, oldest first, emptying its error queue.
std::string OpenSslErrors() {
  std::string out;
  while (unsigned long code = ERR_get_error()) {
    char text[256];
    ERR_error_string_n(code, text, sizeof(text));
    if (!out.empty()) out += "; ";
    out += text;
  }
  return out;
}

Status Failed(std::string_view what, const std::string& file, const boost::system::error_code& ec) {
  std::string message = "cannot " + std::string(what) + " " + file + ": " + ec.message();
  if (std::string queued = OpenSslErrors(); !queued.empty()) message += " (" + queued + ")";
  return Status(ErrorCode::kInvalidRequest, std::move(message));
}

// The policy shared by servers and clients.
Status ApplyPolicy(ssl::context& ctx) {
  ERR_clear_error();
  SSL_CTX* native = ctx.native_handle();
  boost::system::error_code ec;
  ctx.set_options(ssl::context::default_workarounds | ssl::context::no_compression |
                      ssl::context::no_sslv2 | ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                      ssl::context::no_tlsv1_1,
                  ec);
  if (ec) return Status(ErrorCode::kInternal, "cannot set TLS options: " + ec.message());
  SSL_CTX_set_options(native, SSL_OP_NO_RENEGOTIATION);
  if (SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION) != 1 ||
      SSL_CTX_set_cipher_list(native, kTls12Ciphers) != 1 ||
      SSL_CTX_set_ciphersuites(native, kTls13Suites) != 1 ||
      SSL_CTX_set1_groups_list(native, kGroups) != 1) {
    return Status(ErrorCode::kInternal, "cannot set the TLS policy: " + OpenSslErrors());
  }
  return Status::Ok();
}

}  // namespace

Result<std::shared_ptr<ssl::context>> MakeServerTlsContext(const TlsServerFiles& files) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
  if (Status s = ApplyPolicy(*ctx); !s.ok()) return s;
  SSL_CTX* native = ctx->native_handle();
  SSL_CTX_set_dh_auto(native, 1);
  boost::system::error_code ec;
  ctx->use_certificate_chain_file(files.cert_file, ec);
  if (ec) return Failed("load the certificate chain", files.cert_file, ec);
  ctx->use_private_key_file(files.key_file, ssl::context::pem, ec);
  if (ec) return Failed("load the private key", files.key_file, ec);
  if (SSL_CTX_check_private_key(native) != 1) {
    return Status(ErrorCode::kInvalidRequest, "the private key " + files.key_file +
                                                  " does not match the certificate " +
                                                  files.cert_file + " (" + OpenSslErrors() + ")");
  }
  if (!files.client_ca_file.empty()) {
    ctx->load_verify_file(files.client_ca_file, ec);
    if (ec) return Failed("load the client CAs", files.client_ca_file, ec);
    STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(files.client_ca_file.c_str());
    if (names == nullptr) {
      return Status(ErrorCode::kInvalidRequest,
                    "cannot read CA names from " + files.client_ca_file + ": " + OpenSslErrors());
    }
    SSL_CTX_set_client_CA_list(native, names);  // takes ownership
    ctx->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert, ec);
    if (ec) return Failed("ask for client certificates signed by", files.client_ca_file, ec);
  }
  // Session resumption with client certificates needs a context id.
  if (SSL_CTX_set_session_id_context(native, kSessionIdContext, sizeof(kSessionIdContext) - 1) !=
      1) {
    return Status(ErrorCode::kInternal, "cannot set the TLS session context: " + OpenSslErrors());
  }
  return ctx;
}

Result<std::shared_ptr<ssl::context>> MakeClientTlsContext(const TlsClientFiles& files) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_client);
  if (Status s = ApplyPolicy(*ctx); !s.ok()) return s;
  boost::system::error_code ec;
  ctx->load_verify_file(files.ca_file, ec);
  if (ec) return Failed("load the CAs", files.ca_file, ec);
  ctx->set_verify_mode(ssl::verify_peer, ec);
  if (ec) return Failed("verify the server with", files.ca_file, ec);
  if (!files.cert_file.empty() || !files.key_file.empty()) {
    if (files.cert_file.empty() || files.key_file.empty()) {
      return Status(ErrorCode::kInvalidRequest,
                    "a client certificate needs both its certificate and its key file");
    }
    ctx->use_certificate_chain_file(files.cert_file, ec);
    if (ec) return Failed("load the client certificate", files.cert_file, ec);
    ctx->use_private_key_file(files.key_file, ssl::context::pem, ec);
    if (ec) return Failed("load the client key", files.key_file, ec);
  }
  return ctx;
}

}  // namespace feedd
