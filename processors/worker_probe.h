// WorkerProbe: the metrics of a `feedd worker` process, read at scrape
// time from its ProcessorWorkers (docs/metrics.md, "feedd worker").
//
// Thread-safety: Collect() may run concurrently with the workers.
// Ownership: borrows the workers; stop the exposer before they go.
#pragma once

#include <prometheus/collectable.h>

#include <memory>
#include <vector>

#include "processors/processor_worker.h"

namespace feedd {

class WorkerProbe : public prometheus::Collectable {
 public:
  explicit WorkerProbe(const std::vector<std::unique_ptr<ProcessorWorker>>* workers)
      : workers_(workers) {}

  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  const std::vector<std::unique_ptr<ProcessorWorker>>* const workers_;
};

}  // namespace feedd
