// RouteMatch: where a request of the HTTP API (docs/api.md) goes, matched
// once from its head by ApiRouter::Route() (the route table of
// api_router.cc) and carried on the request (HttpRequest::route) to every
// handler that needs it: MeteredHandler for its route label, AuthHandler for
// the role the request needs, and the router for its answer. None of them
// reads the path again.
//
// Thread-safety: immutable once made; shared between threads as a
// shared_ptr<const RouteMatch>.
// Ownership: owns the segments it captured.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "daemon/auth_tokens.h"
#include "daemon/http_handler.h"
#include "util/status.h"

namespace feedd {

enum class RouteKind {
  kNone,
  kContainers,  // /v1/containers
  kItems,       // /v1/containers/{c}/items
  kItem,        // /v1/containers/{c}/items/{pk}/{id}
  kBatch,       // /v1/containers/{c}/partitions/{pk}/batch
  kQuery,       // /v1/containers/{c}/query
  kImport,      // /v1/containers/{c}/import
  kChangeFeed,  // /v1/changefeed
  kFeed,        // /v1/feed
  kProcessors,  // /v1/processors
  kProcessor,   // /v1/processors/{name}
  kParked,      // /v1/processors/{name}/parked
  kReplay,      // /v1/processors/{name}/parked/replay
  kRebuild,     // /v1/processors/{name}/rebuild
  kVerify,      // /v1/processors/{name}/verify
  kPause,       // /v1/processors/{name}/pause
  kResume,      // /v1/processors/{name}/resume
  kReset,       // /v1/processors/{name}/reset
  kJobs,        // /v1/jobs
  kJob,         // /v1/jobs/{id}
  kJobCancel,   // /v1/jobs/{id}/cancel
  kHealthz,     // /healthz
  kReadyz,      // /readyz
};

// A default RouteMatch is "no route": what an unmatched path (answered 404)
// or a path that could not be read gets.
struct RouteMatch {
  RouteKind kind = RouteKind::kNone;
  // The route template, e.g. "/v1/containers/{c}/items/{pk}/{id}"; "other"
  // when no route matched. Static storage (the metrics' route label).
  std::string_view route_template = "other";
  // What the request's method needs on this route (docs/security.md,
  // "Roles"): kRead for unknown paths and for methods the route does not
  // answer, except on /healthz and /readyz (kOpen).
  Access access = Access::kRead;
  // The route answers the request's method; otherwise it is answered 405.
  bool method_allowed = false;
  // Why the path could not be read (a bad percent-escape): the answer, as
  // it is. OK otherwise.
  Status error;
  // The decoded segments of the template's placeholders: {c}, {pk} and
  // {id} of an item, {name} of a processor, {id} of a job. Set for exactly
  // the routes whose template has them.
  std::optional<std::string> container;
  std::optional<std::string> pk;
  std::optional<std::string> id;
  std::optional<std::string> processor;
  std::optional<std::string> job;
};

// The route `request` carries, or no route (RouteMatch{}) when nothing
// routed it (HttpHandler::Route() was not called).
inline const RouteMatch& RouteOf(const HttpRequest& request) {
  static const RouteMatch kNoRoute;
  return request.route != nullptr ? *request.route : kNoRoute;
}

}  // namespace feedd
