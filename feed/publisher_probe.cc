#include "feed/publisher_probe.h"

#include "feed/bootstrap_relay.h"
#include "util/metric_families.h"

namespace feedd {
namespace {

using metrics::Families;

void CollectProgress(const PublisherStatus& p, Families& f) {
  f.Gauge("feedd_feed_published_lsn", "Every change up to this LSN is in Kafka",
          static_cast<double>(p.published_lsn));
  f.Gauge("feedd_feed_publish_lag_changes", "Changes committed and not yet in Kafka",
          static_cast<double>(p.lag_changes));
  f.Gauge("feedd_feed_publish_lag_seconds", "Age of the oldest change not yet in Kafka",
          p.lag_seconds);
}

void CollectMessages(const PublisherStatus& p, Families& f) {
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
}

void CollectMarkers(const PublisherStatus& p, Families& f) {
  f.Gauge("feedd_kafka_resolved_lsn",
          "LSN of the last resolved-marker round every partition acknowledged",
          static_cast<double>(p.resolved_lsn));
  f.Counter("feedd_kafka_resolved_markers_total", "Resolved markers acknowledged by the broker",
            static_cast<double>(p.resolved_markers));
  f.Counter("feedd_kafka_heartbeats_total", "Heartbeats acknowledged by the broker",
            static_cast<double>(p.heartbeats));
}

void CollectBroker(const PublisherStatus& p, Families& f) {
  f.Counter("feedd_kafka_embedded_relay_refused_total",
            "Connections to kafka.embedded_port refused over the relay's limit",
            static_cast<double>(BootstrapRelay::RefusedTotal()));
  f.Gauge("feedd_kafka_inflight_messages", "Messages awaiting delivery",
          static_cast<double>(p.inflight_messages));
  f.Gauge("feedd_kafka_broker_up", "1 while a Kafka broker answers", p.connected ? 1 : 0);
}

}  // namespace

std::vector<prometheus::MetricFamily> PublisherProbe::Collect() const {
  Families f;
  const PublisherStatus p = publisher_->GetStatus();
  CollectProgress(p, f);
  CollectMessages(p, f);
  CollectMarkers(p, f);
  CollectBroker(p, f);
  return f.Take();
}

}  // namespace feedd
