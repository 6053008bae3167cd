// feedctl: the command-line companion of a running feedd.
//
//   feedctl [OPTION]... COMMAND [ARG]...
//
// Every command is one entry of kCommands below (name, operands, one-line
// summary, longer help, the function that runs it); `feedctl --help`,
// `feedctl help COMMAND`, `feedctl COMMAND --help` and the feedctl(1) man
// page (generated from --help by help2man) are all made from that table and
// the option description, so they cannot disagree. Options are parsed by
// Boost.Program_options and may stand before or after the command.
//
// Output: text for people by default; with --json, the daemon's JSON answer
// on stdout (also for a refused call), the text of an error on stderr.
// Exit codes (kExit* below, listed in --help): 0 ok, 1 the daemon refused the
// call, a job failed or verify found differences, 2 usage error, 3 the daemon
// could not be reached.
//
// rebuild, verify and import run as jobs in the daemon (docs/api.md,
// "Jobs"): feedctl starts one (an import once it has uploaded the file),
// polls it until it ends and shows its progress on stderr. Ctrl-C (the
// default SIGINT) ends feedctl only; the job runs on.
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <boost/program_options.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "daemon/feedctl_import.h"
#include "daemon/host_port.h"
#include "util/http_client.h"
#include "util/json_parse.h"
#include "util/tls_context.h"

namespace {

namespace po = boost::program_options;

constexpr int kExitOk = 0;
constexpr int kExitRefused = 1;  // an error answer, a failed job, or verify found differences
constexpr int kExitUsage = 2;
constexpr int kExitUnreachable = 3;

constexpr const char* kDefaultApi = "127.0.0.1:8080";
// A verification recomputes whole views: allow it time.
constexpr std::chrono::minutes kTimeout(30);

// The daemon could not be reached (no connection, a timeout, a broken
// connection): exit kExitUnreachable.
class Unreachable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Reply {
  int status = 0;
  boost::json::value body;  // null when the answer was not JSON
  feedd::Status error;      // of a non-2xx answer (feedd::StatusOfReply)
  bool ok() const { return status >= 200 && status < 300; }
};

// What a command runs with: the connection to the daemon and the output mode.
class Session {
 public:
  Session(std::string api, bool json, feedd::ImportCommand import = {},
          feedd::HttpClientSecurity security = {})
      : http_(std::move(api), kTimeout, std::move(security)),
        json_(json),
        import_(std::move(import)) {}
  const std::string& api() const { return http_.address(); }
  bool json() const { return json_; }
  feedd::HttpClient& http() { return http_; }
  // import's options (--if-exists, --on-error, --no-progress).
  const feedd::ImportCommand& import() const { return import_; }

  // Throws Unreachable when the daemon cannot be reached.
  Reply Call(std::string_view method, const std::string& target) {
    auto reply = http_.Send(method, target, method == "POST" ? "{}" : "");
    if (!reply.ok()) throw Unreachable(reply.status().message());
    return ReplyOf(*reply);
  }

  static Reply ReplyOf(const feedd::HttpReply& reply) {
    Reply out;
    out.status = reply.status;
    feedd::Result<boost::json::value> body = feedd::ParseJson(reply.body);
    if (body.ok()) out.body = std::move(*body);
    out.error = feedd::StatusOfReply(reply);
    return out;
  }

  // For a refused call: the error on stderr (and its body on stdout with
  // --json); returns kExitRefused.
  int Refused(std::string_view what, const Reply& reply) const {
    if (json_) {
      boost::json::value body = reply.body;
      if (!body.is_object()) {
        body = {{"error",
                 {{"code", feedd::ErrorCodeName(reply.error.code())},
                  {"message", reply.error.message()}}}};
      }
      std::cout << boost::json::serialize(body) << "\n";
    }
    std::cerr << "feedctl: " << what << ": " << reply.error.ToString() << "\n";
    return kExitRefused;
  }

