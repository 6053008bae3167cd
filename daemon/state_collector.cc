#include "daemon/state_collector.h"

#include <iterator>
#include <map>

#include "feed/bootstrap_relay.h"
#include "util/metric_families.h"

namespace feedd {
namespace {

using metrics::Families;
using prometheus::ClientMetric;
using prometheus::MetricFamily;

}  // namespace

StateCollector::StateCollector(const DocumentStore* store, const Publisher* publisher,
                               const ProcessorManager* processors)
    : store_probe_(store), publisher_(publisher), processors_(processors) {}

std::vector<MetricFamily> StateCollector::Collect() const {
  std::vector<MetricFamily> families = process_probe_.Collect();
  auto append = [&families](std::vector<MetricFamily> more) {
    families.insert(families.end(), std::make_move_iterator(more.begin()),
                    std::make_move_iterator(more.end()));
  };
  append(store_probe_.Collect());
  Families f;
  if (publisher_ != nullptr) {
    PublisherStatus p = publisher_->GetStatus();
    f.Gauge("feedd_feed_published_lsn", "Every change up to this LSN is in Kafka",
            static_cast<double>(p.published_lsn));
    f.Gauge("feedd_feed_publish_lag_changes", "Changes committed and not yet in Kafka",
            static_cast<double>(p.lag_changes));
    f.Gauge("feedd_feed_publish_lag_seconds", "Age of the oldest change not yet in Kafka",
            p.lag_seconds);
    f.Counter("feedd_kafka_messages_produced_total", "Messages handed to librdkafka",
              static_cast<double>(p.produced));
    f.Counter("feedd_kafka_messages_delivered_total", "Messages acknowledged by the broker",
              static_cast<double>(p.delivered));
    f.Counter("feedd_kafka_produce_errors_total", "Failed Kafka deliveries",
              static_cast<double>(p.delivery_errors), {{"kind", "delivery"}});
    f.Counter("feedd_kafka_produce_errors_total", "Failed Kafka deliveries",
              static_cast<double>(p.fatal_errors), {{"kind", "fatal"}});
    f.Counter("feedd_kafka_envelopes_shrunk_total", "Large items sent without images",
              static_cast<double>(p.envelopes_shrunk));
    f.Counter("feedd_kafka_envelopes_undecodable_total",
              "Stored change envelopes that did not parse, sent reference-only",
              static_cast<double>(p.envelopes_undecodable));
    f.Counter("feedd_kafka_duplicates_skipped_total",
              "Changes found already in Kafka on recovery, not sent again",
              static_cast<double>(p.duplicates_skipped));
    f.Gauge("feedd_kafka_resolved_lsn",
            "LSN of the last resolved-marker round every partition acknowledged",
            static_cast<double>(p.resolved_lsn));
    f.Counter("feedd_kafka_resolved_markers_total", "Resolved markers acknowledged by the broker",
              static_cast<double>(p.resolved_markers));
    f.Counter("feedd_kafka_heartbeats_total", "Heartbeats acknowledged by the broker",
              static_cast<double>(p.heartbeats));
    f.Counter("feedd_kafka_embedded_relay_refused_total",
              "Connections to kafka.embedded_port refused over the relay's limit",
              static_cast<double>(BootstrapRelay::RefusedTotal()));
    f.Gauge("feedd_kafka_inflight_messages", "Messages awaiting delivery",
            static_cast<double>(p.inflight_messages));
    f.Gauge("feedd_kafka_broker_up", "1 while a Kafka broker answers", p.connected ? 1 : 0);
  }
  // ---- processors ----
  if (processors_ != nullptr) {
    const AdminTasks& admin = processors_->admin_tasks();
    f.Gauge("feedd_admin_tasks_running", "Processor rebuilds and verifies running",
            static_cast<double>(admin.running()));
    const char* help_refused = "Rebuilds and verifies refused, by reason";
    f.Counter("feedd_admin_tasks_refused_total", help_refused,
              static_cast<double>(admin.refused_in_progress()), {{"reason", "in_progress"}});
    f.Counter("feedd_admin_tasks_refused_total", help_refused,
              static_cast<double>(admin.refused_too_many()), {{"reason", "too_many"}});
    const JobRegistry& jobs = processors_->jobs();
    f.Gauge("feedd_jobs_running", "Jobs (rebuilds, verifies) running",
            static_cast<double>(jobs.running()));
    // Every type and final state from 0, and whatever else has finished.
    std::map<std::pair<std::string, std::string>, uint64_t> finished;
    for (const char* type : {"rebuild", "verify"}) {
      for (JobState state : {JobState::kSucceeded, JobState::kFailed, JobState::kCancelled}) {
        finished[{type, std::string(JobStateName(state))}] = 0;
      }
    }
    for (const auto& [key, count] : jobs.finished_counts()) finished[key] = count;
    for (const auto& [key, count] : finished) {
      f.Counter("feedd_jobs_finished_total", "Jobs finished, by type and final state",
                static_cast<double>(count), {{"type", key.first}, {"state", key.second}});
    }
    for (const auto& instance : processors_->instances()) {
      ProcessorStatus s = instance->GetStatus();
      std::vector<ClientMetric::Label> l = {{"processor", s.name}};
      f.Gauge("feedd_processor_applied_lsn", "Every change up to this LSN is applied",
              static_cast<double>(s.applied_lsn), l);
      f.Gauge("feedd_processor_lag_changes", "Head LSN minus applied LSN",
              static_cast<double>(s.lag_changes), l);
      f.Gauge("feedd_processor_lag_seconds", "Age of the oldest unapplied change", s.lag_seconds,
              l);
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
      f.Counter("feedd_processor_view_writes_total", "Derived items written",
                static_cast<double>(s.view_writes), l);
      f.Counter("feedd_processor_batches_total",
                "Runs of queued changes of one key applied with one commit",
                static_cast<double>(s.batches), l);
      f.Counter("feedd_processor_rebuilds_total", "Rebuilds finished",
                static_cast<double>(s.rebuilds), l);
      f.Counter("feedd_processor_view_collisions_total",
                "Copies refused because their target item is not derived from the same source",
                static_cast<double>(s.collisions), l);
    }
  }
  append(f.Take());
  return families;
}

}  // namespace feedd
