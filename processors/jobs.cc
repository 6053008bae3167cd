#include "processors/jobs.h"

#include <boost/json/array.hpp>
#include <boost/json/serialize.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "util/atomic_file.h"
#include "util/json_parse.h"

namespace feedd {
namespace {

constexpr JobState kStates[] = {JobState::kRunning, JobState::kSucceeded, JobState::kFailed,
                                JobState::kCancelled};

Status Malformed(const std::string& what) {
  return Status(ErrorCode::kInvalidJson, "not a jobs file: " + what);
}

// The unsigned integer member `key` of `o`.
Result<uint64_t> UintAt(const boost::json::object& o, std::string_view key) {
  const boost::json::value* v = o.if_contains(key);
  if (v == nullptr) return Malformed(std::string(key) + " missing");
  if (v->is_uint64()) return v->get_uint64();
  if (v->is_int64() && v->get_int64() >= 0) return static_cast<uint64_t>(v->get_int64());
  return Malformed(std::string(key) + " is not an unsigned integer");
}

Result<std::string> StringAt(const boost::json::object& o, std::string_view key) {
  const boost::json::value* v = o.if_contains(key);
  if (v == nullptr || !v->is_string()) return Malformed(std::string(key) + " is not a string");
  return std::string(v->get_string());
}

Result<Job> ParseJob(const boost::json::value& value) {
  const boost::json::object* o = value.if_object();
  if (o == nullptr) return Malformed("a job is not an object");
  Job job;
  auto id = StringAt(*o, "id");
  if (!id.ok()) return id.status();
  try {
    size_t used = 0;
    job.id = std::stoull(*id, &used);
    if (used != id->size() || job.id == 0) return Malformed("bad id " + *id);
  } catch (const std::exception&) {
    return Malformed("bad id " + *id);
  }
  auto type = StringAt(*o, "type");
  auto processor = StringAt(*o, "processor");
  auto state = StringAt(*o, "state");
  for (const Status* s : {&type.status(), &processor.status(), &state.status()}) {
    if (!s->ok()) return *s;
  }
  job.type = *type;
  job.processor = *processor;
  if (const boost::json::value* c = o->if_contains("container"); c && c->is_string()) {
    job.container = std::string(c->get_string());
  }
  bool known = false;
  for (JobState st : kStates) {
    if (JobStateName(st) == *state) {
      job.state = st;
      known = true;
    }
  }
  if (!known) return Malformed("bad state " + *state);
  auto created = UintAt(*o, "created");
  auto started = UintAt(*o, "started");
  if (!created.ok()) return created.status();
  if (!started.ok()) return started.status();
  job.created_ms = *created;
  job.started_ms = *started;
  if (const boost::json::value* ended = o->if_contains("ended"); ended && !ended->is_null()) {
    auto e = UintAt(*o, "ended");
    if (!e.ok()) return e.status();
    job.ended_ms = *e;
  }
  const boost::json::value* progress = o->if_contains("progress");
  if (progress == nullptr || !progress->is_object()) return Malformed("progress missing");
  auto done = UintAt(progress->get_object(), "done");
  if (!done.ok()) return done.status();
  job.done = *done;
  if (const boost::json::value* total = progress->get_object().if_contains("total");
      total && !total->is_null()) {
    auto t = UintAt(progress->get_object(), "total");
    if (!t.ok()) return t.status();
    job.total = *t;
  }
  if (const boost::json::value* b = progress->get_object().if_contains("bytesTotal");
      b && !b->is_null()) {
    auto bytes_total = UintAt(progress->get_object(), "bytesTotal");
    auto bytes_done = UintAt(progress->get_object(), "bytesDone");
    if (!bytes_total.ok()) return bytes_total.status();
    if (!bytes_done.ok()) return bytes_done.status();
    job.bytes_total = *bytes_total;
    job.bytes_done = *bytes_done;
  }
  if (const boost::json::value* c = o->if_contains("cancelRequested"); c && c->is_bool()) {
    job.cancel_requested = c->get_bool();
  }
  if (const boost::json::value* r = o->if_contains("result")) job.result = *r;
  if (const boost::json::value* e = o->if_contains("error"); e && !e->is_null()) {
    if (!e->is_object()) return Malformed("error is not an object");
    auto code = StringAt(e->get_object(), "code");
    auto message = StringAt(e->get_object(), "message");
    if (!code.ok()) return code.status();
    if (!message.ok()) return message.status();
    job.error = Status(ErrorCodeFromName(*code), *message);
  }
  return job;
}

}  // namespace

std::string_view JobStateName(JobState state) {
  switch (state) {
    case JobState::kRunning:
      return "running";
    case JobState::kSucceeded:
      return "succeeded";
    case JobState::kFailed:
      return "failed";
    case JobState::kCancelled:
      return "cancelled";
  }
  return "failed";
}

JobRate RateOf(const Job& job, uint64_t now_ms) {
  JobRate rate;
  const uint64_t until = job.state == JobState::kRunning ? now_ms : job.ended_ms;
  if (until > job.started_ms) {
    rate.per_second =
        static_cast<double>(job.done) * 1000.0 / static_cast<double>(until - job.started_ms);
  }
  if (job.state == JobState::kRunning && job.total && job.done > 0 && job.done < *job.total &&
      rate.per_second > 0) {
    rate.eta_seconds = static_cast<double>(*job.total - job.done) / rate.per_second;
  }
  return rate;
}

boost::json::object JobJson(const Job& job, uint64_t now_ms) {
  JobRate rate = RateOf(job, now_ms);
  boost::json::value error = nullptr;
  if (!job.error.ok()) {
    error = boost::json::object{{"code", ErrorCodeName(job.error.code())},
                                {"message", job.error.message()}};
  }
  return boost::json::object{
      {"id", std::to_string(job.id)},
      {"type", job.type},
      {"processor", job.processor},
      {"container",
       job.container.empty() ? boost::json::value(nullptr) : boost::json::value(job.container)},
      {"state", JobStateName(job.state)},
      {"created", job.created_ms},
      {"started", job.started_ms},
      {"ended", job.ended_ms == 0 ? boost::json::value(nullptr) : boost::json::value(job.ended_ms)},
      {"progress",
       boost::json::object{
           {"done", job.done},
           {"total", job.total ? boost::json::value(*job.total) : boost::json::value(nullptr)},
           {"ratePerSecond", rate.per_second},
           {"etaSeconds",
            rate.eta_seconds ? boost::json::value(*rate.eta_seconds) : boost::json::value(nullptr)},
           {"bytesDone", job.bytes_done},
           {"bytesTotal",
            job.bytes_total ? boost::json::value(*job.bytes_total) : boost::json::value(nullptr)}}},
      {"cancelRequested", job.cancel_requested},
      {"result", job.result},
      {"error", std::move(error)},
  };
}

Result<std::unique_ptr<JobRegistry>> JobRegistry::Open(std::string path, Clock* clock) {
  std::unique_ptr<JobRegistry> registry(new JobRegistry(std::move(path), clock));
  const std::string& file = registry->path_;
  std::ifstream in(file);
  if (in) {
    std::stringstream text;
    text << in.rdbuf();
    if (in.bad()) {
      return Status(ErrorCode::kStorageError, "cannot read " + file + ": " + std::strerror(errno));
    }
    if (Status s = registry->Load(text.str()); !s.ok()) {
      const std::string aside = file + ".unreadable";
      FEEDD_LOG(kWarning, "jobs") << file << ": " << s.message() << "; set aside as " << aside
                                  << ", starting with no jobs";
      if (std::rename(file.c_str(), aside.c_str()) != 0) {
        return Status(ErrorCode::kStorageError,
                      "cannot set aside " + file + ": " + std::strerror(errno));
      }
      std::lock_guard<std::mutex> lock(registry->mu_);
      registry->jobs_.clear();
      registry->finished_.clear();
      registry->next_id_ = 1;
    }
  } else if (errno != ENOENT) {
    return Status(ErrorCode::kStorageError, "cannot open " + file + ": " + std::strerror(errno));
  }
  if (Status s = registry->Persist(); !s.ok()) return s;
  return registry;
}

Status JobRegistry::Load(const std::string& text) {
  Result<boost::json::value> parsed = ParseJson(text);
  if (!parsed.ok()) return Malformed(parsed.status().message());
  const boost::json::object* root = parsed->if_object();
  if (root == nullptr) return Malformed("not an object");
  auto next = UintAt(*root, "nextId");
  if (!next.ok()) return next.status();
  const boost::json::value* list = root->if_contains("jobs");
  if (list == nullptr || !list->is_array()) return Malformed("jobs is not an array");
  const uint64_t now = clock_->NowMillis();
  std::lock_guard<std::mutex> lock(mu_);
  next_id_ = std::max<uint64_t>(*next, 1);
  for (const boost::json::value& v : list->get_array()) {
    Result<Job> job = ParseJob(v);
    if (!job.ok()) return job.status();
    if (job->state == JobState::kRunning) {
      job->state = JobState::kFailed;
      job->ended_ms = now;
      job->error =
          Status(ErrorCode::kUnavailable, "the daemon restarted while the job was running");
      ++finished_[{job->type, std::string(JobStateName(job->state))}];
    }
    next_id_ = std::max(next_id_, job->id + 1);
    Entry& entry = jobs_[job->id];
    entry.job = std::move(*job);
    entry.admitted = true;
  }
  PruneLocked();
  return Status::Ok();
}

std::shared_ptr<JobControl> JobRegistry::Create(std::string type, std::string processor,
                                                std::string container) {
  const uint64_t now = clock_->NowMillis();
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t id = next_id_++;
  Entry& entry = jobs_[id];
  entry.job.id = id;
  entry.job.type = std::move(type);
  entry.job.processor = std::move(processor);
  entry.job.container = std::move(container);
  entry.job.created_ms = now;
  entry.job.started_ms = now;
  entry.control = std::shared_ptr<JobControl>(new JobControl(id));
  return entry.control;
}

void JobRegistry::Admit(uint64_t id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = jobs_.find(id);
    if (it == jobs_.end()) return;
    it->second.admitted = true;
  }
  (void)Persist();  // logged there
}

