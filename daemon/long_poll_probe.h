// LongPollProbe: the change feed's long-poll gauge of docs/metrics.md
// (feedd_feed_long_polls_waiting): GET /v1/changefeed long polls parked
// now, set by the API router's feed handlers (ApiRouter::Options::
// polls_waiting).
//
// Thread-safety: the gauge may be set from any thread.
// Ownership: registers its family in the registry, which must outlive the
// probe; the probe must outlive the router.
#pragma once

#include <prometheus/gauge.h>
#include <prometheus/registry.h>

namespace feedd {

class LongPollProbe {
 public:
  explicit LongPollProbe(prometheus::Registry& registry);

  // For ApiRouter::Options::polls_waiting.
  prometheus::Gauge* waiting() { return &waiting_; }

 private:
  prometheus::Gauge& waiting_;
};

}  // namespace feedd
