#include "daemon/metrics_server.h"

namespace feedd {
namespace {

const prometheus::Histogram::BucketBoundaries kGroupSizes = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512};
const prometheus::Histogram::BucketBoundaries kCommitSeconds = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1};
// Fine between 10 and 100 ms, where the lag goal (p99 <= 50 ms) is judged:
// a quantile is interpolated inside its bucket, so coarse buckets there
// would report any p99 between 50 and 100 ms as about 90 ms.
const prometheus::Histogram::BucketBoundaries kViewSeconds = {
    0.001, 0.0025, 0.005, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.06,
    0.075, 0.1,    0.15,  0.25, 0.5,   1,    2.5,   5,    10,   30};

}  // namespace

MetricsServer::MetricsServer()
    : registry_(std::make_shared<prometheus::Registry>()),
      group_requests_(prometheus::BuildHistogram()
                          .Name("feedd_storage_commit_group_requests")
                          .Help("Write requests per group commit (one WriteBatch, one fsync)")
                          .Register(*registry_)
                          .Add({}, kGroupSizes)),
      commit_seconds_(prometheus::BuildHistogram()
                          .Name("feedd_storage_commit_duration_seconds")
                          .Help("RocksDB write (and fsync when storage.sync) of one group")
                          .Register(*registry_)
                          .Add({}, kCommitSeconds)),
      view_seconds_(prometheus::BuildHistogram()
                        .Name("feedd_processor_commit_to_view_seconds")
                        .Help("From a change's commit to its view writes committed")
                        .Register(*registry_)) {}

MetricsServer::~MetricsServer() = default;

std::function<void(size_t, double)> MetricsServer::GroupCommitObserver() {
  return [this](size_t requests, double seconds) {
    group_requests_.Observe(static_cast<double>(requests));
    commit_seconds_.Observe(seconds);
  };
}

std::function<void(const std::string&, double)> MetricsServer::ViewCommitObserver() {
  return [this](const std::string& processor, double seconds) {
    view_seconds_.Add({{"processor", processor}}, kViewSeconds).Observe(seconds);
  };
}

Result<std::string> MetricsServer::Start(const HostPort& listen,
                                         std::shared_ptr<prometheus::Collectable> state) {
  try {
    exposer_ = std::make_unique<prometheus::Exposer>(listen.ToString(), 2);
  } catch (const std::exception& e) {
    return Status(ErrorCode::kUnavailable,
                  "cannot serve metrics on " + listen.ToString() + ": " + e.what());
  }
  exposer_->RegisterCollectable(registry_);
  exposer_->RegisterCollectable(state);
  std::vector<int> ports = exposer_->GetListeningPorts();
  HostPort bound = listen;
  if (!ports.empty()) bound.port = static_cast<uint16_t>(ports.front());
  return bound.ToString();
}

}  // namespace feedd
