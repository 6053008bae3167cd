// AuthHandler: an HttpHandler decorator that lets a request through to the
// handler it wraps only when its bearer token's role may use the route
// (daemon/auth_tokens.h, docs/security.md). What a request needs is the
// access of the route it carries (HttpRequest::route, set by the wrapped
// handler's Route(); daemon/route_match.h), kRead when it carries none.
//
//   - A route needing Access::kOpen (/healthz, /readyz) needs no token.
//   - No Authorization header: 401 `unauthorized` with
//     `WWW-Authenticate: Bearer realm="feedd"`.
//   - A header that is not `Bearer <token68>`, or a secret no token has:
//     401 `unauthorized` with `WWW-Authenticate: Bearer realm="feedd",
//     error="invalid_token"`.
//   - A role that may not use the route: 403 `forbidden`.
// Every refusal counts in AuthObserver::AuthFailed (reason "missing",
// "malformed", "unknown_token" or "forbidden") and is logged (component
// "audit", at most one line per 10 s per kind) with the token's name when
// known and the peer address; every admin request let through is logged
// the same way, unthrottled.
//
// With HttpServerOptions::screen_heads the server calls Screen() with the
// request head first, so a refused request's body is never read. Screen()
// authenticates once (one SHA-256, one role check) and sets the head's
// Admission, which StreamBody() and Handle() of the same request take as
// it is while the token set that admitted it is still the one loaded. When
// a SIGHUP reload replaced the set between the head and the body (or the
// request was not screened), they authenticate again against the new set:
// a token removed by the reload is refused from then on, even for a request
// whose head it had admitted (docs/security.md, "Making tokens").
//
// Thread-safety: Handle() and Screen() run on any I/O thread; SetTokens() may be called
// from any thread (a SIGHUP reload) and takes effect for the next request.
// Ownership: borrows the wrapped handler and the observer.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string_view>

#include "daemon/auth_tokens.h"
#include "daemon/http_handler.h"

namespace feedd {

// The token that admitted a request (HttpRequest::admission), and the set
// it belongs to, kept alive with it.
struct Admission {
  std::shared_ptr<const TokenSet> tokens;
  const TokenEntry* token = nullptr;  // in *tokens
};

class AuthObserver {
 public:
  virtual ~AuthObserver() = default;
  virtual void AuthFailed(std::string_view reason) = 0;
};

class AuthHandler : public HttpHandler {
 public:
  AuthHandler(HttpHandler* inner, std::shared_ptr<const TokenSet> tokens, AuthObserver* observer);

  void SetTokens(std::shared_ptr<const TokenSet> tokens);

  void Route(HttpRequest& head) override { inner_->Route(head); }

  void Handle(HttpRequest request, Responder responder) override;
  // The same checks on the head alone, so that the server refuses before
  // reading a body (HttpServerOptions::screen_heads).
  std::optional<HttpResponse> Screen(HttpRequest& head) override;
  // Only an admitted request's body is streamed; a refused one is left to
  // Handle(), which refuses it.
  std::unique_ptr<BodyStream> StreamBody(const HttpRequest& head) override;
  void OnServerStopping() override { inner_->OnServerStopping(); }

 private:
  std::shared_ptr<const TokenSet> tokens() const;
  // Admits `request`, which needs `access` (not kOpen): its admission when
  // the set that gave it is still loaded, else a new one if its token may.
  // Otherwise the answer refusing it, counted and logged.
  std::optional<HttpResponse> Admit(const HttpRequest& request, Access access,
                                    std::shared_ptr<const Admission>* admitted) const;
  // Authenticates `request` against the loaded tokens.
  std::optional<HttpResponse> Authenticate(const HttpRequest& request, Access access,
                                           std::shared_ptr<const Admission>* admitted) const;

  HttpHandler* const inner_;
  AuthObserver* const observer_;
  mutable std::mutex mu_;
  std::shared_ptr<const TokenSet> tokens_;  // GUARDED_BY(mu_)
};

}  // namespace feedd
