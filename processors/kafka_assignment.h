// ChangeAssignment: hands a consumer-group rebalance's partitions to a
// librdkafka consumer, the way the group's protocol wants it -
// incrementally (COOPERATIVE: add or remove just these partitions) or whole
// (EAGER: the assignment becomes these partitions, or nothing) - and
// reports librdkafka's refusal as a Status instead of dropping it. A refused
// change leaves the assignment as it was: refused partitions are not
// fetched (or, refused revocations, still are).
//
// Thread-safety: call from the consumer's rebalance callback (or any thread
// librdkafka allows assignment changes from).
// Ownership: borrows the consumer and the list.
#pragma once

#include <librdkafka/rdkafka.h>

#include "util/status.h"

namespace feedd {

enum class AssignmentChange { kAssign, kRevoke };

// `unavailable` naming librdkafka's error when it refuses.
Status ChangeAssignment(rd_kafka_t* consumer, bool cooperative, AssignmentChange change,
                        const rd_kafka_topic_partition_list_t* partitions);

}  // namespace feedd