void JobRegistry::Withdraw(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find(id);
  if (it != jobs_.end() && !it->second.admitted) jobs_.erase(it);
}

void JobRegistry::Finish(uint64_t id, Status error, boost::json::value partial_result) {
  FinishWith(id, Result<boost::json::value>(std::move(error)), std::move(partial_result));
}

void JobRegistry::Finish(uint64_t id, Result<boost::json::value> outcome) {
  FinishWith(id, std::move(outcome), nullptr);
}

void JobRegistry::FinishWith(uint64_t id, Result<boost::json::value> outcome,
                             boost::json::value partial_result) {
  const uint64_t now = clock_->NowMillis();
  bool admitted = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = jobs_.find(id);
    if (it == jobs_.end() || it->second.job.state != JobState::kRunning) return;
    Entry& entry = it->second;
    entry.job = SnapshotLocked(entry);
    entry.control.reset();
    entry.job.ended_ms = std::max(now, entry.job.started_ms);
    if (outcome.ok()) {
      entry.job.state = JobState::kSucceeded;
      entry.job.result = std::move(*outcome);
      entry.job.total = entry.job.done;
    } else {
      entry.job.state = outcome.status().code() == ErrorCode::kCancelled ? JobState::kCancelled
                                                                         : JobState::kFailed;
      entry.job.error = outcome.status();
      entry.job.result = std::move(partial_result);
    }
    ++finished_[{entry.job.type, std::string(JobStateName(entry.job.state))}];
    admitted = entry.admitted;
    PruneLocked();
  }
  if (admitted) (void)Persist();  // logged there
}

