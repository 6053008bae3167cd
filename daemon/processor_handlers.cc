// The processor routes of ApiRouter (docs/processors.md, "HTTP API") and
// read-your-writes on derived views.
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json.hpp>
#include <optional>

#include "daemon/api_router.h"
#include "daemon/http_util.h"
#include "daemon/reset_params.h"
#include "util/http_client.h"

namespace feedd {
namespace {

boost::json::object StatusJson(const ProcessorStatus& s) {
  return boost::json::object{
      {"name", s.name},
      {"kind", s.kind},
      {"source", s.source},
      {"state", ProcessorStateName(s.state)},
      {"appliedLsn", s.applied_lsn},
      {"lag",
       boost::json::object{
           {"changes", s.lag_changes}, {"pending", s.pending}, {"seconds", s.lag_seconds}}},
      {"applied", s.applied},
      {"viewWrites", s.view_writes},
      {"batches", s.batches},
      {"errors", s.errors},
      {"parked", s.parked},
      {"fromCommitPath", s.from_commit_path},
      {"fromDurableFeed", s.from_durable_feed},
      {"collisions", s.collisions},
      {"lastError",
       s.last_error.empty() ? boost::json::value(nullptr) : boost::json::value(s.last_error)},
  };
}

// State shared by the watches of one read-your-writes wait.
struct DerivedWait {
  std::mutex mutex;
  bool finished = false;
  size_t remaining = 0;
  std::function<void(Status)> continuation;
  std::vector<std::pair<ProcessorInstance*, uint64_t>> tokens;
  std::unique_ptr<boost::asio::steady_timer> timer;
  uint64_t id = 0;  // in ApiRouter::waits_
};

Status ShuttingDown() { return Status(ErrorCode::kUnavailable, "the daemon is shutting down"); }

}  // namespace

void ApiRouter::WaitForDerivedViews(std::string_view container, Lsn min_lsn,
                                    std::chrono::milliseconds wait,
                                    const std::shared_ptr<Responder>& responder,
                                    std::function<void(Status)> continuation) {
  std::vector<ProcessorInstance*> writers;
  if (options_.processors != nullptr)
    writers = options_.processors->WritersOf(std::string(container));
  std::vector<ProcessorInstance*> behind;
  for (ProcessorInstance* w : writers) {
    if (w->applied() < min_lsn) behind.push_back(w);
  }
  if (behind.empty()) return continuation(Status::Ok());

  auto state = std::make_shared<DerivedWait>();
  state->remaining = behind.size();
  state->continuation = std::move(continuation);
  state->timer = std::make_unique<boost::asio::steady_timer>(io_, wait);
  // Runs `status` through the continuation once, on the connection's thread.
  auto finish = [this, state, responder](Status status) {
    std::function<void(Status)> fn;
    {
      std::lock_guard<std::mutex> lock(state->mutex);
      if (state->finished) return;
      state->finished = true;
      fn = std::move(state->continuation);
      state->timer->cancel();
      for (auto& [instance, token] : state->tokens) instance->CancelApplied(token);
    }
    {
      std::lock_guard<std::mutex> lock(waits_mu_);
      waits_.erase(state->id);
    }
    responder->Post([fn = std::move(fn), status = std::move(status)] { fn(status); });
  };
  {
    // After OnServerStopping() took the waits, stopping_ is seen here.
    std::lock_guard<std::mutex> lock(waits_mu_);
    if (!stopping_) {
      state->id = ++next_wait_;
      waits_.emplace(state->id, finish);
    }
  }
  if (state->id == 0) return finish(ShuttingDown());
  state->timer->async_wait(
      [finish, min_lsn, container = std::string(container)](const boost::system::error_code& ec) {
        if (ec) return;  // cancelled: the views caught up
        finish(Status(ErrorCode::kLsnWaitTimeout, "the views of '" + container +
                                                      "' have not applied LSN " +
                                                      std::to_string(min_lsn) + " in time"));
      });
  for (ProcessorInstance* w : behind) {
    // Not under state->mutex: a view that caught up meanwhile runs the
    // callback right here, and it takes that mutex.
    uint64_t token = w->OnApplied(min_lsn, [state, finish] {
      bool all = false;
      {
        std::lock_guard<std::mutex> l(state->mutex);
        all = --state->remaining == 0;
      }
      if (all) finish(Status::Ok());
    });
    std::lock_guard<std::mutex> lock(state->mutex);
    // After a finish, cancelling is harmless: the watch fired or never will.
    if (state->finished) w->CancelApplied(token);
    state->tokens.emplace_back(w, token);
  }
}

std::optional<std::string> ApiRouter::ParkedAtOrBelow(std::string_view container,
                                                      Lsn min_lsn) const {
  if (options_.processors == nullptr) return std::nullopt;
  std::string out;
  for (ProcessorInstance* w : options_.processors->WritersOf(std::string(container))) {
    std::optional<ParkedChange> p = w->OldestParked(min_lsn);
    if (!p) continue;
    if (!out.empty()) out += ", ";
    out += w->name() + "; lsn=" + std::to_string(p->lsn) +
           "; item=" + PercentEncodeSegment(p->container) + "/" +
           PercentEncodeSegment(p->partition_key) + "/" + PercentEncodeSegment(p->id);
  }
  if (out.empty()) return std::nullopt;
  return out;
}

void ApiRouter::ListProcessors(Responder responder) {
  boost::json::array list;
  if (options_.processors != nullptr) {
    for (const auto& instance : options_.processors->instances()) {
      list.push_back(StatusJson(instance->GetStatus()));
    }
  }
  responder.Send(JsonResponse(
      200, boost::json::serialize(boost::json::object{{"processors", std::move(list)}})));
}

void ApiRouter::ShowProcessor(ProcessorInstance& instance, Responder responder) {
  responder.Send(JsonResponse(200, boost::json::serialize(StatusJson(instance.GetStatus()))));
}

void ApiRouter::ShowParked(ProcessorInstance& instance, Responder responder) {
  boost::json::array list;
  for (const ParkedChange& p : instance.Parked()) {
    list.push_back(boost::json::object{{"key", p.key},
                                       {"lsn", p.lsn},
                                       {"container", p.container},
                                       {"partitionKey", p.partition_key},
                                       {"id", p.id},
                                       {"error", p.error}});
  }
  responder.Send(JsonResponse(200, boost::json::serialize(boost::json::object{
                                       {"name", instance.name()}, {"parked", std::move(list)}})));
}

void ApiRouter::ReplayParked(ProcessorInstance& instance, Responder responder) {
  size_t n = instance.ReplayParked();
  responder.Send(JsonResponse(200, boost::json::serialize(boost::json::object{
                                       {"name", instance.name()}, {"replayed", n}})));
}

void ApiRouter::Pause(ProcessorInstance& instance, bool pause, Responder responder) {
  if (pause) {
    instance.Pause();
  } else {
    instance.Resume();
  }
  responder.Send(JsonResponse(200, boost::json::serialize(StatusJson(instance.GetStatus()))));
}

void ApiRouter::Reset(ProcessorInstance& instance, std::string_view query, Responder responder) {
  Result<Lsn> lsn = ParseResetLsn(query, store_->OldestRetainedLsn());
  Status s = lsn.ok() ? instance.ResetTo(*lsn) : lsn.status();
  if (!s.ok()) return responder.Send(ErrorResponse(s));
  responder.Send(JsonResponse(200, boost::json::serialize(StatusJson(instance.GetStatus()))));
}

namespace {

// ?wait=true|false (default false). Any other parameter or value is
// invalid_request.
Result<bool> ParseWait(std::string_view query) {
  Result<std::vector<QueryParam>> params = ParseQueryString(query);
  if (!params.ok()) return params.status();
  bool wait = false;
  for (const QueryParam& p : *params) {
    if (p.name != "wait") {
      return Status(ErrorCode::kInvalidRequest, "unknown parameter '" + p.name + "'");
    }
    if (p.value != "true" && p.value != "false") {
      return Status(ErrorCode::kInvalidRequest, "wait must be true or false");
    }
    wait = p.value == "true";
  }
  return wait;
}

// What a job keeps of its result (in memory and in jobs.json, for up to
// JobRegistry::kMaxFinished jobs): every list cut to kMaxKeptEntries, with
// "<name>Total" giving its full length. A ?wait=true answer has it all.
constexpr size_t kMaxKeptEntries = 1000;

boost::json::value KeptResult(const boost::json::object& result) {
  boost::json::object kept = result;
  for (const auto& [key, value] : result) {
    if (!value.is_array() || value.get_array().size() <= kMaxKeptEntries) continue;
    boost::json::array& list = kept[key].as_array();
    list.resize(kMaxKeptEntries);
    kept[std::string(key) + "Total"] = value.get_array().size();
  }
  return kept;
}

}  // namespace

void ApiRouter::StartJob(ProcessorInstance& instance, std::string type, std::string_view query,
                         Responder responder, JobWork work) {
  Result<bool> wait = ParseWait(query);
  if (!wait.ok()) return responder.Send(ErrorResponse(wait.status()));
  // One operation per processor at a time (409), a bounded number at once
  // (429): the manager's AdminTasks, joined before the store closes. The
  // job runs there, not on the connection: a client that goes away leaves
  // it running. With ?wait=true the answer is sent once the operation has
  // released its slot, so the client may ask again as soon as it has it.
  JobRegistry& jobs = options_.processors->jobs();
  std::shared_ptr<JobControl> job = jobs.Create(std::move(type), instance.name());
  job->SetTotal(instance.EstimatedSourceItems());
  std::shared_ptr<Responder> pending;
  if (*wait) pending = std::make_shared<Responder>(std::move(responder));
  Status s = options_.processors->admin_tasks().Submit(
      instance.name(),
      [&jobs, job, pending, work = std::move(work)](const std::stop_token& shutdown) {
        // Shutdown stops the job as a cancel does; it then fails.
        std::stop_callback on_shutdown(shutdown, [job] { job->RequestStop(); });
        Result<boost::json::object> out =
            work(AdminRun{job->stop_token(), [job](uint64_t items) { job->AddDone(items); }});
        if (!out.ok() && out.status().code() == ErrorCode::kCancelled && !job->cancel_requested()) {
          out = Status(ErrorCode::kUnavailable, "the daemon shut down while the job was running");
        }
        // The job ends once its slot is free (AdminTasks runs the answer
        // then): a client that sees it ended may start the next one at once.
        auto outcome = std::make_shared<Result<boost::json::object>>(std::move(out));
        return AdminTasks::Answer([&jobs, job, pending, outcome] {
          Result<boost::json::object>& result = *outcome;
          if (result.ok()) {
            jobs.Finish(job->id(), KeptResult(*result));
          } else {
            jobs.Finish(job->id(), result.status());
          }
          if (!pending) return;
          if (result.ok()) {
            result->emplace("job", std::to_string(job->id()));
            pending->Send(JsonResponse(200, boost::json::serialize(*result)));
          } else {
            pending->Send(ErrorResponse(result.status()));
          }
        });
      });
  if (!s.ok()) {
    jobs.Withdraw(job->id());
    // NOLINTNEXTLINE(bugprone-use-after-move): moved only into `pending`
    return (pending ? *pending : responder).Send(ErrorResponse(s));
  }
  jobs.Admit(job->id());
  if (pending) return;
  std::optional<Job> admitted = jobs.Get(job->id());
  if (!admitted) {
    return responder.Send(ErrorResponse(Status(ErrorCode::kInternal, "the job vanished")));
  }
  responder.Send(JobAccepted(*admitted));
}

void ApiRouter::Rebuild(ProcessorInstance& instance, std::string_view query, Responder responder) {
  StartJob(
      instance, "rebuild", query, std::move(responder),
      [&instance](const AdminRun& run) -> Result<boost::json::object> {
        Status s = instance.Rebuild(run);
        if (!s.ok()) return s;
        return boost::json::object{{"name", instance.name()}, {"appliedLsn", instance.applied()}};
      });
}

void ApiRouter::Verify(ProcessorInstance& instance, std::string_view query, Responder responder) {
  StartJob(instance, "verify", query, std::move(responder),
           [&instance](const AdminRun& run) -> Result<boost::json::object> {
             auto differences = instance.Verify(std::chrono::seconds(30), run);
             if (!differences.ok()) return differences.status();
             boost::json::array list;
             for (auto& d : *differences) list.emplace_back(d);
             bool ok = list.empty();
             return boost::json::object{{"name", instance.name()},
                                        {"ok", ok},
                                        {"appliedLsn", instance.applied()},
                                        {"differences", std::move(list)}};
           });
}

}  // namespace feedd
