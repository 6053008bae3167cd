#include "processors/view_commit_probe.h"

namespace feedd {
namespace {

// Fine between 10 and 100 ms, where the lag goal (p99 <= 50 ms) is judged:
// a quantile is interpolated inside its bucket, so coarse buckets there
// would report any p99 between 50 and 100 ms as about 90 ms.
const prometheus::Histogram::BucketBoundaries kViewSeconds = {
    0.001, 0.0025, 0.005, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.06,
    0.075, 0.1,    0.15,  0.25, 0.5,   1,    2.5,   5,    10,   30};

}  // namespace

ViewCommitProbe::ViewCommitProbe(prometheus::Registry& registry)
    : view_seconds_(prometheus::BuildHistogram()
                        .Name("feedd_processor_commit_to_view_seconds")
                        .Help("From a change's commit to its view writes committed")
                        .Register(registry)) {}

std::function<void(const std::string&, double)> ViewCommitProbe::Observer() {
  return [this](const std::string& processor, double seconds) {
    view_seconds_.Add({{"processor", processor}}, kViewSeconds).Observe(seconds);
  };
}

}  // namespace feedd
