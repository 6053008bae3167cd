// The processor routes of ApiRouter (docs/processors.md, "HTTP API") and
// read-your-writes on derived views.
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json.hpp>

#include "daemon/api_router.h"
#include "daemon/http_util.h"
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
  // Runs `status` through the continuation once, on an I/O thread.
  auto finish = [this, state](Status status) {
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
    PostToIo([fn = std::move(fn), status = std::move(status)] { fn(status); });
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

void ApiRouter::RunAdminTask(ProcessorInstance& instance, Responder responder,
                             std::function<HttpResponse(std::stop_token)> task) {
  // One operation per processor at a time (409), a bounded number at once
  // (429): the manager's AdminTasks, joined before the store closes. The
  // response is sent once the operation has released its slot, so the
  // client may ask again as soon as it has the answer.
  auto pending = std::make_shared<Responder>(std::move(responder));
  Status s = options_.processors->admin_tasks().Submit(
      instance.name(), [pending, task = std::move(task)](std::stop_token stop) {
        auto response = std::make_shared<HttpResponse>(task(stop));
        return [pending, response] { pending->Send(std::move(*response)); };
      });
  if (!s.ok()) pending->Send(ErrorResponse(s));
}

void ApiRouter::Rebuild(ProcessorInstance& instance, Responder responder) {
  RunAdminTask(instance, std::move(responder), [&instance](std::stop_token) {
    Status s = instance.Rebuild();
    if (!s.ok()) return ErrorResponse(s);
    return JsonResponse(200, boost::json::serialize(boost::json::object{
                                 {"name", instance.name()}, {"appliedLsn", instance.applied()}}));
  });
}

void ApiRouter::Verify(ProcessorInstance& instance, Responder responder) {
  RunAdminTask(instance, std::move(responder), [&instance](std::stop_token stop) {
    auto differences = instance.Verify(std::chrono::seconds(30), stop);
    if (!differences.ok()) return ErrorResponse(differences.status());
    boost::json::array list;
    for (auto& d : *differences) list.emplace_back(d);
    bool ok = list.empty();
    return JsonResponse(
        200, boost::json::serialize(boost::json::object{{"name", instance.name()},
                                                        {"ok", ok},
                                                        {"appliedLsn", instance.applied()},
                                                        {"differences", std::move(list)}}));
  });
}

}  // namespace feedd
