#include "daemon/state_collector.h"

#include <iterator>

namespace feedd {

StateCollector::StateCollector(const DocumentStore* store, const Publisher* publisher,
                               const ProcessorManager* processors)
    : store_probe_(store) {
  if (publisher != nullptr) publisher_probe_.emplace(publisher);
  if (processors != nullptr) processor_probe_.emplace(processors);
}

std::vector<prometheus::MetricFamily> StateCollector::Collect() const {
  std::vector<prometheus::MetricFamily> families = process_probe_.Collect();
  auto append = [&families](std::vector<prometheus::MetricFamily> more) {
    families.insert(families.end(), std::make_move_iterator(more.begin()),
                    std::make_move_iterator(more.end()));
  };
  append(store_probe_.Collect());
  if (publisher_probe_) append(publisher_probe_->Collect());
  if (processor_probe_) append(processor_probe_->Collect());
  return families;
}

}  // namespace feedd
