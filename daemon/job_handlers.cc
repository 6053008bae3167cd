// The job routes of ApiRouter (docs/api.md, "Jobs"): list, show and cancel
// the processors' rebuilds and verifies (processors/jobs.h).
#include <boost/json.hpp>

#include "daemon/api_router.h"
#include "daemon/http_util.h"

namespace feedd {
namespace {

Status NoSuchJob(std::string_view id) {
  return Status(ErrorCode::kNotFound, "no job '" + std::string(id) + "'");
}

}  // namespace

HttpResponse ApiRouter::JobAccepted(const Job& job) const {
  HttpResponse response = JsonResponse(
      202, boost::json::serialize(JobJson(job, options_.processors->jobs().clock()->NowMillis())));
  response.headers.push_back({"Location", "/v1/jobs/" + std::to_string(job.id)});
  return response;
}

void ApiRouter::ListJobs(Responder responder) {
  boost::json::array list;
  if (options_.processors != nullptr) {
    const JobRegistry& jobs = options_.processors->jobs();
    const uint64_t now = jobs.clock()->NowMillis();
    for (const Job& job : jobs.List()) list.push_back(JobJson(job, now));
  }
  responder.Send(
      JsonResponse(200, boost::json::serialize(boost::json::object{{"jobs", std::move(list)}})));
}

void ApiRouter::ShowJob(std::string_view id, Responder responder) {
  uint64_t number = 0;
  std::optional<Job> job;
  if (options_.processors != nullptr && ParseUint64(id, &number)) {
    job = options_.processors->jobs().Get(number);
  }
  if (!job) return responder.Send(ErrorResponse(NoSuchJob(id)));
  const uint64_t now = options_.processors->jobs().clock()->NowMillis();
  responder.Send(JsonResponse(200, boost::json::serialize(JobJson(*job, now))));
}

void ApiRouter::CancelJob(std::string_view id, Responder responder) {
  uint64_t number = 0;
  if (options_.processors == nullptr || !ParseUint64(id, &number)) {
    return responder.Send(ErrorResponse(NoSuchJob(id)));
  }
  Result<Job> job = options_.processors->jobs().Cancel(number);
  if (!job.ok()) {
    if (job.status().code() == ErrorCode::kNotFound) {
      return responder.Send(ErrorResponse(NoSuchJob(id)));
    }
    return responder.Send(ErrorResponse(job.status()));
  }
  responder.Send(JobAccepted(*job));
}

}  // namespace feedd
