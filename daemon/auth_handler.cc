#include "daemon/auth_handler.h"

#include "daemon/http_util.h"
#include "daemon/route_match.h"
#include "util/logging.h"

namespace feedd {
namespace {

constexpr int kRefusalLogSeconds = 10;

// The request line as the audit log shows it: the path without its query
// string (which may carry data), at most 200 bytes.
std::string RequestLine(const HttpRequest& request) {
  std::string_view path = std::string_view(request.target).substr(0, request.target.find('?'));
  std::string line(HttpMethodName(request.method));
  line += ' ';
  line.append(path.substr(0, 200));
  return line;
}

HttpResponse Unauthorized(std::string_view message, bool invalid_token) {
  HttpResponse response = ErrorResponse(Status(ErrorCode::kUnauthorized, std::string(message)));
  response.headers.push_back(
      {"WWW-Authenticate", invalid_token ? R"(Bearer realm="feedd", error="invalid_token")"
                                         : R"(Bearer realm="feedd")"});
  return response;
}

}  // namespace

AuthHandler::AuthHandler(HttpHandler* inner, std::shared_ptr<const TokenSet> tokens,
                         AuthObserver* observer)
    : inner_(inner), observer_(observer), tokens_(std::move(tokens)) {}

void AuthHandler::SetTokens(std::shared_ptr<const TokenSet> tokens) {
  std::lock_guard<std::mutex> lock(mu_);
  tokens_ = std::move(tokens);
}

std::shared_ptr<const TokenSet> AuthHandler::tokens() const {
  std::lock_guard<std::mutex> lock(mu_);
  return tokens_;
}

std::optional<HttpResponse> AuthHandler::Admit(const HttpRequest& request, Access access,
                                               std::shared_ptr<const Admission>* admitted) const {
  if (request.admission != nullptr && request.admission->tokens == tokens()) {
    *admitted = request.admission;
    return std::nullopt;
  }
  return Authenticate(request, access, admitted);
}

std::optional<HttpResponse> AuthHandler::Authenticate(
    const HttpRequest& request, Access access, std::shared_ptr<const Admission>* admitted) const {
  std::optional<std::string_view> header = request.Header("Authorization");
  if (!header) {
    observer_->AuthFailed("missing");
    FEEDD_LOG_EVERY_N_SEC(kWarning, "audit", kRefusalLogSeconds)
        << "refused " << RequestLine(request) << " from " << request.peer
        << ": no Authorization header";
    return Unauthorized("this request needs an 'Authorization: Bearer <token>' header", false);
  }
  Result<std::string_view> secret = ParseBearer(*header);
  if (!secret.ok()) {
    observer_->AuthFailed("malformed");
    FEEDD_LOG_EVERY_N_SEC(kWarning, "audit", kRefusalLogSeconds)
        << "refused " << RequestLine(request) << " from " << request.peer
        << ": malformed Authorization header";
    return Unauthorized(secret.status().message(), true);
  }
  std::shared_ptr<const TokenSet> tokens = this->tokens();
  const TokenEntry* token = tokens->Find(*secret);
  if (token == nullptr) {
    observer_->AuthFailed("unknown_token");
    FEEDD_LOG_EVERY_N_SEC(kWarning, "audit", kRefusalLogSeconds)
        << "refused " << RequestLine(request) << " from " << request.peer << ": unknown token";
    return Unauthorized("the bearer token is not valid", true);
  }
  if (!RoleAllows(token->role, access)) {
    observer_->AuthFailed("forbidden");
    FEEDD_LOG_EVERY_N_SEC(kWarning, "audit", kRefusalLogSeconds)
        << "refused " << RequestLine(request) << " from " << request.peer << ": token "
        << token->name << " has role " << RoleName(token->role);
    return ErrorResponse(
        Status(ErrorCode::kForbidden, "the token's role (" + std::string(RoleName(token->role)) +
                                          ") may not do this; it needs " +
                                          (access == Access::kAdmin ? "admin" : "write")));
  }
  *admitted = std::make_shared<const Admission>(Admission{std::move(tokens), token});
  return std::nullopt;
}

std::optional<HttpResponse> AuthHandler::Screen(HttpRequest& head) {
  const Access access = RouteOf(head).access;
  if (access != Access::kOpen) {
    std::shared_ptr<const Admission> admitted;
    if (std::optional<HttpResponse> refusal = Admit(head, access, &admitted)) return refusal;
    head.admission = std::move(admitted);
  }
  return inner_->Screen(head);
}

std::unique_ptr<BodyStream> AuthHandler::StreamBody(const HttpRequest& head) {
  const Access access = RouteOf(head).access;
  if (access != Access::kOpen) {
    std::shared_ptr<const Admission> admitted;
    if (Admit(head, access, &admitted)) return nullptr;
  }
  return inner_->StreamBody(head);
}

void AuthHandler::Handle(HttpRequest request, Responder responder) {
  const Access access = RouteOf(request).access;
  if (access == Access::kOpen) return inner_->Handle(std::move(request), std::move(responder));
  std::shared_ptr<const Admission> admitted;
  if (std::optional<HttpResponse> refusal = Admit(request, access, &admitted)) {
    return responder.Send(std::move(*refusal));
  }
  if (access == Access::kAdmin) {
    FEEDD_LOG(kInfo, "audit") << RequestLine(request) << " by token " << admitted->token->name
                              << " from " << request.peer;
  }
  inner_->Handle(std::move(request), std::move(responder));
}

}  // namespace feedd
