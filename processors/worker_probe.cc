#include "processors/worker_probe.h"

#include "util/metric_families.h"

namespace feedd {

std::vector<prometheus::MetricFamily> WorkerProbe::Collect() const {
  metrics::Families f;
  for (const auto& worker : *workers_) {
    WorkerStatus s = worker->GetStatus();
    std::vector<prometheus::ClientMetric::Label> labels = {{"processor", s.name}};
    f.Gauge("feedd_worker_up", "1 while the worker's processor runs (0: stopped)",
            s.state == ProcessorState::kStopped ? 0 : 1, labels);
    f.Gauge("feedd_worker_assigned_partitions", "Kafka partitions assigned to this worker",
            s.assigned_partitions, labels);
    f.Counter("feedd_worker_changes_applied_total", "changes applied", s.applied, labels);
    f.Counter("feedd_worker_view_writes_total", "derived items written", s.view_writes, labels);
    f.Counter("feedd_worker_apply_errors_total", "failed attempts to apply a change", s.errors,
              labels);
    f.Gauge("feedd_worker_parked_changes", "changes parked after repeated failures", s.parked,
            labels);
    f.Gauge("feedd_worker_in_flight_changes", "changes received and not yet applied", s.in_flight,
            labels);
    f.Counter("feedd_worker_catch_ups_total",
              "partitions caught up from the durable feed (behind the broker's retention)",
              s.catch_ups, labels);
    f.Counter("feedd_worker_unrecoverable_gaps_total",
              "catch-ups whose changes the durable feed no longer held (verify the views)",
              s.unrecoverable_gaps, labels);
    f.Counter("feedd_worker_assignment_errors_total",
              "partition assignment changes librdkafka refused", s.assignment_errors, labels);
    f.Gauge("feedd_worker_resolved_lsn",
            "every change up to this LSN of the assigned partitions is applied or parked "
            "(resolved markers)",
            static_cast<double>(s.resolved_lsn), labels);
    f.Counter("feedd_worker_rebalances_total", "partition assignments received", s.rebalances,
              labels);
    f.Counter("feedd_worker_view_collisions_total",
              "copies refused because their target item is not derived from the same source",
              s.collisions, labels);
  }
  return f.Take();
}

}  // namespace feedd
