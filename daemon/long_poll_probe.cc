#include "daemon/long_poll_probe.h"

namespace feedd {

LongPollProbe::LongPollProbe(prometheus::Registry& registry)
    : waiting_(prometheus::BuildGauge()
                   .Name("feedd_feed_long_polls_waiting")
                   .Help("GET /v1/changefeed long polls parked, waiting for a change")
                   .Register(registry)
                   .Add({})) {}

}  // namespace feedd
