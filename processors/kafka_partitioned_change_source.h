// NewKafkaPartitionedChangeSource: the PartitionedChangeSource of `feedd
// worker`, a librdkafka consumer in a consumer group.
//
// Operation
//   Subscribe() creates the consumer (offsets committed only by Commit(),
//   a new group starting at the earliest offset, feedd's defaults under the
//   user's kafka.* properties) and subscribes. Rebalances run in librdkafka's
//   rebalance callback inside Poll(): an assignment reads the group's
//   committed positions, takes the partitions (incrementally under the
//   COOPERATIVE protocol) and then calls OnAssigned(); a revocation calls
//   OnRevoked() and then gives them back. Every librdkafka refusal is
//   reported, never dropped.
//
// Thread-safety: as PartitionedChangeSource.
// Ownership: the source owns the consumer; its destructor Close()s it, when
// the owner did not.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "processors/partitioned_change_source.h"

namespace feedd {

// The worker's Kafka consumer.
struct KafkaConsumerConfig {
  std::string bootstrap;
  std::string topic_prefix = "feedd.";
  std::map<std::string, std::string> properties;  // kafka.<property> pass-through
};

// Creates nothing yet: Subscribe() does. Kafka's group is `group_id`, the
// consumer names itself `client_id`.
std::unique_ptr<PartitionedChangeSource> NewKafkaPartitionedChangeSource(KafkaConsumerConfig config,
                                                                         std::string group_id,
                                                                         std::string client_id);

}  // namespace feedd
