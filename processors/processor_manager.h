// ProcessorManager: the processor instances of the configuration, built from
// [processor.<name>] sections through the ProcessorRegistry, started and
// stopped together, and looked up by the HTTP API.
//
// Thread-safety: the instance list is fixed after Create(); all methods are
// thread-safe.
// Ownership: owns the instances; borrows the store.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "processors/admin_tasks.h"
#include "processors/jobs.h"
#include "processors/processor_instance.h"
#include "processors/processor_worker.h"
#include "processors/source_pump.h"

namespace feedd {

class ProcessorManager {
 public:
  // `settings`: "<name>.<key>" -> value, from processor.<name>.<key>.
  // Instance keys understood here: kind, run (daemon|worker: worker
  // instances are skipped here), source (local|kafka, implied by run),
  // parallelism, max_attempts, retry_backoff_ms (kafka_grace_ms is accepted
  // and ignored); the rest go to the kind. Daemon instances take their
  // changes from a CommitChangeSource. `kafka_enabled`: kafka.brokers is
  // not none (needed by run = worker).
  // `max_admin_tasks`: rebuilds and verifies running at once, at most
  // (processors.max_admin_tasks; see admin_tasks()).
  // `on_view_committed(processor, seconds)`, when set, observes each
  // instance's commit-to-view latency (ProcessorConfig::on_view_committed).
  // A container with writers = processors that no instance (daemon or
  // worker) writes into is an error (invalid_request): it would stay empty.
  static Result<std::unique_ptr<ProcessorManager>> Create(
      DocumentStore* store, const std::map<std::string, std::string>& settings, bool kafka_enabled,
      size_t max_admin_tasks,
      const std::function<void(const std::string& processor, double seconds)>& on_view_committed =
          {});
  // The instances that `feedd worker` runs: those named in `names`, or when
  // it is empty those with processor.<name>.run = worker. `containers` are
  // the daemon's (GET /v1/containers).
  static Result<std::vector<std::unique_ptr<ProcessorWorker>>> CreateWorkers(
      const std::map<std::string, std::string>& settings,
      const std::vector<ContainerSpec>& containers, const WorkerOptions& options,
      const std::vector<std::string>& names,
      const std::function<void(const std::string& processor, double seconds)>& on_view_committed =
          {});
  // What Create() checks, without a store (for feedd --check-config).
  static Status Validate(const std::map<std::string, std::string>& settings,
                         const std::vector<ContainerSpec>& containers, bool kafka_enabled);

  // Opens the jobs (jobs()), drops the retention watermarks of processors it
  // does not run (removed, or run = worker), then starts every instance.
  Status Start();
  // Cancels and joins the admin tasks, then stops every instance.
  void Stop();

  // Where rebuilds and verifies run, one at a time per processor (keyed by
  // its name), at most max_admin_tasks at once.
  AdminTasks& admin_tasks() const { return *admin_tasks_; }
  // The rebuilds and verifies as jobs, kept in <data_dir>/jobs.json
  // (kJobsFile). REQUIRES: Start() succeeded (it opens them).
  static constexpr const char* kJobsFile = "jobs.json";
  JobRegistry& jobs() const { return *jobs_; }

  const std::vector<std::unique_ptr<ProcessorInstance>>& instances() const { return instances_; }
  ProcessorInstance* Find(const std::string& name) const;
  // The instances that write into `container`.
  std::vector<ProcessorInstance*> WritersOf(const std::string& container) const;

 private:
  DocumentStore* store_ = nullptr;
  // One per instance (docs/architecture.md, "Threads"). Before instances_:
  // they outlive them.
  std::vector<std::unique_ptr<SourcePump>> pumps_;
  std::vector<std::unique_ptr<ProcessorInstance>> instances_;
  // Before admin_tasks_: the tasks finish their jobs until they are joined.
  std::unique_ptr<JobRegistry> jobs_;
  // After instances_: destroyed (its tasks joined) before them.
  std::unique_ptr<AdminTasks> admin_tasks_;
};

}  // namespace feedd
