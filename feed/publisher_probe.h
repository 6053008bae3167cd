// PublisherProbe: the Kafka metrics of docs/metrics.md ("Change feed and
// Kafka"), read from the Publisher at scrape time: what is published and
// how far behind, messages produced, delivered and failed, resolved
// markers, heartbeats, the broker's reachability, and the embedded broker
// relay's refusals.
//
// Thread-safety: Collect() may run concurrently with the publisher (it
// reads Publisher::GetStatus()).
// Ownership: borrows the publisher, which must outlive the collector's use
// (stop the metrics exposer first).
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <vector>

#include "feed/publisher.h"

namespace feedd {

class PublisherProbe : public prometheus::Collectable {
 public:
  explicit PublisherProbe(const Publisher* publisher) : publisher_(publisher) {}

  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  const Publisher* const publisher_;
};

}  // namespace feedd
