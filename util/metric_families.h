// Families: builds the prometheus::MetricFamily list that a Collectable
// returns at scrape time, one sample at a time. Header-only: a module that
// uses it links prometheus-cpp::core itself (the modules' probes do).
//
// Thread-safety: one instance per Collect() call.
#pragma once

#include <prometheus/client_metric.h>
#include <prometheus/metric_family.h>

#include <string>
#include <vector>

namespace feedd::metrics {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

class Families {
 public:
  // Adds one sample to the family `name` (created on first use).
  void Add(const std::string& name, const std::string& help, MetricType type, double value,
           std::vector<ClientMetric::Label> labels = {}) {
    MetricFamily* family = nullptr;
    for (auto& f : families_) {
      if (f.name == name) family = &f;
    }
    if (family == nullptr) {
      families_.push_back(MetricFamily{name, help, type, {}});
      family = &families_.back();
    }
    ClientMetric m;
    m.label = std::move(labels);
    if (type == MetricType::Counter) {
      m.counter.value = value;
    } else {
      m.gauge.value = value;
    }
    family->metric.push_back(std::move(m));
  }
  void Gauge(const std::string& name, const std::string& help, double value,
             std::vector<ClientMetric::Label> labels = {}) {
    Add(name, help, MetricType::Gauge, value, std::move(labels));
  }
  void Counter(const std::string& name, const std::string& help, double value,
               std::vector<ClientMetric::Label> labels = {}) {
    Add(name, help, MetricType::Counter, value, std::move(labels));
  }
  std::vector<MetricFamily> Take() { return std::move(families_); }

 private:
  std::vector<MetricFamily> families_;
};

}  // namespace feedd::metrics
