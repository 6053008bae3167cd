// ReadPublishedLsns: the LSNs (feedd-lsn header) above a checkpoint found in
// the tail of every partition of the given topics, and the highest resolved
// marker there (feedd-resolved header), read with a short-lived consumer (no
// consumer group, nothing committed). The publisher uses it on start to skip
// exactly the changes a previous run delivered after its last checkpoint, so
// a crash between delivery and checkpoint republishes nothing the broker
// still holds, and to keep its resolved markers above the earlier ones.
//
// Thread-safety: free function; creates and destroys its own client.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "util/status.h"

namespace feedd {

struct PublishedTail {
  std::set<uint64_t> lsns;  // feedd-lsn above the checkpoint
  uint64_t resolved = 0;    // the highest feedd-resolved, 0 when none was read
};

// `partitions`: topic -> partition count. `properties`: librdkafka settings
// (bootstrap.servers, security, ...). At most `max_per_partition` messages
// are read from the end of each partition: the publisher never has more
// than that many messages beyond its checkpoint.
Result<PublishedTail> ReadPublishedLsns(const std::map<std::string, std::string>& properties,
                                        const std::map<std::string, int>& partitions,
                                        uint64_t after_lsn, int64_t max_per_partition,
                                        std::chrono::milliseconds timeout);

}  // namespace feedd
