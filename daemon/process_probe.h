// ProcessProbe: the "Process" metrics of docs/metrics.md, read at scrape
// time: feedd_up, the build information (feedd, RocksDB and librdkafka
// versions), and the process's CPU time, memory, start time and file
// descriptors (from /proc/self).
//
// Thread-safety: Collect() may run on any thread.
// Ownership: holds nothing.
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <vector>

namespace feedd {

class ProcessProbe : public prometheus::Collectable {
 public:
  std::vector<prometheus::MetricFamily> Collect() const override;
};

}  // namespace feedd
