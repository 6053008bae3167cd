// ApiRouter: the HTTP API of docs/api.md, on top of a DocumentStore. It maps each request to a
// route, validates it, and answers from the store.
//
// Files: api_router.cc (routing, containers, health), processor_handlers.cc
// (processors, starting rebuild and verify jobs), job_handlers.cc (jobs,
// starting import jobs),
// write_handlers.cc (POST/PUT/PATCH/DELETE items, batch), read_handlers.cc
// (GET item, query, read-your-writes), feed_handlers.cc (change feed with
// long-poll, feed info).
//
// Concurrency
//   Handle() runs on the I/O threads and never blocks on a write: writes go
//   through DocumentStore::Submit() and are answered from the commit
//   thread's callback after a hop back to an I/O thread (building a response
//   is kept off the commit thread). Point reads run on the I/O thread;
//   queries on the QueryExecutor's threads, so that slow queries cannot
//   starve health checks and point reads. A change-feed long poll parks on an Asio timer plus
//   DocumentStore::OnHeadReached(), never on a thread.
//
// Ownership
//   The store and io_context are not owned. The router must outlive every
//   store callback it registered: stop the HTTP server, then Close() and
//   destroy the store, then destroy the router.
#pragma once

#include <atomic>
#include <boost/json/object.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "daemon/auth_tokens.h"
#include "daemon/http_handler.h"
#include "daemon/import_probe.h"
#include "daemon/import_spool.h"
#include "daemon/import_stream.h"
#include "daemon/query_executor.h"
#include "daemon/route_match.h"
#include "feed/publisher.h"
#include "processors/admin_tasks.h"
#include "processors/jobs.h"
#include "processors/processor_manager.h"
#include "storage/document_store.h"
#include "storage/query.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace prometheus {
class Gauge;
}  // namespace prometheus

namespace feedd {

class ChangeFeedPoll;

class ApiRouter : public HttpHandler {
 public:
  struct Options {
    // The Kafka publisher, or nullptr when publishing is off. Not owned; it
    // must outlive the router's use of it (stop HTTP first).
    const Publisher* publisher = nullptr;
    bool embedded_broker = false;
    // The processors, or nullptr when there are none. Not owned; stopped
    // after the HTTP server.
    ProcessorManager* processors = nullptr;
    // Bounds of one API query (query.* options); QueryLimits{} is unbounded.
    QueryLimits query_limits;
    // A /v1/changefeed page ends before its envelopes pass this many bytes
    // (feed.max_page_bytes); 0: no limit.
    uint64_t feed_max_page_bytes = 0;
    // Queries run on their own threads (daemon/query_executor.h): this many
    // (query.threads), with at most query_max_queued waiting (query.max_queued).
    size_t query_threads = 2;
    size_t query_max_queued = 64;
    // Set to the number of change-feed long polls parked now
    // (feedd_feed_long_polls_waiting); may be null. Not owned.
    prometheus::Gauge* polls_waiting = nullptr;
    // Bulk imports (import.*): batch and sync sizes, and how many run at
    // once (more are 503).
    ImportLimits import_limits;
    size_t import_max_concurrent = 2;
    // Not owned; nullptr reports nothing. Must outlive the io_context.
    ImportProbe* import_probe = nullptr;
    // Import jobs (?job=true) spool their body into files of this directory
    // (daemon/import_spool.h), each at most import_spool_max_bytes
    // (import.spool_max_mb).
    std::string import_spool_dir;
    uint64_t import_spool_max_bytes = 4ull << 30;
    // The jobs (GET /v1/jobs): the processors' registry, or the daemon's
    // when there are no processors. Not owned; outlives the router. nullptr:
    // no jobs (import jobs are refused 503).
    JobRegistry* jobs = nullptr;
  };

  ApiRouter(DocumentStore* store, Options options, boost::asio::io_context& io);
  ~ApiRouter() override;
  ApiRouter(const ApiRouter&) = delete;
  ApiRouter& operator=(const ApiRouter&) = delete;

  // Sets head.route to Match() of its target and method.
  void Route(HttpRequest& head) override;
  // Answers the request by the route it carries (a request without one is
  // answered 404).
  void Handle(HttpRequest request, Responder responder) override;
  // POST /v1/containers/{c}/import streams its body (daemon/import_stream.h);
  // every other request is buffered.
  std::unique_ptr<BodyStream> StreamBody(const HttpRequest& head) override;
  // The route of a request target (its path, without the query string) and
  // method, from the route table: its template (the metrics' route label)
  // and what the request needs (docs/security.md, "Roles"): kOpen for
  // /healthz and /readyz; kAdmin for the POST operations on a processor and
  // on a job; kWrite for POST, PUT, PATCH and DELETE of items, batches and
  // imports; kRead for everything else (GETs, queries, unknown paths and
  // methods, which are then 404 or 405).
  static RouteMatch Match(std::string_view target, HttpMethod method);
  // Answers every parked long poll and read-your-writes wait now; /readyz
  // answers 503 from now on.
  void OnServerStopping() override;
  // Stops the running import jobs (they end failed, `unavailable`) and
  // joins them. Call before the HTTP server stops: their last batches are
  // answered on its I/O threads.
  void StopImportJobs() { import_jobs_.Shutdown(); }

 private:
  friend class ChangeFeedPoll;
  using WriteAnswer = HttpResponse (*)(WriteResult& result);

