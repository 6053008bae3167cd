// The job routes of ApiRouter (docs/api.md, "Jobs"): list, show and cancel
// the processors' rebuilds and verifies and the import jobs
// (processors/jobs.h), and starting an import job once its body is spooled.
#include <unistd.h>

#include <boost/json.hpp>

#include "daemon/api_router.h"
#include "daemon/http_util.h"
#include "daemon/import_job.h"

namespace feedd {
namespace {

Status NoSuchJob(std::string_view id) {
  return Status(ErrorCode::kNotFound, "no job '" + std::string(id) + "'");
}

}  // namespace

HttpResponse ApiRouter::JobAccepted(const Job& job) const {
  HttpResponse response =
      JsonResponse(202, boost::json::serialize(JobJson(job, options_.jobs->clock()->NowMillis())));
  response.headers.push_back({"Location", "/v1/jobs/" + std::to_string(job.id)});
  return response;
}

void ApiRouter::ListJobs(Responder responder) {
  boost::json::array list;
  if (options_.jobs != nullptr) {
    const JobRegistry& jobs = *options_.jobs;
    const uint64_t now = jobs.clock()->NowMillis();
    for (const Job& job : jobs.List()) list.push_back(JobJson(job, now));
  }
  responder.Send(
      JsonResponse(200, boost::json::serialize(boost::json::object{{"jobs", std::move(list)}})));
}

void ApiRouter::ShowJob(std::string_view id, Responder responder) {
  uint64_t number = 0;
  std::optional<Job> job;
  if (options_.jobs != nullptr && ParseUint64(id, &number)) job = options_.jobs->Get(number);
  if (!job) return responder.Send(ErrorResponse(NoSuchJob(id)));
  const uint64_t now = options_.jobs->clock()->NowMillis();
  responder.Send(JsonResponse(200, boost::json::serialize(JobJson(*job, now))));
}

void ApiRouter::CancelJob(std::string_view id, Responder responder) {
  uint64_t number = 0;
  if (options_.jobs == nullptr || !ParseUint64(id, &number)) {
    return responder.Send(ErrorResponse(NoSuchJob(id)));
  }
  Result<Job> job = options_.jobs->Cancel(number);
  if (!job.ok()) {
    if (job.status().code() == ErrorCode::kNotFound) {
      return responder.Send(ErrorResponse(NoSuchJob(id)));
    }
    return responder.Send(ErrorResponse(job.status()));
  }
  responder.Send(JobAccepted(*job));
}

void ApiRouter::StartImportJob(const ContainerSpec& spec, ImportParams params, SpooledBody body,
                               std::shared_ptr<void> slot, Responder responder) {
  JobRegistry& jobs = *options_.jobs;
  std::shared_ptr<JobControl> job = jobs.Create("import", "", spec.name);
  job->SetTotal(body.lines);
  job->SetBytesTotal(body.bytes);
  ImportProbe* const probe = options_.import_probe;
  // The slot (import.max_concurrent) is held until the run has reported.
  std::shared_ptr<ImportRun> run = ImportRun::Start(store_, spec, params, options_.import_limits,
                                                    io_, [slot, probe](const ImportTotals& totals) {
                                                      if (probe != nullptr) probe->Finished(totals);
                                                    });
  auto spooled = std::make_shared<SpooledBody>(std::move(body));
  Status s = import_jobs_.Submit(
      "import-" + std::to_string(job->id()),
      [&jobs, job, run, spooled, slot](const std::stop_token& shutdown) mutable {
        std::stop_callback on_shutdown(shutdown, [job] { job->RequestStop(); });
        ImportReport report = RunImportJob(*spooled, *run, *job, [&job] {
          return job->cancel_requested() ? Status(ErrorCode::kCancelled, "the job was cancelled")
                                         : Status(ErrorCode::kUnavailable,
                                                  "the daemon shut down while the job was running");
        });
        run.reset();  // reports the totals
        auto outcome = std::make_shared<ImportReport>(std::move(report));
        // The slot goes once this task's own is free (AdminTasks runs the
        // answer then), and before the job ends: a client that sees it
        // ended may import again at once.
        return AdminTasks::Answer([&jobs, job, outcome, slot = std::move(slot)]() mutable {
          slot.reset();
          if (outcome->error.ok()) {
            jobs.Finish(job->id(), boost::json::value(std::move(outcome->body)));
          } else {
            jobs.Finish(job->id(), outcome->error, std::move(outcome->body));
          }
        });
      });
  if (!s.ok()) {
    jobs.Withdraw(job->id());
    ::unlink(spooled->path.c_str());
    return responder.Send(ErrorResponse(s));
  }
  jobs.Admit(job->id());
  std::optional<Job> admitted = jobs.Get(job->id());
  if (!admitted) {
    return responder.Send(ErrorResponse(Status(ErrorCode::kInternal, "the job vanished")));
  }
  responder.Send(JobAccepted(*admitted));
}

}  // namespace feedd
