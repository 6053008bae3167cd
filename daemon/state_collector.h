// StateCollector: the metrics of docs/metrics.md that are read at scrape time
// rather than counted on the hot path, gathered from each module's probe,
// which owns their names, help and labels: the process's (ProcessProbe:
// feedd_up, build information, process statistics), the store's (StoreProbe),
// the Kafka publisher's (PublisherProbe), the processors' (ProcessorProbe).
// Registered once the API serves, so that feedd_up appears then.
//
// Thread-safety: Collect() may run concurrently with everything it samples;
// each source is read through its own thread-safe accessors.
// Ownership: borrows the store, publisher and processors (the last two may
// be null: their metrics are left out); they must outlive the registry's
// use of the collector (stop the metrics exposer first).
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <optional>
#include <vector>

#include "daemon/process_probe.h"
#include "feed/publisher_probe.h"
#include "processors/processor_probe.h"
#include "storage/store_probe.h"

namespace feedd {

class StateCollector : public prometheus::Collectable {
 public:
  StateCollector(const DocumentStore* store, const Publisher* publisher,
                 const ProcessorManager* processors);

  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  ProcessProbe process_probe_;
  StoreProbe store_probe_;
  std::optional<PublisherProbe> publisher_probe_;
  std::optional<ProcessorProbe> processor_probe_;
};

}  // namespace feedd