  // write_handlers.cc
  void CreateItem(const ContainerSpec& spec, const HttpRequest& request, Responder responder);
  void PutItem(const ContainerSpec& spec, const std::string& pk, const std::string& id,
               const HttpRequest& request, Responder responder);
  void PatchItem(const ContainerSpec& spec, const std::string& pk, const std::string& id,
                 const HttpRequest& request, Responder responder);
  void DeleteItem(const ContainerSpec& spec, const std::string& pk, const std::string& id,
                  const HttpRequest& request, Responder responder);
  void Batch(const ContainerSpec& spec, const std::string& pk, const HttpRequest& request,
             Responder responder);
  // Submits `request`; `answer` builds the response on an I/O thread.
  void SubmitWrite(WriteRequest request, Responder responder, WriteAnswer answer);

  // read_handlers.cc
  void GetItem(const ContainerSpec& spec, const std::string& pk, const std::string& id,
               const HttpRequest& request, Responder responder);
  void QueryItems(const ContainerSpec& spec, const HttpRequest& request, Responder responder);
  // Runs `query` and answers it (on the calling thread).
  void AnswerQuery(const std::string& container, const QuerySpec& query, std::optional<Lsn> min_lsn,
                   Responder& responder);
  // Adds X-Feedd-Parked to a read that carried X-Feedd-Min-Lsn, when due.
  void AddParkedHeader(const std::string& container, std::optional<Lsn> min_lsn,
                       HttpResponse* response) const;
  // processor_handlers.cc
  // Read-your-writes on derived views: calls `continuation` with OK once
  // every processor writing into `container` has applied `min_lsn` (at
  // once, on the caller's thread, when none writes there), with
  // lsn_wait_timeout after `wait`, or with unavailable when the server
  // stops; but for the first case, on the thread of `responder`'s
  // connection (Responder::Post), which `continuation` answers through.
  // A parked change counts as applied (docs/processors.md, "Failure isolation").
  void WaitForDerivedViews(std::string_view container, Lsn min_lsn, std::chrono::milliseconds wait,
                           const std::shared_ptr<Responder>& responder,
                           std::function<void(Status)> continuation);
  // The X-Feedd-Parked value of a read of `container` with X-Feedd-Min-Lsn
  // `min_lsn`: per processor writing into it, its oldest parked change when
  // that is at or below `min_lsn`; nullopt when there is none (docs/api.md).
  std::optional<std::string> ParkedAtOrBelow(std::string_view container, Lsn min_lsn) const;

  void ListProcessors(Responder responder);
  void ShowProcessor(ProcessorInstance& instance, Responder responder);
  void ShowParked(ProcessorInstance& instance, Responder responder);
  void ReplayParked(ProcessorInstance& instance, Responder responder);
  // Pauses (or resumes) taking changes; answers the state.
  void Pause(ProcessorInstance& instance, bool pause, Responder responder);
  // ?lsn=N|oldest: ProcessorInstance::ResetTo().
  void Reset(ProcessorInstance& instance, std::string_view query, Responder responder);
  // Rebuild and verify take long: they run as jobs on the processors'
  // AdminTasks and are answered 202 with the job (200 with the result when
  // done, with ?wait=true), or at once when it refuses them (409, 429, 503).
  void Rebuild(ProcessorInstance& instance, std::string_view query, Responder responder);
  void Verify(ProcessorInstance& instance, std::string_view query, Responder responder);
  // The operation of a job: its result, or the error the job ends with.
  using JobWork = std::function<Result<boost::json::object>(const AdminRun& run)>;
  void StartJob(ProcessorInstance& instance, std::string type, std::string_view query,
                Responder responder, JobWork work);

  // job_handlers.cc
  void ListJobs(Responder responder);
  void ShowJob(std::string_view id, Responder responder);
  void CancelJob(std::string_view id, Responder responder);
  // 202 with the job and its Location.
  HttpResponse JobAccepted(const Job& job) const;
  // Starts the import job of a spooled body on import_jobs_ and answers 202
  // with it (503 when the daemon is shutting down). `slot` holds the
  // import's place among import.max_concurrent until its run has reported.
  void StartImportJob(const ContainerSpec& spec, ImportParams params, SpooledBody body,
                      std::shared_ptr<void> slot, Responder responder);

  // feed_handlers.cc
  void ChangeFeed(std::string_view query, Responder responder);
  void FeedInfo(Responder responder);
  // False when the router is stopping (the poll must answer now).
  bool RegisterPoll(ChangeFeedPoll* poll, std::weak_ptr<ChangeFeedPoll> weak);
  void UnregisterPoll(ChangeFeedPoll* poll);

  DocumentStore* const store_;
  const Options options_;
  boost::asio::io_context& io_;
  const std::string containers_json_;  // the answer of GET /v1/containers
  std::atomic<bool> stopping_{false};
  // Shared with the imports, which may end after the router (their last
  // callbacks are destroyed with the io_context).
  const std::shared_ptr<std::atomic<size_t>> imports_running_ =
      std::make_shared<std::atomic<size_t>>(0);
  std::atomic<uint64_t> spools_created_{0};  // names the spool files
  // The import jobs' threads (their number is bounded by imports_running_).
  AdminTasks import_jobs_;

  QueryExecutor queries_;

  std::mutex polls_mu_;
  std::unordered_map<ChangeFeedPoll*, std::weak_ptr<ChangeFeedPoll>>
      polls_;  // GUARDED_BY(polls_mu_)

  // Read-your-writes waits in progress: what finishes each.
  std::mutex waits_mu_;
  uint64_t next_wait_ = 0;                                           // GUARDED_BY(waits_mu_)
  std::unordered_map<uint64_t, std::function<void(Status)>> waits_;  // GUARDED_BY(waits_mu_)
};

}  // namespace feedd
