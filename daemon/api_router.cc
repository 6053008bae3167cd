#include "daemon/api_router.h"

#include <array>
#include <boost/asio/io_context.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <optional>
#include <vector>

#include "daemon/http_util.h"
#include "storage/prepared_item.h"

namespace feedd {
namespace {

// Sets the kind and the captured segments of `route` from the path's
// decoded segments `s` (taken).
void MatchRoute(std::vector<std::string>& s, RouteMatch* route) {
  size_t n = s.size();
  if (n == 1 && s[0] == "healthz") {
    route->kind = RouteKind::kHealthz;
  } else if (n == 1 && s[0] == "readyz") {
    route->kind = RouteKind::kReadyz;
  } else if (n == 2 && s[0] == "v1") {
    if (s[1] == "containers") route->kind = RouteKind::kContainers;
    if (s[1] == "changefeed") route->kind = RouteKind::kChangeFeed;
    if (s[1] == "feed") route->kind = RouteKind::kFeed;
    if (s[1] == "processors") route->kind = RouteKind::kProcessors;
    if (s[1] == "jobs") route->kind = RouteKind::kJobs;
  } else if ((n == 3 || n == 4) && s[0] == "v1" && s[1] == "jobs") {
    if (n == 3) route->kind = RouteKind::kJob;
    if (n == 4 && s[3] == "cancel") route->kind = RouteKind::kJobCancel;
    if (route->kind != RouteKind::kNone) route->job = std::move(s[2]);
  } else if (n >= 3 && n <= 5 && s[0] == "v1" && s[1] == "processors") {
    if (n == 3) route->kind = RouteKind::kProcessor;
    if (n == 4 && s[3] == "parked") route->kind = RouteKind::kParked;
    if (n == 5 && s[3] == "parked" && s[4] == "replay") route->kind = RouteKind::kReplay;
    if (n == 4 && s[3] == "rebuild") route->kind = RouteKind::kRebuild;
    if (n == 4 && s[3] == "verify") route->kind = RouteKind::kVerify;
    if (n == 4 && s[3] == "pause") route->kind = RouteKind::kPause;
    if (n == 4 && s[3] == "resume") route->kind = RouteKind::kResume;
    if (n == 4 && s[3] == "reset") route->kind = RouteKind::kReset;
    if (route->kind != RouteKind::kNone) route->processor = std::move(s[2]);
  } else if (n >= 4 && s[0] == "v1" && s[1] == "containers") {
    if (n == 4 && s[3] == "items") {
      route->kind = RouteKind::kItems;
    } else if (n == 4 && s[3] == "query") {
      route->kind = RouteKind::kQuery;
    } else if (n == 4 && s[3] == "import") {
      route->kind = RouteKind::kImport;
    } else if (n == 6 && s[3] == "items") {
      route->kind = RouteKind::kItem;
      route->pk = std::move(s[4]);
      route->id = std::move(s[5]);
    } else if (n == 6 && s[3] == "partitions" && s[5] == "batch") {
      route->kind = RouteKind::kBatch;
      route->pk = std::move(s[4]);
    }
    if (route->kind != RouteKind::kNone) route->container = std::move(s[2]);
  }
}

// What each route answers: its template (the metrics' route label) and, per
// method, who may use it (docs/security.md); a method without an entry is
// answered 405. The one place a route's methods and roles are decided.
struct MethodAccess {
  HttpMethod method;
  Access access;
};

struct RouteInfo {
  RouteKind kind;
  std::string_view path;
  std::array<std::optional<MethodAccess>, 4> methods;
};

constexpr MethodAccess kGet{HttpMethod::kGet, Access::kRead};
constexpr MethodAccess PostFor(Access access) { return {HttpMethod::kPost, access}; }

constexpr std::array kRoutes{
    RouteInfo{RouteKind::kNone, "other", {}},
    RouteInfo{RouteKind::kContainers, "/v1/containers", {kGet}},
    RouteInfo{RouteKind::kItems, "/v1/containers/{c}/items", {PostFor(Access::kWrite)}},
    RouteInfo{RouteKind::kItem,
              "/v1/containers/{c}/items/{pk}/{id}",
              {kGet, MethodAccess{HttpMethod::kPut, Access::kWrite},
               MethodAccess{HttpMethod::kPatch, Access::kWrite},
               MethodAccess{HttpMethod::kDelete, Access::kWrite}}},
    RouteInfo{
        RouteKind::kBatch, "/v1/containers/{c}/partitions/{pk}/batch", {PostFor(Access::kWrite)}},
    RouteInfo{RouteKind::kQuery, "/v1/containers/{c}/query", {PostFor(Access::kRead)}},
    RouteInfo{RouteKind::kImport, "/v1/containers/{c}/import", {PostFor(Access::kWrite)}},
    RouteInfo{RouteKind::kChangeFeed, "/v1/changefeed", {kGet}},
    RouteInfo{RouteKind::kFeed, "/v1/feed", {kGet}},
    RouteInfo{RouteKind::kProcessors, "/v1/processors", {kGet}},
    RouteInfo{RouteKind::kProcessor, "/v1/processors/{name}", {kGet}},
    RouteInfo{RouteKind::kParked, "/v1/processors/{name}/parked", {kGet}},
    RouteInfo{RouteKind::kReplay, "/v1/processors/{name}/parked/replay", {PostFor(Access::kAdmin)}},
    RouteInfo{RouteKind::kRebuild, "/v1/processors/{name}/rebuild", {PostFor(Access::kAdmin)}},
    RouteInfo{RouteKind::kVerify, "/v1/processors/{name}/verify", {PostFor(Access::kAdmin)}},
    RouteInfo{RouteKind::kPause, "/v1/processors/{name}/pause", {PostFor(Access::kAdmin)}},
    RouteInfo{RouteKind::kResume, "/v1/processors/{name}/resume", {PostFor(Access::kAdmin)}},
    RouteInfo{RouteKind::kReset, "/v1/processors/{name}/reset", {PostFor(Access::kAdmin)}},
    RouteInfo{RouteKind::kJobs, "/v1/jobs", {kGet}},
    RouteInfo{RouteKind::kJob, "/v1/jobs/{id}", {kGet}},
    RouteInfo{RouteKind::kJobCancel, "/v1/jobs/{id}/cancel", {PostFor(Access::kAdmin)}},
    RouteInfo{RouteKind::kHealthz, "/healthz", {MethodAccess{HttpMethod::kGet, Access::kOpen}}},
    RouteInfo{RouteKind::kReadyz, "/readyz", {MethodAccess{HttpMethod::kGet, Access::kOpen}}},
};

constexpr bool EveryKindInItsPlace() {
  for (size_t i = 0; i < kRoutes.size(); ++i) {
    if (static_cast<size_t>(kRoutes[i].kind) != i) return false;
  }
  return kRoutes.size() == static_cast<size_t>(RouteKind::kReadyz) + 1;
}
static_assert(EveryKindInItsPlace(), "kRoutes lists every RouteKind, in the enum's order");

const RouteInfo& InfoOf(RouteKind kind) { return kRoutes[static_cast<size_t>(kind)]; }

// Who may use `method` on the route; nullopt when the route does not answer it.
std::optional<Access> AccessFor(RouteKind kind, HttpMethod method) {
  for (const std::optional<MethodAccess>& m : InfoOf(kind).methods) {
    if (m && m->method == method) return m->access;
  }
  return std::nullopt;
}

// The methods a route answers, as the Allow header lists them.
std::string AllowedMethods(RouteKind kind) {
  std::string allow;
  for (const std::optional<MethodAccess>& m : InfoOf(kind).methods) {
    if (!m) continue;
    if (!allow.empty()) allow += ", ";
    allow += HttpMethodName(m->method);
  }
  return allow;
}

std::string ContainersJson(const std::vector<ContainerSpec>& containers) {
  boost::json::array list;
  for (const ContainerSpec& spec : containers) {
    boost::json::array indexes;
    for (const std::string& path : spec.index_paths) indexes.emplace_back(path);
    list.push_back(boost::json::object{
        {"name", spec.name},
        {"partitionKey", spec.partition_key_path},
        {"indexes", std::move(indexes)},
        {"writers", spec.writers == ContainerWriters::kProcessors ? "processors" : "any"}});
  }
  return boost::json::serialize(boost::json::object{{"containers", std::move(list)}});
}

}  // namespace

ApiRouter::ApiRouter(DocumentStore* store, Options options, boost::asio::io_context& io)
    : store_(store),
      options_(std::move(options)),
      io_(io),
      containers_json_(ContainersJson(store->containers())),
      import_jobs_(std::max<size_t>(options_.import_max_concurrent, 1)),
      queries_(options_.query_threads, options_.query_max_queued) {}

ApiRouter::~ApiRouter() = default;

RouteMatch ApiRouter::Match(std::string_view target, HttpMethod method) {
  RouteMatch route;
  Result<std::vector<std::string>> segments = SplitPath(target.substr(0, target.find('?')));
  if (!segments.ok()) {
    route.error = segments.status();
    return route;
  }
  MatchRoute(*segments, &route);
  route.route_template = InfoOf(route.kind).path;
  std::optional<Access> access = AccessFor(route.kind, method);
  route.method_allowed = access.has_value();
  // /healthz and /readyz answer 405 to anyone; elsewhere a token is needed.
  bool open = route.kind == RouteKind::kHealthz || route.kind == RouteKind::kReadyz;
  route.access = access ? *access : open ? Access::kOpen : Access::kRead;
  return route;
}

void ApiRouter::Route(HttpRequest& head) {
  head.route = std::make_shared<const RouteMatch>(Match(head.target, head.method));
}

void ApiRouter::Handle(HttpRequest request, Responder responder) {
  std::string_view target = request.target;
  size_t question = target.find('?');
  std::string_view path = target.substr(0, question);
  std::string_view query =
      question == std::string_view::npos ? std::string_view() : target.substr(question + 1);

  const RouteMatch& route = RouteOf(request);
  if (!route.error.ok()) return responder.Send(ErrorResponse(route.error));
  if (route.kind == RouteKind::kNone) {
    return responder.Send(
        ErrorResponse(Status(ErrorCode::kNotFound, "no such path: " + std::string(path))));
  }
  if (!route.method_allowed) {
    std::string allow = AllowedMethods(route.kind);
    HttpResponse response =
        ErrorResponse(Status(ErrorCode::kMethodNotAllowed, "allowed methods: " + allow));
    response.headers.push_back({"Allow", std::move(allow)});
    return responder.Send(std::move(response));
  }

  const ContainerSpec* spec = nullptr;
  if (route.container) {
    spec = store_->FindContainer(*route.container);
    if (spec == nullptr) {
      return responder.Send(ErrorResponse(
          Status(ErrorCode::kContainerNotFound, "no container named '" + *route.container + "'")));
    }
  }
  if (route.pk) {
    Status status = ValidatePartitionKeyValue(*route.pk);
    if (!status.ok()) return responder.Send(ErrorResponse(status));
  }
  if (route.id) {
    Status status = ValidateId(*route.id);
    if (!status.ok()) return responder.Send(ErrorResponse(status));
  }

  switch (route.kind) {
    case RouteKind::kContainers:
      return responder.Send(JsonResponse(200, containers_json_));
    case RouteKind::kItems:
      return CreateItem(*spec, request, std::move(responder));
    case RouteKind::kItem:
      switch (request.method) {
        case HttpMethod::kGet:
          return GetItem(*spec, *route.pk, *route.id, request, std::move(responder));
        case HttpMethod::kPut:
          return PutItem(*spec, *route.pk, *route.id, request, std::move(responder));
        case HttpMethod::kPatch:
          return PatchItem(*spec, *route.pk, *route.id, request, std::move(responder));
        default:
          return DeleteItem(*spec, *route.pk, *route.id, request, std::move(responder));
      }
    case RouteKind::kBatch:
      return Batch(*spec, *route.pk, request, std::move(responder));
    case RouteKind::kQuery:
      return QueryItems(*spec, request, std::move(responder));
    case RouteKind::kImport:  // streamed (StreamBody); reached only if that refused it
      return responder.Send(
          ErrorResponse(Status(ErrorCode::kInternal, "an import body was not streamed")));
    case RouteKind::kChangeFeed:
      return ChangeFeed(query, std::move(responder));
    case RouteKind::kFeed:
      return FeedInfo(std::move(responder));
    case RouteKind::kProcessors:
      return ListProcessors(std::move(responder));
    case RouteKind::kProcessor:
    case RouteKind::kParked:
    case RouteKind::kReplay:
    case RouteKind::kRebuild:
    case RouteKind::kVerify:
    case RouteKind::kPause:
    case RouteKind::kResume:
    case RouteKind::kReset: {
      ProcessorInstance* instance =
          options_.processors ? options_.processors->Find(*route.processor) : nullptr;
      if (instance == nullptr) {
        return responder.Send(ErrorResponse(
            Status(ErrorCode::kNotFound, "no processor named '" + *route.processor + "'")));
      }
      if (route.kind == RouteKind::kProcessor)
        return ShowProcessor(*instance, std::move(responder));
      if (route.kind == RouteKind::kParked) return ShowParked(*instance, std::move(responder));
      if (route.kind == RouteKind::kReplay) return ReplayParked(*instance, std::move(responder));
      if (route.kind == RouteKind::kRebuild) return Rebuild(*instance, query, std::move(responder));
      if (route.kind == RouteKind::kReset) return Reset(*instance, query, std::move(responder));
      if (route.kind == RouteKind::kPause || route.kind == RouteKind::kResume) {
        return Pause(*instance, route.kind == RouteKind::kPause, std::move(responder));
      }
      return Verify(*instance, query, std::move(responder));
    }
    case RouteKind::kJobs:
      return ListJobs(std::move(responder));
    case RouteKind::kJob:
      return ShowJob(*route.job, std::move(responder));
    case RouteKind::kJobCancel:
      return CancelJob(*route.job, std::move(responder));
    case RouteKind::kHealthz:
      return responder.Send(JsonResponse(200, R"({"status":"ok"})"));
    case RouteKind::kReadyz: {
      if (stopping_) {
        return responder.Send(
            ErrorResponse(Status(ErrorCode::kUnavailable, "the daemon is shutting down")));
      }
      Status health = store_->Health();
      if (!health.ok()) {
        return responder.Send(ErrorResponse(
            Status(ErrorCode::kUnavailable, "storage is not ready: " + health.ToString())));
      }
      return responder.Send(JsonResponse(200, R"({"status":"ok"})"));
    }
    case RouteKind::kNone:
      break;
  }
}

std::unique_ptr<BodyStream> ApiRouter::StreamBody(const HttpRequest& head) {
  const RouteMatch& route = RouteOf(head);
  if (route.kind != RouteKind::kImport || head.method != HttpMethod::kPost) return nullptr;
  std::string_view target = head.target;
  size_t question = target.find('?');
  std::string_view query =
      question == std::string_view::npos ? std::string_view() : target.substr(question + 1);

  const ContainerSpec* spec = store_->FindContainer(*route.container);
  if (spec == nullptr) {
    return ImportStream::Refuse(
        Status(ErrorCode::kContainerNotFound, "no container named '" + *route.container + "'"));
  }
  if (spec->writers == ContainerWriters::kProcessors) {
    return ImportStream::Refuse(Status(
        ErrorCode::kDerivedContainer,
        "container '" + spec->name + "' is filled by processors only; nothing can be imported"));
  }
  if (!IsNdjsonContentType(head.Header("Content-Type"))) {
    return ImportStream::Refuse(
        Status(ErrorCode::kUnsupportedMediaType,
               "Content-Type must be application/x-ndjson (or application/json)"));
  }
  Result<ImportParams> params = ParseImportParams(query);
  if (!params.ok()) return ImportStream::Refuse(params.status());
  if (stopping_) {
    return ImportStream::Refuse(Status(ErrorCode::kUnavailable, "the daemon is shutting down"));
  }
  if (params->as_job && options_.jobs == nullptr) {
    return ImportStream::Refuse(
        Status(ErrorCode::kUnavailable, "this daemon keeps no jobs; import without job=true"));
  }
  ImportProbe* const probe = options_.import_probe;
  size_t running = imports_running_->load();
  do {
    if (running >= options_.import_max_concurrent) {
      if (probe != nullptr) probe->Refused("max_concurrent");
      return ImportStream::Refuse(
          Status(ErrorCode::kUnavailable, std::to_string(running) +
                                              " imports are running (import.max_concurrent); "
                                              "retry later"));
    }
  } while (!imports_running_->compare_exchange_weak(running, running + 1));
  if (probe != nullptr) probe->Started();
  // The import's place among import.max_concurrent, given back (and the
  // running gauge lowered) when the last holder lets it go.
  std::shared_ptr<void> slot(nullptr, [running_imports = imports_running_, probe](void*) {
    --*running_imports;
    if (probe != nullptr) probe->Ended();
  });
  if (!params->as_job) {
    return ImportStream::Create(store_, *spec, *params, options_.import_limits, io_,
                                [slot, probe](const ImportTotals& totals) {
                                  if (probe != nullptr) probe->Finished(totals);
                                });
  }
  std::string spool =
      options_.import_spool_dir + "/" + std::to_string(++spools_created_) + ".ndjson";
  return ImportSpool::Create(
      std::move(spool), options_.import_spool_max_bytes,
      [this, spec = *spec, params = *params, slot](SpooledBody body, Responder responder) {
        StartImportJob(spec, params, std::move(body), slot, std::move(responder));
      },
      [probe](std::string_view reason) {
        if (probe != nullptr) probe->Refused(reason);
      });
}

}  // namespace feedd
