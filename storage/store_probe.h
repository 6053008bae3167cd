// StoreProbe: the storage metrics of docs/metrics.md ("Storage", and the
// change feed's head and oldest retained LSN), read from the DocumentStore
// at scrape time: writes by container and outcome, the query cache and
// query limits, RocksDB's health, the storage state, and the data
// directory's file system.
//
// Thread-safety: Collect() may run concurrently with the store; it reads
// the store through its thread-safe accessors (Stats, Usage, RocksHealth,
// Health).
// Ownership: borrows the store, which must outlive the collector's use
// (stop the metrics exposer first).
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <vector>

#include "storage/document_store.h"

namespace feedd {

class StoreProbe : public prometheus::Collectable {
 public:
  explicit StoreProbe(const DocumentStore* store) : store_(store) {}

  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  const DocumentStore* const store_;
};

}  // namespace feedd
