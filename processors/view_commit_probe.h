// ViewCommitProbe: the commit-to-view latency histogram of docs/metrics.md
// (feedd_processor_commit_to_view_seconds, by processor): from a change's
// commit to its view writes committed, observed by each instance or worker
// (ProcessorManager::Create's and CreateWorkers' on_view_committed).
//
// Thread-safety: Observer()'s function may be called from any thread.
// Ownership: registers its family in the registry, which must outlive the
// probe and the function Observer() returns; the probe must outlive the
// processors it observes.
#pragma once

#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <functional>
#include <string>

namespace feedd {

class ViewCommitProbe {
 public:
  explicit ViewCommitProbe(prometheus::Registry& registry);

  // For ProcessorManager's on_view_committed.
  std::function<void(const std::string& processor, double seconds)> Observer();

 private:
  prometheus::Family<prometheus::Histogram>& view_seconds_;
};

}  // namespace feedd