 private:
  feedd::HttpClient http_;
  bool json_;
  feedd::ImportCommand import_;
};

std::string Str(const boost::json::value& v) { return std::string(v.as_string()); }
unsigned long long Count(const boost::json::value& v) {
  return static_cast<unsigned long long>(v.to_number<uint64_t>());
}

std::string ProcessorPath(const std::string& name, std::string_view rest = {}) {
  std::string path = "/v1/processors/" + feedd::PercentEncodeSegment(name);
  path.append(rest);
  return path;
}

// ---- The commands ----

int ListProcessors(Session& session, const std::vector<std::string>&) {
  Reply r = session.Call("GET", "/v1/processors");
  if (!r.ok()) return session.Refused("processors", r);
  if (session.json()) {
    std::cout << boost::json::serialize(r.body) << "\n";
    return kExitOk;
  }
  std::printf("%-16s %-12s %-6s %-10s %12s %10s %8s %8s\n", "NAME", "KIND", "SOURCE", "STATE",
              "APPLIED_LSN", "LAG", "LAG_S", "PARKED");
  for (const auto& v : r.body.at("processors").as_array()) {
    const auto& p = v.as_object();
    const auto& lag = p.at("lag").as_object();
    std::printf("%-16s %-12s %-6s %-10s %12llu %10llu %8.3f %8llu\n", Str(p.at("name")).c_str(),
                Str(p.at("kind")).c_str(), Str(p.at("source")).c_str(), Str(p.at("state")).c_str(),
                Count(p.at("appliedLsn")), Count(lag.at("changes")),
                lag.at("seconds").to_number<double>(), Count(p.at("parked")));
  }
  return kExitOk;
}

// ---- Jobs: rebuild and verify start one and follow it ----

std::string JobPath(const std::string& id, std::string_view rest = {}) {
  std::string path = "/v1/jobs/" + feedd::PercentEncodeSegment(id);
  path.append(rest);
  return path;
}

// What a job works on: its processor, or its container (an import).
std::string Subject(const boost::json::object& job) {
  const boost::json::value* container = job.if_contains("container");
  if (container != nullptr && container->is_string()) return Str(*container);
  return Str(job.at("processor"));
}

// "1200/2660 items (45%), 400 items/s, ETA 4 s" (what is known of it); an
// import counts lines, and the bytes read of the spooled body:
// "1200/2660 lines (45%), 0.3/0.7 MiB, 400 lines/s, ETA 4 s".
std::string ProgressText(const boost::json::object& job) {
  const auto& p = job.at("progress").as_object();
  const char* unit = Str(job.at("type")) == "import" ? "lines" : "items";
  const unsigned long long done = Count(p.at("done"));
  std::ostringstream out;
  out << done;
  if (!p.at("total").is_null()) {
    const unsigned long long total = Count(p.at("total"));
    out << "/" << total << " " << unit;
    if (total > 0) out << " (" << std::min<unsigned long long>(done * 100 / total, 100) << "%)";
  } else {
    out << " " << unit;
  }
  const boost::json::value* bytes_total = p.if_contains("bytesTotal");
  if (bytes_total != nullptr && !bytes_total->is_null()) {
    char bytes[64];
    std::snprintf(bytes, sizeof(bytes), "%.1f/%.1f MiB",
                  p.at("bytesDone").to_number<double>() / (1024.0 * 1024.0),
                  bytes_total->to_number<double>() / (1024.0 * 1024.0));
    out << ", " << bytes;
  }
  char rate[32];
  std::snprintf(rate, sizeof(rate), "%.0f", p.at("ratePerSecond").to_number<double>());
  out << ", " << rate << " " << unit << "/s";
  if (!p.at("etaSeconds").is_null()) {
    out << ", ETA " << std::llround(p.at("etaSeconds").to_number<double>()) << " s";
  }
  return out.str();
}

// Shows a running job's progress on stderr: a bar redrawn in place on a
// terminal, otherwise a plain line at most every kPlainEvery.
class ProgressView {
 public:
  ProgressView() : terminal_(isatty(STDERR_FILENO) == 1) {}
  ~ProgressView() { Done(); }

  void Show(const boost::json::object& job) {
    const std::string text = ProgressText(job);
    if (terminal_) {
      constexpr int kWidth = 30;
      const auto& p = job.at("progress").as_object();
      int filled = 0;
      if (!p.at("total").is_null() && Count(p.at("total")) > 0) {
        filled = static_cast<int>(std::min<unsigned long long>(
            Count(p.at("done")) * kWidth / Count(p.at("total")), kWidth));
      }
      std::cerr << "\r[" << std::string(filled, '#') << std::string(kWidth - filled, '.') << "] "
                << text << "\033[K" << std::flush;
      drawn_ = true;
      return;
    }
    const auto now = std::chrono::steady_clock::now();
    if (shown_ && now - last_ < kPlainEvery) return;
    shown_ = true;
    last_ = now;
    std::cerr << "job " << Str(job.at("id")) << ": " << Str(job.at("type")) << " " << Subject(job)
              << ": " << text << "\n";
  }

  // Ends the bar's line.
  void Done() {
    if (drawn_) std::cerr << "\n";
    drawn_ = false;
  }

