// SampleValue: reads one sample out of a probe's collected families, for the
// probes' unit tests.
//
// Thread-safety: a free function over values.
#pragma once

#include <prometheus/metric_family.h>

#include <optional>
#include <string>
#include <vector>

namespace feedd::testutil {

// The value of the sample of `name` of `type` with exactly `labels`; nullopt
// when there is none.
inline std::optional<double> SampleValue(
    const std::vector<prometheus::MetricFamily>& families, const std::string& name,
    prometheus::MetricType type, const std::vector<prometheus::ClientMetric::Label>& labels = {}) {
  for (const auto& family : families) {
    if (family.name != name || family.type != type) continue;
    for (const auto& m : family.metric) {
      if (m.label == labels) {
        return type == prometheus::MetricType::Counter ? m.counter.value : m.gauge.value;
      }
    }
  }
  return std::nullopt;
}

}  // namespace feedd::testutil
