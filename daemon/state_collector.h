// StateCollector: the metrics of docs/metrics.md that are read at scrape time
// rather than counted on the hot path - storage (per-container writes,
// RocksDB health, disk space), change feed and Kafka publisher, processors,
// process statistics and build information.
//
// Thread-safety: Collect() may run concurrently with everything it samples;
// each source is read through its own thread-safe accessor.
// Ownership: borrows the store, publisher and processors (either may be
// null); they must outlive the registry's use of the collector (stop the
// metrics server first).
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <string>

#include "feed/publisher.h"
#include "processors/processor_manager.h"
#include "storage/document_store.h"

namespace feedd {

class StateCollector : public prometheus::Collectable {
 public:
  StateCollector(const DocumentStore* store, const Publisher* publisher,
                 const ProcessorManager* processors, std::string data_dir);

  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  const DocumentStore* const store_;
  const Publisher* const publisher_;
  const ProcessorManager* const processors_;
  const std::string data_dir_;
};

}  // namespace feedd
