#include "processors/kafka_assignment.h"

#include <string>

namespace feedd {

Status ChangeAssignment(rd_kafka_t* consumer, bool cooperative, AssignmentChange change,
                        const rd_kafka_topic_partition_list_t* partitions) {
  const bool assign = change == AssignmentChange::kAssign;
  const char* what = assign ? "assigning" : "revoking";
  if (cooperative) {
    rd_kafka_error_t* error = assign ? rd_kafka_incremental_assign(consumer, partitions)
                                     : rd_kafka_incremental_unassign(consumer, partitions);
    if (error == nullptr) return Status::Ok();
    Status s(ErrorCode::kUnavailable,
             std::string(what) + " " + std::to_string(partitions->cnt) +
                 " partition(s) incrementally: " + rd_kafka_error_string(error));
    rd_kafka_error_destroy(error);
    return s;
  }
  rd_kafka_resp_err_t err = rd_kafka_assign(consumer, assign ? partitions : nullptr);
  if (err == RD_KAFKA_RESP_ERR_NO_ERROR) return Status::Ok();
  return Status(ErrorCode::kUnavailable, std::string(what) + " " + std::to_string(partitions->cnt) +
                                             " partition(s): " + rd_kafka_err2str(err));
}

}  // namespace feedd