 private:
  static constexpr std::chrono::seconds kPlainEvery{2};
  const bool terminal_;
  bool drawn_ = false, shown_ = false;
  std::chrono::steady_clock::time_point last_;
};

// How long feedctl waits before asking for a running job again: 5 ms at
// first, so that a short job (a small import) is seen ending at once, then
// twice as long each time, up to 200 ms.
constexpr std::chrono::milliseconds kFirstPoll(5), kPollEvery(200);

// The end of a job: its result, or the error it failed with (and the
// partial result of a job that has one, e.g. an import's report).
struct JobEnd {
  std::string id;
  boost::json::value result;  // the synchronous call's answer plus "job"
  feedd::Status error;
  bool ok() const { return error.ok(); }
};

// Follows `job` (as a 202 gave it) until it ends, its progress on stderr
// unless `progress` is false; nullopt when asking for it fails (*refused
// set).
std::optional<JobEnd> FollowJob(Session& session, boost::json::object job, bool progress,
                                Reply* refused) {
  const std::string id = Str(job.at("id"));
  ProgressView view;
  std::chrono::milliseconds wait = kFirstPoll;
  while (Str(job.at("state")) == "running") {
    if (progress) view.Show(job);
    std::this_thread::sleep_for(wait);
    wait = std::min(2 * wait, kPollEvery);
    Reply got = session.Call("GET", JobPath(id));
    if (!got.ok()) {
      *refused = std::move(got);
      return std::nullopt;
    }
    job = got.body.as_object();
  }
  view.Done();
  JobEnd end;
  end.id = id;
  end.result = job.at("result");
  if (end.result.is_object()) end.result.as_object()["job"] = id;
  if (Str(job.at("state")) != "succeeded") {
    const auto& e = job.at("error").as_object();
    end.error = feedd::Status(feedd::ErrorCodeFromName(Str(e.at("code"))), Str(e.at("message")));
  }
  return end;
}

// Starts `operation` (rebuild, verify) of `name` and follows its job until
// it ends; nullopt when the daemon refused to start it (*refused set).
std::optional<JobEnd> RunJob(Session& session, const std::string& name, std::string_view operation,
                             Reply* refused) {
  Reply r = session.Call("POST", ProcessorPath(name, "/" + std::string(operation)));
  if (!r.ok()) {
    *refused = std::move(r);
    return std::nullopt;
  }
  return FollowJob(session, r.body.as_object(), /*progress=*/true, refused);
}

boost::json::object ErrorBody(const feedd::Status& error) {
  return boost::json::object{
      {"error", {{"code", feedd::ErrorCodeName(error.code())}, {"message", error.message()}}}};
}

int Verify(Session& session, const std::vector<std::string>& operands) {
  std::vector<std::string> names = operands;
  if (names.empty()) {
    Reply r = session.Call("GET", "/v1/processors");
    if (!r.ok()) return session.Refused("processors", r);
    for (const auto& p : r.body.at("processors").as_array()) names.push_back(Str(p.at("name")));
  }
  int rc = kExitOk;
  boost::json::array results;  // --json: one verify answer (or error body) per processor
  for (const auto& name : names) {
    Reply refused;
    std::optional<JobEnd> end = RunJob(session, name, "verify", &refused);
    feedd::Status error = end ? end->error : refused.error;
    if (!error.ok()) {
      rc = kExitRefused;
      std::cerr << "feedctl: verify " << name << ": " << error.ToString() << "\n";
      if (session.json()) {
        boost::json::object failed{{"name", name}, {"ok", false}};
        failed["error"] = ErrorBody(error).at("error");
        if (end) failed["job"] = end->id;
        results.push_back(std::move(failed));
      } else {
        std::cout << name << ": cannot verify: " << error.ToString() << "\n";
      }
      continue;
    }
    const boost::json::value& body = end->result;
    const auto& differences = body.at("differences").as_array();
    if (!differences.empty()) rc = kExitRefused;
    if (session.json()) {
      results.push_back(body);
    } else if (differences.empty()) {
      std::cout << name << ": ok (applied LSN " << Count(body.at("appliedLsn")) << ")\n";
    } else {
      // A job keeps the first 1,000 (docs/api.md, "Jobs").
      const unsigned long long total = body.as_object().contains("differencesTotal")
                                           ? Count(body.at("differencesTotal"))
                                           : differences.size();
      std::cout << name << ": " << total << " difference(s)\n";
      for (const auto& d : differences) std::cout << "  " << Str(d) << "\n";
      if (total > differences.size()) {
        std::cout << "  ... and " << total - differences.size() << " more (POST /v1/processors/"
                  << name << "/verify?wait=true lists them all)\n";
      }
    }
  }
  if (session.json()) {
    std::cout << boost::json::serialize(boost::json::object{{"processors", std::move(results)}})
              << "\n";
  }
  return rc;
}

int Rebuild(Session& session, const std::vector<std::string>& operands) {
  const std::string& name = operands[0];
  Reply refused;
  std::optional<JobEnd> end = RunJob(session, name, "rebuild", &refused);
  if (!end) return session.Refused("rebuild " + name, refused);
  if (!end->ok()) {
    if (session.json()) std::cout << boost::json::serialize(ErrorBody(end->error)) << "\n";
    std::cerr << "feedctl: rebuild " << name << " (job " << end->id
              << "): " << end->error.ToString() << "\n";
    return kExitRefused;
  }
  if (session.json()) {
    std::cout << boost::json::serialize(end->result) << "\n";
  } else {
    std::cout << name << ": rebuilt (applied LSN " << Count(end->result.at("appliedLsn")) << ")\n";
  }
  return kExitOk;
}

// One line of `feedctl jobs`, and the text of `feedctl job`.
std::string JobLine(const boost::json::object& job) {
  std::string outcome;
  if (!job.at("error").is_null()) {
    const auto& e = job.at("error").as_object();
    outcome = Str(e.at("code")) + ": " + Str(e.at("message"));
  }
  char line[256];
  std::snprintf(line, sizeof(line), "%-6s %-8s %-16s %-10s ", Str(job.at("id")).c_str(),
                Str(job.at("type")).c_str(), Subject(job).c_str(), Str(job.at("state")).c_str());
  return line + ProgressText(job) + (outcome.empty() ? "" : "  " + outcome);
}

int ListJobs(Session& session, const std::vector<std::string>&) {
  Reply r = session.Call("GET", "/v1/jobs");
  if (!r.ok()) return session.Refused("jobs", r);
  if (session.json()) {
    std::cout << boost::json::serialize(r.body) << "\n";
    return kExitOk;
  }
  std::printf("%-6s %-8s %-16s %-10s %s\n", "ID", "TYPE", "PROCESSOR", "STATE", "PROGRESS");
  for (const auto& job : r.body.at("jobs").as_array()) {
    std::cout << JobLine(job.as_object()) << "\n";
  }
  return kExitOk;
}

int ShowJob(Session& session, const std::vector<std::string>& operands) {
  const std::string& id = operands[0];
  Reply r = session.Call("GET", JobPath(id));
  if (!r.ok()) return session.Refused("job " + id, r);
  if (session.json()) {
    std::cout << boost::json::serialize(r.body) << "\n";
    return kExitOk;
  }
  const auto& job = r.body.as_object();
  std::cout << "job " << Str(job.at("id")) << ": " << Str(job.at("type")) << " " << Subject(job)
            << ", " << Str(job.at("state")) << "\n"
            << "  progress: " << ProgressText(job) << "\n";
  if (!job.at("result").is_null()) {
    std::cout << "  result: " << boost::json::serialize(job.at("result")) << "\n";
  }
  if (!job.at("error").is_null()) {
    const auto& e = job.at("error").as_object();
    std::cout << "  error: " << Str(e.at("code")) << ": " << Str(e.at("message")) << "\n";
  }
  return kExitOk;
}

int CancelJob(Session& session, const std::vector<std::string>& operands) {
  const std::string& id = operands[0];
  Reply r = session.Call("POST", JobPath(id, "/cancel"));
  if (!r.ok()) return session.Refused("cancel " + id, r);
  if (session.json()) {
    std::cout << boost::json::serialize(r.body) << "\n";
  } else {
    const auto& job = r.body.as_object();
    std::cout << "job " << id << ": cancel requested (" << Str(job.at("type")) << " "
              << Subject(job) << ", " << Str(job.at("state")) << ")\n";
  }
  return kExitOk;
}

int Parked(Session& session, const std::vector<std::string>& operands) {
  const std::string& name = operands[0];
  Reply r = session.Call("GET", ProcessorPath(name, "/parked"));
  if (!r.ok()) return session.Refused("parked " + name, r);
  if (session.json()) {
    std::cout << boost::json::serialize(r.body) << "\n";
    return kExitOk;
  }
  const auto& parked = r.body.at("parked").as_array();
  std::cout << name << ": " << parked.size() << " parked change(s)\n";
  for (const auto& v : parked) {
    const auto& p = v.as_object();
    std::cout << "  LSN " << Count(p.at("lsn")) << "  " << Str(p.at("container")) << "/"
              << feedd::PercentEncodeSegment(Str(p.at("partitionKey"))) << "/"
              << feedd::PercentEncodeSegment(Str(p.at("id"))) << "  " << Str(p.at("error")) << "\n";
  }
  return kExitOk;
}

int Replay(Session& session, const std::vector<std::string>& operands) {
  const std::string& name = operands[0];
  Reply r = session.Call("POST", ProcessorPath(name, "/parked/replay"));
  if (!r.ok()) return session.Refused("replay " + name, r);
  if (session.json()) {
    std::cout << boost::json::serialize(r.body) << "\n";
  } else {
    std::cout << name << ": replaying " << Count(r.body.at("replayed")) << " parked change(s)\n";
  }
  return kExitOk;
}

// pause and resume: both answer the processor's status.
int SetPaused(Session& session, const std::string& name, bool pause) {
  const char* verb = pause ? "pause" : "resume";
  Reply r = session.Call("POST", ProcessorPath(name, pause ? "/pause" : "/resume"));
  if (!r.ok()) return session.Refused(std::string(verb) + " " + name, r);
  if (session.json()) {
    std::cout << boost::json::serialize(r.body) << "\n";
  } else {
    std::cout << name << ": " << Str(r.body.at("state")) << " (applied LSN "
              << Count(r.body.at("appliedLsn")) << ")\n";
  }
  return kExitOk;
}
int Pause(Session& session, const std::vector<std::string>& operands) {
  return SetPaused(session, operands[0], true);
}
int Resume(Session& session, const std::vector<std::string>& operands) {
  return SetPaused(session, operands[0], false);
}

// reset NAME LSN|oldest: answers the processor's status.
int Reset(Session& session, const std::vector<std::string>& operands) {
  const std::string& name = operands[0];
  Reply r = session.Call(
      "POST", ProcessorPath(name, "/reset?lsn=" + feedd::PercentEncodeSegment(operands[1])));
  if (!r.ok()) return session.Refused("reset " + name, r);
  if (session.json()) {
    std::cout << boost::json::serialize(r.body) << "\n";
  } else {
    std::cout << name << ": applying the changes after LSN " << operands[1] << " again ("
              << Str(r.body.at("state")) << ", applied LSN " << Count(r.body.at("appliedLsn"))
              << ")\n";
  }
  return kExitOk;
}

int Import(Session& session, const std::vector<std::string>& operands) {
  feedd::ImportCommand command = session.import();
  command.container = operands[0];
  if (operands.size() > 1) command.file = operands[1];
  const std::string what = "import " + command.container;
  feedd::ImportUpload upload = feedd::UploadImport(session.http(), command);
  if (upload.exit_code != kExitOk) return upload.exit_code;
  Reply r = Session::ReplyOf(upload.reply);
  if (!r.ok()) return session.Refused(what, r);
  Reply refused;
  std::optional<JobEnd> end = FollowJob(session, r.body.as_object(), command.progress, &refused);
  if (!end) return session.Refused(what, refused);
  if (end->ok()) return feedd::SummarizeImport(command, end->result.as_object());
  // Cancelled or failed: the report of what it wrote, when it has one.
  if (end->result.is_object()) {
    feedd::SummarizeImport(command, end->result.as_object());
  } else if (session.json()) {
    std::cout << boost::json::serialize(ErrorBody(end->error)) << "\n";
  }
  std::cerr << "feedctl: " << what << " (job " << end->id << "): " << end->error.ToString() << "\n";
  return kExitRefused;
}

// One command: its name, operands (as shown, and how many), help texts and
// what runs it. `help` is handled before a session exists (run == nullptr).
struct Command {
  const char* name;
  const char* operands;  // e.g. "NAME", "[NAME]..."
  size_t min_operands;
  size_t max_operands;
  const char* summary;      // one line, for the command list
  const char* description;  // for `feedctl help COMMAND`
  int (*run)(Session& session, const std::vector<std::string>& operands);
};

constexpr size_t kAny = static_cast<size_t>(-1);

const Command kCommands[] = {
    {"processors", "", 0, 0, "list processors: state, applied LSN, lag, parked changes",
     "Prints one line per processor: its name, kind, source, state (starting, running, "
     "rebuilding, degraded, paused, stopped), applied LSN, lag in changes and in seconds, "
     "and the number of parked changes. With --json, the answer of GET /v1/processors.",
     ListProcessors},
    {"verify", "[NAME]...", 0, kAny, "recompute views and print every difference",
     "Recomputes the view of each named processor (every processor when none is named) "
     "from its source containers and prints every difference from the stored view. Each "
     "verify is a job: feedctl starts it and follows it until it ends, showing its "
     "progress on stderr (a bar on a terminal, a line every 2 s otherwise). Exits 0 "
     "when every view is right, 1 when one differs or cannot be verified. With --json, "
     "{\"processors\":[...]} holding each result (the answer of POST "
     "/v1/processors/NAME/verify?wait=true, with its \"job\"). Ctrl-C stops following, "
     "not the job: `feedctl cancel ID` does.",
     Verify},
    {"rebuild", "NAME", 1, 1, "derive NAME's view from scratch",
     "Derives NAME's view from scratch from the current data, then lets NAME continue from "
     "the head LSN at the start of the rebuild. The rebuild is a job: feedctl starts it and "
     "follows it until it ends, showing its progress on stderr (a bar on a terminal, a line "
     "every 2 s otherwise). Refused (exit 1) while another rebuild or verify of NAME runs; "
     "exit 1 too when the job fails or is cancelled. Ctrl-C stops following, not the job: "
     "`feedctl cancel ID` does.",
     Rebuild},
    {"jobs", "", 0, 0, "list recent jobs (rebuilds, verifies, imports), newest first",
     "Prints one line per job the daemon keeps (the running ones and the last 100 "
     "finished): id, type, processor (or container, for an import), state (running, succeeded, "
     "failed, cancelled), "
     "progress (items done, estimated total, rate, ETA) and the error of a job that "
     "failed. With --json, the answer of GET /v1/jobs.",
     ListJobs},
    {"job", "ID", 1, 1, "show job ID: state, progress, result or error",
     "Prints job ID: its type, processor, state, progress, and its result or error. With "
     "--json, the answer of GET /v1/jobs/ID. Exit 1 for an unknown id.",
     ShowJob},
    {"cancel", "ID", 1, 1, "ask job ID to stop",
     "Asks the running job ID to stop; it ends `cancelled` soon after (a rebuild commits "
     "nothing more; an import commits the lines it has read and keeps its report). Exit 1 when the "
     "job has already finished or is unknown.",
     CancelJob},
    {"parked", "NAME", 1, 1, "list NAME's parked changes",
     "Lists the changes NAME could not apply and parked: LSN, source item "
     "(container/partition key/id) and the error.",
     Parked},
    {"replay", "NAME", 1, 1, "retry NAME's parked changes",
     "Retries NAME's parked changes (after the cause was fixed) and prints how many it took.",
     Replay},
    {"pause", "NAME", 1, 1, "stop NAME taking changes (its view stands still)",
     "Stops NAME taking changes: its view and applied LSN stand still, and reads that wait "
     "for it (X-Feedd-Min-Lsn) time out, until `feedctl resume NAME` or a restart of feedd.",
     Pause},
    {"resume", "NAME", 1, 1, "let NAME take changes again",
     "Lets NAME take changes again, from where it paused.", Resume},
    {"reset", "NAME LSN", 2, 2, "apply NAME's changes after LSN again",
     "Moves NAME back to LSN (a number, or 'oldest': the oldest the feed retains) and applies "
     "every change after it again, as Kafka Connect's offset reset does; changes are "
     "idempotent, so this repairs a view without a rebuild. LSN may not be above NAME's "
     "applied LSN (to skip changes, rebuild instead). Refused while NAME is being rebuilt.",
     Reset},
    {"import", "CONTAINER [FILE]", 1, 2, "import NDJSON items from FILE (or stdin) into CONTAINER",
     "Bulk import as a job: uploads FILE (or standard input, also with FILE '-'), one JSON item "
     "per line, to POST /v1/containers/CONTAINER/import?job=true, with progress on stderr "
     "(bytes and lines sent, rate) once a second, then follows the import job until it ends, "
     "showing its progress (lines and bytes done, rate, ETA: a bar on a terminal, a line every "
     "2 s otherwise). Prints the job's report (counts, every failed line with its number and "
     "error, and \"job\") as JSON on stdout, with --json too, and a summary on stderr. "
     "--if-exists skip|replace|fail (the daemon's default: skip, so a re-run completes an "
     "import that was cut), --on-error continue|stop, --no-progress. Exits 0 when every line "
     "was created or skipped, 1 when a line failed, the import did not complete, or the job "
     "was cancelled or failed (its report, when it has one, still printed). Ctrl-C after the "
     "upload stops following, not the job: `feedctl cancel ID` does.",
     Import},
    {"help", "[COMMAND]", 0, 1, "print this help, or COMMAND's",
     "Prints the help of COMMAND, or of feedctl when no command is named.", nullptr},
};

const Command* FindCommand(std::string_view name) {
  for (const Command& c : kCommands) {
    if (name == c.name) return &c;
  }
  return nullptr;
}

po::options_description GlobalOptions() {
  po::options_description desc("Options (before or after the command)", 80, 40);
  desc.add_options()                                                                    //
      ("api", po::value<std::string>()->value_name("ADDRESS"),                          //
       "feedd's HTTP API: HOST:PORT or http://HOST:PORT (default: $FEEDCTL_API, else "  //
       "127.0.0.1:8080)")                                                               //
      ("ready-file", po::value<std::string>()->value_name("PATH"),
       "take the API address from feedd's ready file")  //
      ("token-file", po::value<std::string>()->value_name("PATH"),
       "send the bearer token on the first line of PATH (default: $FEEDD_TOKEN_FILE's, "
       "else $FEEDD_TOKEN)")  //
      ("ca-file", po::value<std::string>()->value_name("PATH"),
       "speak HTTPS, trusting the CAs in PATH (PEM)")  //
      ("cert-file", po::value<std::string>()->value_name("PATH"),
       "with --ca-file: present this client certificate (mTLS)")  //
      ("key-file", po::value<std::string>()->value_name("PATH"),
       "the key of --cert-file")  //
      ("if-exists", po::value<std::string>()->value_name("skip|replace|fail"),
       "import: what to do with an id that is already stored")  //
      ("on-error", po::value<std::string>()->value_name("continue|stop"),
       "import: go on after a bad line, or stop at the first")  //
      ("no-progress", "import: no progress lines on stderr")    //
      ("json", "print the daemon's JSON answers instead of text")(
          "help,h", "print this help (or the command's) and exit")("version",
                                                                   "print the version and exit");
  return desc;
}

// Wraps `text` at `width` columns, each line indented by `indent` spaces.
std::string Wrap(std::string_view text, size_t indent, size_t width = 79) {
  std::string out;
  std::string line(indent, ' ');
  std::istringstream words{std::string(text)};
  std::string word;
  while (words >> word) {
    if (line.size() > indent && line.size() + 1 + word.size() > width) {
      out += line + "\n";
      line.assign(indent, ' ');
    }
    if (line.size() > indent) line += ' ';
    line += word;
  }
  if (line.size() > indent) out += line + "\n";
  return out;
}

const char* const kExitAndEnvironment =
    "Exit status:\n"
    "  0    the command succeeded\n"
    "  1    the daemon refused the call (an error answer), a job failed or was\n"
    "       cancelled, verify found a difference, or an import line failed\n"
    "  2    usage error: unknown command or option, wrong operands, bad address\n"
    "  3    the daemon could not be reached (no connection, timeout)\n"
    "\n"
    "Environment:\n"
    "  FEEDCTL_API    the API address when neither --api nor --ready-file is given\n";

std::string MainHelp() {
  std::ostringstream out;
  out << "Usage: feedctl [OPTION]... COMMAND [ARG]...\n"
         "Inspect and control a running feedd: its processors, jobs and bulk imports.\n"
         "\n"
         "Commands:\n";
  for (const Command& c : kCommands) {
    std::string head = "  " + std::string(c.name);
    if (*c.operands != '\0') head += " " + std::string(c.operands);
    head.resize(std::max<size_t>(head.size() + 2, 22), ' ');
    out << head << c.summary << "\n";
  }
  out << "\n"
      << GlobalOptions() << "\n"
      << kExitAndEnvironment << "\n"
      << "Examples:\n"
         "  $ feedctl processors\n"
         "  $ feedctl verify --api http://10.0.0.5:8080\n"
         "  $ FEEDCTL_API=127.0.0.1:8080 feedctl --json verify feed\n"
         "  $ feedctl pause feed\n"
         "  $ feedctl rebuild feed          (Ctrl-C leaves the job running)\n"
         "  $ feedctl jobs\n"
         "  $ feedctl import --if-exists skip posts posts.ndjson\n"
         "\n"
         "`feedctl help COMMAND` or `feedctl COMMAND --help` describes one command.\n";
  return out.str();
}

std::string CommandHelp(const Command& c) {
  std::ostringstream out;
  out << "Usage: feedctl [OPTION]... " << c.name;
  if (*c.operands != '\0') out << " " << c.operands;
  out << "\n" << c.summary << "\n\n" << Wrap(c.description, 0) << "\n";
  out << GlobalOptions() << "\n" << kExitAndEnvironment;
  return out.str();
}

int UsageError(const std::string& message) {
  std::cerr << "feedctl: " << message << "\nTry 'feedctl --help'.\n";
  return kExitUsage;
}

// The API address from a ready file ({"api":"HOST:PORT",...}).
feedd::Result<std::string> ReadyFileApi(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  auto ready = feedd::ParseJson(text.str());
  const boost::json::object* o = ready.ok() ? ready->if_object() : nullptr;
  const boost::json::value* address = o != nullptr ? o->if_contains("api") : nullptr;
  if (!in || address == nullptr || !address->is_string()) {
    return feedd::Status(feedd::ErrorCode::kInvalidRequest,
                         "cannot read the API address from " + path);
  }
  return std::string(address->get_string());
}

int Main(int argc, char** argv) {
  po::options_description options = GlobalOptions();
  po::options_description hidden;
  hidden.add_options()("args", po::value<std::vector<std::string>>());
  po::options_description all;
  all.add(options).add(hidden);
  po::positional_options_description positional;
  positional.add("args", -1);
  po::variables_map values;
  try {
    int style = po::command_line_style::default_style & ~po::command_line_style::allow_guessing;
    po::store(
        po::command_line_parser(argc, argv).options(all).positional(positional).style(style).run(),
        values);
  } catch (const po::error& e) {
    return UsageError(e.what());
  }
  std::vector<std::string> args;
  if (values.count("args") != 0) args = values["args"].as<std::vector<std::string>>();

  if (values.count("version") != 0) {
    std::cout << "feedctl " << FEEDD_VERSION << "\n";
    return kExitOk;
  }
  const Command* command = nullptr;
  if (!args.empty()) {
    command = FindCommand(args[0]);
    if (command == nullptr) return UsageError("unknown command '" + args[0] + "'");
    args.erase(args.begin());
  }
  if (values.count("help") != 0) {
    std::cout << (command != nullptr ? CommandHelp(*command) : MainHelp());
    return kExitOk;
  }
  if (command != nullptr && command->run == nullptr) {  // help [COMMAND]
    if (args.size() > 1) return UsageError("help takes at most one command");
    if (args.empty()) {
      std::cout << MainHelp();
      return kExitOk;
    }
    command = FindCommand(args[0]);
    if (command == nullptr) return UsageError("unknown command '" + args[0] + "'");
    std::cout << CommandHelp(*command);
    return kExitOk;
  }
  if (command == nullptr) return UsageError("no command given");
  if (args.size() < command->min_operands || args.size() > command->max_operands) {
    std::string usage = std::string(command->name);
    if (*command->operands != '\0') usage += " " + std::string(command->operands);
    return UsageError("usage: feedctl " + usage);
  }

  std::string api;
  if (values.count("api") != 0 && values.count("ready-file") != 0) {
    return UsageError("give --api or --ready-file, not both");
  }
  if (values.count("api") != 0) {
    api = values["api"].as<std::string>();
  } else if (values.count("ready-file") != 0) {
    auto read = ReadyFileApi(values["ready-file"].as<std::string>());
    if (!read.ok()) return UsageError(read.status().message());
    api = *read;
  } else if (const char* env = std::getenv("FEEDCTL_API"); env != nullptr && *env != '\0') {
    api = env;
  } else {
    api = kDefaultApi;
  }
  feedd::Result<feedd::HostPort> address = feedd::ParseApiAddress(api);
  if (!address.ok()) return UsageError("bad API address: " + address.status().message());

  feedd::ImportCommand import;
  if (values.count("if-exists") != 0) import.if_exists = values["if-exists"].as<std::string>();
  if (values.count("on-error") != 0) import.on_error = values["on-error"].as<std::string>();
  import.progress = values.count("no-progress") == 0;
  feedd::HttpClientSecurity security;
  feedd::Result<std::string> token = feedd::ClientBearerToken(
      values.count("token-file") != 0 ? values["token-file"].as<std::string>() : "");
  if (!token.ok()) return UsageError(token.status().message());
  security.bearer_token = std::move(*token);
  feedd::TlsClientFiles tls_files;
  if (values.count("ca-file") != 0) tls_files.ca_file = values["ca-file"].as<std::string>();
  if (values.count("cert-file") != 0) tls_files.cert_file = values["cert-file"].as<std::string>();
  if (values.count("key-file") != 0) tls_files.key_file = values["key-file"].as<std::string>();
  if (!tls_files.ca_file.empty()) {
    auto tls = feedd::MakeClientTlsContext(tls_files);
    if (!tls.ok()) return UsageError(tls.status().message());
    security.tls = std::move(*tls);
  } else if (!tls_files.cert_file.empty() || !tls_files.key_file.empty()) {
    return UsageError("--cert-file and --key-file need --ca-file");
  }
  Session session(address->ToString(), values.count("json") != 0, std::move(import),
                  std::move(security));
  try {
    return command->run(session, args);
  } catch (const Unreachable& e) {
    std::cerr << "feedctl: cannot reach feedd: " << e.what() << "\n";
    return kExitUnreachable;
  } catch (const std::exception& e) {
    // An answer without the fields the command reads: not feedd's API.
    std::cerr << "feedctl: unexpected answer from " << session.api() << ": " << e.what() << "\n";
    return kExitRefused;
  }
}

}  // namespace

int main(int argc, char** argv) { return Main(argc, argv); }
