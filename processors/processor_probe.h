// ProcessorProbe: the processor metrics of docs/metrics.md ("Processors"),
// read from the ProcessorManager at scrape time: admin tasks, jobs, and per
// instance its progress, lag, state and apply counters.
//
// Thread-safety: Collect() may run concurrently with the processors; it
// reads them through their thread-safe accessors (GetStatus, the admin
// tasks' and job registry's counters).
// Ownership: borrows the manager, which must outlive the collector's use
// (stop the metrics exposer first).
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <vector>

#include "processors/processor_manager.h"

namespace feedd {

class ProcessorProbe : public prometheus::Collectable {
 public:
  explicit ProcessorProbe(const ProcessorManager* processors) : processors_(processors) {}

  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  const ProcessorManager* const processors_;
};

}  // namespace feedd
