// ImportProbe: the metrics of bulk imports (docs/metrics.md, "Imports"):
// imports running, finished and refused, and what they wrote.
//
// Thread-safety: every method may be called from any thread.
// Ownership: registers its families in the registry, which must outlive it.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <string_view>

#include "daemon/import_stream.h"

namespace feedd {

class ImportProbe {
 public:
  explicit ImportProbe(prometheus::Registry& registry);

  // An import took its place among import.max_concurrent (running + 1) ...
  void Started();
  // ... and gave it back (running - 1).
  void Ended();
  // An import reported: what it wrote.
  void Finished(const ImportTotals& totals);
  // An import refused before it read anything ("max_concurrent"), or an
  // import job whose body was not spooled ("spool_limit", "no_space",
  // "spool_error", "upload_failed"; daemon/import_spool.h).
  void Refused(std::string_view reason);

 private:
  prometheus::Gauge& running_;
  prometheus::Family<prometheus::Counter>& imports_;
  prometheus::Family<prometheus::Counter>& items_;
  prometheus::Counter& bytes_;
};

}  // namespace feedd