Job JobRegistry::SnapshotLocked(const Entry& entry) const {
  Job job = entry.job;
  if (entry.control) {
    job.done = entry.control->done_.load();
    const int64_t total = entry.control->total_.load();
    job.total = total < 0 ? std::nullopt : std::optional<uint64_t>(static_cast<uint64_t>(total));
    job.cancel_requested = entry.control->cancel_requested();
    job.bytes_done = entry.control->bytes_done_.load();
    const int64_t bytes_total = entry.control->bytes_total_.load();
    if (bytes_total >= 0) job.bytes_total = static_cast<uint64_t>(bytes_total);
  }
  return job;
}

void JobRegistry::PruneLocked() {
  size_t finished = 0;
  for (const auto& [id, entry] : jobs_) finished += entry.job.state != JobState::kRunning;
  for (auto it = jobs_.begin(); finished > kMaxFinished && it != jobs_.end();) {
    if (it->second.job.state == JobState::kRunning) {
      ++it;
      continue;
    }
    it = jobs_.erase(it);
    --finished;
  }
}

std::optional<Job> JobRegistry::Get(uint64_t id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find(id);
  if (it == jobs_.end() || !it->second.admitted) return std::nullopt;
  return SnapshotLocked(it->second);
}

std::vector<Job> JobRegistry::List() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Job> list;
  for (auto it = jobs_.rbegin(); it != jobs_.rend(); ++it) {
    if (it->second.admitted) list.push_back(SnapshotLocked(it->second));
  }
  return list;
}

Result<Job> JobRegistry::Cancel(uint64_t id) {
  std::shared_ptr<JobControl> control;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = jobs_.find(id);
    if (it == jobs_.end() || !it->second.admitted) {
      return Status(ErrorCode::kNotFound, "no job " + std::to_string(id));
    }
    if (it->second.job.state != JobState::kRunning) {
      return Status(ErrorCode::kConflict, "job " + std::to_string(id) + " has already finished (" +
                                              std::string(JobStateName(it->second.job.state)) +
                                              ")");
    }
    control = it->second.control;
    control->cancel_requested_ = true;
  }
  control->RequestStop();  // outside mu_: stop callbacks run here
  std::optional<Job> job = Get(id);
  if (!job) return Status(ErrorCode::kNotFound, "no job " + std::to_string(id));
  return *job;
}

size_t JobRegistry::running() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& [id, entry] : jobs_)
    n += entry.admitted && entry.job.state == JobState::kRunning;
  return n;
}

std::map<std::pair<std::string, std::string>, uint64_t> JobRegistry::finished_counts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return finished_;
}

Status JobRegistry::Persist() {
  std::lock_guard<std::mutex> file_lock(file_mu_);
  std::string text;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const uint64_t now = clock_->NowMillis();
    boost::json::array list;
    for (const auto& [id, entry] : jobs_) {
      if (entry.admitted) list.push_back(JobJson(SnapshotLocked(entry), now));
    }
    text = boost::json::serialize(boost::json::object{{"nextId", next_id_}, {"jobs", list}});
  }
  text += "\n";
  Status s = WriteFileAtomically(path_, text);
  if (!s.ok()) {
    if (uint64_t suppressed = 0; persist_errors_.Allow(&suppressed)) {
      LogLine(LogLevel::kWarning, "jobs", suppressed) << "cannot keep the jobs: " << s.message();
    }
  }
  return s;
}

}  // namespace feedd
