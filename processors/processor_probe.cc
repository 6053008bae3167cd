#include "processors/processor_probe.h"

#include <map>
#include <string>
#include <utility>

#include "util/metric_families.h"

namespace feedd {
namespace {

using metrics::Families;
using prometheus::ClientMetric;

void CollectAdminTasks(const AdminTasks& admin, Families& f) {
  f.Gauge("feedd_admin_tasks_running", "Processor rebuilds and verifies running",
          static_cast<double>(admin.running()));
  const char* help_refused = "Rebuilds and verifies refused, by reason";
  f.Counter("feedd_admin_tasks_refused_total", help_refused,
            static_cast<double>(admin.refused_in_progress()), {{"reason", "in_progress"}});
  f.Counter("feedd_admin_tasks_refused_total", help_refused,
            static_cast<double>(admin.refused_too_many()), {{"reason", "too_many"}});
}

void CollectJobs(const JobRegistry& jobs, Families& f) {
  f.Gauge("feedd_jobs_running", "Jobs (rebuilds, verifies, imports) running",
          static_cast<double>(jobs.running()));
  // Every type and final state from 0, and whatever else has finished.
  std::map<std::pair<std::string, std::string>, uint64_t> finished;
  for (const char* type : {"rebuild", "verify", "import"}) {
    for (JobState state : {JobState::kSucceeded, JobState::kFailed, JobState::kCancelled}) {
      finished[{type, std::string(JobStateName(state))}] = 0;
    }
  }
  for (const auto& [key, count] : jobs.finished_counts()) finished[key] = count;
  for (const auto& [key, count] : finished) {
    f.Counter("feedd_jobs_finished_total", "Jobs finished, by type and final state",
              static_cast<double>(count), {{"type", key.first}, {"state", key.second}});
  }
}

void CollectInstance(const ProcessorStatus& s, Families& f) {
  std::vector<ClientMetric::Label> l = {{"processor", s.name}};
  f.Gauge("feedd_processor_applied_lsn", "Every change up to this LSN is applied",
          static_cast<double>(s.applied_lsn), l);
  f.Gauge("feedd_processor_lag_changes", "Head LSN minus applied LSN",
          static_cast<double>(s.lag_changes), l);
  f.Gauge("feedd_processor_lag_seconds", "Age of the oldest unapplied change", s.lag_seconds, l);
  f.Gauge("feedd_processor_parked_changes", "Changes parked after failing",
          static_cast<double>(s.parked), l);
  f.Gauge("feedd_processor_rebuilding", "1 while the view is rebuilt",
          s.state == ProcessorState::kRebuilding ? 1 : 0, l);
  f.Gauge("feedd_processor_paused", "1 while an operator has paused it", s.paused ? 1 : 0, l);
  const char* help_taken = "Changes taken, by where they came from";
  f.Counter("feedd_processor_changes_taken_total", help_taken,
            static_cast<double>(s.from_commit_path),
            {{"processor", s.name}, {"from", "commit_path"}});
  f.Counter("feedd_processor_changes_taken_total", help_taken,
            static_cast<double>(s.from_durable_feed),
            {{"processor", s.name}, {"from", "durable_feed"}});
  const char* help_applies = "Apply attempts by outcome";
  f.Counter("feedd_processor_applies_total", help_applies, static_cast<double>(s.applied),
            {{"processor", s.name}, {"outcome", "applied"}});
  f.Counter("feedd_processor_applies_total", help_applies, static_cast<double>(s.errors),
            {{"processor", s.name}, {"outcome", "failed"}});
  f.Counter("feedd_processor_applies_total", help_applies, static_cast<double>(s.parked_total),
            {{"processor", s.name}, {"outcome", "parked"}});
  const char* help_passed =
      "Changes applied without an applier: outside the kind's concern, or "
      "already reflected in the view";
  f.Counter("feedd_processor_changes_passed_over_total", help_passed,
            static_cast<double>(s.passed_over_outside_concern),
            {{"processor", s.name}, {"why", "outside_concern"}});
  f.Counter("feedd_processor_changes_passed_over_total", help_passed,
            static_cast<double>(s.passed_over_applied_already),
            {{"processor", s.name}, {"why", "applied_already"}});
  f.Counter("feedd_processor_view_writes_total", "Derived items written",
            static_cast<double>(s.view_writes), l);
  f.Counter("feedd_processor_batches_total",
            "Runs of queued changes of one key applied with one commit",
            static_cast<double>(s.batches), l);
  f.Counter("feedd_processor_rebuilds_total", "Rebuilds finished", static_cast<double>(s.rebuilds),
            l);
  const char* help_memo =
      "Reads of the store by a processor answered from what it kept between batches (hit), or "
      "read (miss): single-partition queries, point reads of items";
  for (const auto& [read, counts] :
       {std::pair{"query", s.view_query_memo}, std::pair{"item", s.view_item_memo}}) {
    f.Counter("feedd_processor_view_read_memo_requests_total", help_memo,
              static_cast<double>(counts.hits),
              {{"processor", s.name}, {"read", read}, {"outcome", "hit"}});
    f.Counter("feedd_processor_view_read_memo_requests_total", help_memo,
              static_cast<double>(counts.misses),
              {{"processor", s.name}, {"read", read}, {"outcome", "miss"}});
    f.Gauge("feedd_processor_view_read_memo_bytes",
            "Estimated memory of the reads a processor keeps between batches (at most its "
            "read_memo_mb)",
            static_cast<double>(counts.bytes), {{"processor", s.name}, {"read", read}});
  }
  f.Counter("feedd_processor_view_collisions_total",
            "Copies refused because their target item is not derived from the same source",
            static_cast<double>(s.collisions), l);
}

}  // namespace

std::vector<prometheus::MetricFamily> ProcessorProbe::Collect() const {
  Families f;
  CollectAdminTasks(processors_->admin_tasks(), f);
  CollectJobs(processors_->jobs(), f);
  for (const auto& instance : processors_->instances()) CollectInstance(instance->GetStatus(), f);
  return f.Take();
}

}  // namespace feedd
