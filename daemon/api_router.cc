#include "daemon/api_router.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <vector>

#include "daemon/http_util.h"
#include "storage/prepared_item.h"

namespace feedd {
namespace {

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

struct Route {
  RouteKind kind = RouteKind::kNone;
  const std::string* container = nullptr;
  const std::string* pk = nullptr;
  const std::string* id = nullptr;
  const std::string* processor = nullptr;
  const std::string* job = nullptr;
};

Route MatchRoute(const std::vector<std::string>& s) {
  Route route;
  size_t n = s.size();
  if (n == 1 && s[0] == "healthz") {
    route.kind = RouteKind::kHealthz;
  } else if (n == 1 && s[0] == "readyz") {
    route.kind = RouteKind::kReadyz;
  } else if (n == 2 && s[0] == "v1") {
    if (s[1] == "containers") route.kind = RouteKind::kContainers;
    if (s[1] == "changefeed") route.kind = RouteKind::kChangeFeed;
    if (s[1] == "feed") route.kind = RouteKind::kFeed;
    if (s[1] == "processors") route.kind = RouteKind::kProcessors;
    if (s[1] == "jobs") route.kind = RouteKind::kJobs;
  } else if ((n == 3 || n == 4) && s[0] == "v1" && s[1] == "jobs") {
    route.job = &s[2];
    if (n == 3) route.kind = RouteKind::kJob;
    if (n == 4 && s[3] == "cancel") route.kind = RouteKind::kJobCancel;
  } else if (n >= 3 && n <= 5 && s[0] == "v1" && s[1] == "processors") {
    route.processor = &s[2];
    if (n == 3) route.kind = RouteKind::kProcessor;
    if (n == 4 && s[3] == "parked") route.kind = RouteKind::kParked;
    if (n == 5 && s[3] == "parked" && s[4] == "replay") route.kind = RouteKind::kReplay;
    if (n == 4 && s[3] == "rebuild") route.kind = RouteKind::kRebuild;
    if (n == 4 && s[3] == "verify") route.kind = RouteKind::kVerify;
    if (n == 4 && s[3] == "pause") route.kind = RouteKind::kPause;
    if (n == 4 && s[3] == "resume") route.kind = RouteKind::kResume;
    if (n == 4 && s[3] == "reset") route.kind = RouteKind::kReset;
  } else if (n >= 4 && s[0] == "v1" && s[1] == "containers") {
    route.container = &s[2];
    if (n == 4 && s[3] == "items") {
      route.kind = RouteKind::kItems;
    } else if (n == 4 && s[3] == "query") {
      route.kind = RouteKind::kQuery;
    } else if (n == 4 && s[3] == "import") {
      route.kind = RouteKind::kImport;
    } else if (n == 6 && s[3] == "items") {
      route.kind = RouteKind::kItem;
      route.pk = &s[4];
      route.id = &s[5];
    } else if (n == 6 && s[3] == "partitions" && s[5] == "batch") {
      route.kind = RouteKind::kBatch;
      route.pk = &s[4];
    }
  }
  return route;
}

std::string_view TemplateOf(RouteKind kind) {
  switch (kind) {
    case RouteKind::kContainers:
      return "/v1/containers";
    case RouteKind::kItems:
      return "/v1/containers/{c}/items";
    case RouteKind::kItem:
      return "/v1/containers/{c}/items/{pk}/{id}";
    case RouteKind::kBatch:
      return "/v1/containers/{c}/partitions/{pk}/batch";
    case RouteKind::kQuery:
      return "/v1/containers/{c}/query";
    case RouteKind::kImport:
      return "/v1/containers/{c}/import";
    case RouteKind::kChangeFeed:
      return "/v1/changefeed";
    case RouteKind::kFeed:
      return "/v1/feed";
    case RouteKind::kProcessors:
      return "/v1/processors";
    case RouteKind::kProcessor:
      return "/v1/processors/{name}";
    case RouteKind::kParked:
      return "/v1/processors/{name}/parked";
    case RouteKind::kReplay:
      return "/v1/processors/{name}/parked/replay";
    case RouteKind::kRebuild:
      return "/v1/processors/{name}/rebuild";
    case RouteKind::kVerify:
      return "/v1/processors/{name}/verify";
    case RouteKind::kPause:
      return "/v1/processors/{name}/pause";
    case RouteKind::kResume:
      return "/v1/processors/{name}/resume";
    case RouteKind::kReset:
      return "/v1/processors/{name}/reset";
    case RouteKind::kJobs:
      return "/v1/jobs";
    case RouteKind::kJob:
      return "/v1/jobs/{id}";
    case RouteKind::kJobCancel:
      return "/v1/jobs/{id}/cancel";
    case RouteKind::kHealthz:
      return "/healthz";
    case RouteKind::kReadyz:
      return "/readyz";
    case RouteKind::kNone:
      break;
  }
  return "other";
}

// The methods a route answers, as the Allow header lists them.
std::string_view AllowedMethods(RouteKind kind) {
  switch (kind) {
    case RouteKind::kItems:
    case RouteKind::kBatch:
    case RouteKind::kQuery:
    case RouteKind::kImport:
    case RouteKind::kReplay:
    case RouteKind::kRebuild:
    case RouteKind::kVerify:
    case RouteKind::kPause:
    case RouteKind::kResume:
    case RouteKind::kReset:
    case RouteKind::kJobCancel:
      return "POST";
    case RouteKind::kItem:
      return "GET, PUT, PATCH, DELETE";
    default:
      return "GET";
  }
}

bool IsAllowed(RouteKind kind, HttpMethod method) {
  switch (kind) {
    case RouteKind::kItems:
    case RouteKind::kBatch:
    case RouteKind::kQuery:
    case RouteKind::kImport:
    case RouteKind::kReplay:
    case RouteKind::kRebuild:
    case RouteKind::kVerify:
    case RouteKind::kPause:
    case RouteKind::kResume:
    case RouteKind::kReset:
    case RouteKind::kJobCancel:
      return method == HttpMethod::kPost;
    case RouteKind::kItem:
      return method == HttpMethod::kGet || method == HttpMethod::kPut ||
             method == HttpMethod::kPatch || method == HttpMethod::kDelete;
    default:
      return method == HttpMethod::kGet;
  }
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

std::string_view ApiRouter::RouteTemplate(std::string_view target) {
  std::string_view path = target.substr(0, target.find('?'));
  Result<std::vector<std::string>> segments = SplitPath(path);
  if (!segments.ok()) return "other";
  return TemplateOf(MatchRoute(*segments).kind);
}

Access ApiRouter::AccessOf(std::string_view target, HttpMethod method) {
  std::string_view path = target.substr(0, target.find('?'));
  Result<std::vector<std::string>> segments = SplitPath(path);
  if (!segments.ok()) return Access::kRead;
  RouteKind kind = MatchRoute(*segments).kind;
  if (!IsAllowed(kind, method)) {
    // /healthz and /readyz answer 405 to anyone; elsewhere a token is needed.
    return kind == RouteKind::kHealthz || kind == RouteKind::kReadyz ? Access::kOpen
                                                                     : Access::kRead;
  }
  switch (kind) {
    case RouteKind::kHealthz:
    case RouteKind::kReadyz:
      return Access::kOpen;
    case RouteKind::kItems:
    case RouteKind::kBatch:
    case RouteKind::kImport:
      return Access::kWrite;
    case RouteKind::kItem:
      return method == HttpMethod::kGet ? Access::kRead : Access::kWrite;
    case RouteKind::kReplay:
    case RouteKind::kRebuild:
    case RouteKind::kVerify:
    case RouteKind::kPause:
    case RouteKind::kResume:
    case RouteKind::kReset:
    case RouteKind::kJobCancel:
      return Access::kAdmin;
    // Every kind is named (no default), so a new route does not compile
    // into a class without a decision (-Wswitch).
    case RouteKind::kNone:
    case RouteKind::kContainers:
    case RouteKind::kQuery:
    case RouteKind::kChangeFeed:
    case RouteKind::kFeed:
    case RouteKind::kProcessors:
    case RouteKind::kProcessor:
    case RouteKind::kParked:
    case RouteKind::kJobs:
    case RouteKind::kJob:
      return Access::kRead;
  }
  return Access::kRead;
}

void ApiRouter::Handle(HttpRequest request, Responder responder) {
  std::string_view target = request.target;
  size_t question = target.find('?');
  std::string_view path = target.substr(0, question);
  std::string_view query =
      question == std::string_view::npos ? std::string_view() : target.substr(question + 1);

  Result<std::vector<std::string>> segments = SplitPath(path);
  if (!segments.ok()) return responder.Send(ErrorResponse(segments.status()));
  Route route = MatchRoute(*segments);
  if (route.kind == RouteKind::kNone) {
    return responder.Send(
        ErrorResponse(Status(ErrorCode::kNotFound, "no such path: " + std::string(path))));
  }
  if (!IsAllowed(route.kind, request.method)) {
    HttpResponse response =
        ErrorResponse(Status(ErrorCode::kMethodNotAllowed,
                             "allowed methods: " + std::string(AllowedMethods(route.kind))));
    response.headers.push_back({"Allow", std::string(AllowedMethods(route.kind))});
    return responder.Send(std::move(response));
  }

  const ContainerSpec* spec = nullptr;
  if (route.container != nullptr) {
    spec = store_->FindContainer(*route.container);
    if (spec == nullptr) {
      return responder.Send(ErrorResponse(
          Status(ErrorCode::kContainerNotFound, "no container named '" + *route.container + "'")));
    }
  }
  if (route.pk != nullptr) {
    Status status = ValidatePartitionKeyValue(*route.pk);
    if (!status.ok()) return responder.Send(ErrorResponse(status));
  }
  if (route.id != nullptr) {
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

void ApiRouter::PostToIo(std::function<void()> work) { boost::asio::post(io_, std::move(work)); }

std::unique_ptr<BodyStream> ApiRouter::StreamBody(const HttpRequest& head) {
  if (head.method != HttpMethod::kPost) return nullptr;
  std::string_view target = head.target;
  size_t question = target.find('?');
  std::string_view path = target.substr(0, question);
  std::string_view query =
      question == std::string_view::npos ? std::string_view() : target.substr(question + 1);
  Result<std::vector<std::string>> segments = SplitPath(path);
  if (!segments.ok()) return nullptr;
  Route route = MatchRoute(*segments);
  if (route.kind != RouteKind::kImport) return nullptr;

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
