// Unit tests of ChangeAssignment (processors/kafka_assignment.h) on a real
// librdkafka consumer that never reaches a broker: assignment changes are
// local to the consumer, so librdkafka's refusals can be provoked here.
#include "processors/kafka_assignment.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

namespace feedd {
namespace {

using PartitionList = std::unique_ptr<rd_kafka_topic_partition_list_t,
                                      decltype(&rd_kafka_topic_partition_list_destroy)>;

PartitionList Partitions(std::initializer_list<int> numbers) {
  PartitionList list(rd_kafka_topic_partition_list_new(4), &rd_kafka_topic_partition_list_destroy);
  for (int p : numbers) rd_kafka_topic_partition_list_add(list.get(), "feedd.posts", p);
  return list;
}

class KafkaAssignmentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char err[512];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    ASSERT_EQ(rd_kafka_conf_set(conf, "group.id", "feedd-assignment-test", err, sizeof(err)),
              RD_KAFKA_CONF_OK)
        << err;
    ASSERT_EQ(rd_kafka_conf_set(conf, "log_level", "0", err, sizeof(err)), RD_KAFKA_CONF_OK);
    consumer_ = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
    ASSERT_NE(consumer_, nullptr) << err;
  }
  void TearDown() override {
    if (consumer_ != nullptr) rd_kafka_destroy(consumer_);
  }

  // The consumer's assigned partition numbers, in order.
  std::vector<int> Assigned() {
    rd_kafka_topic_partition_list_t* list = nullptr;
    EXPECT_EQ(rd_kafka_assignment(consumer_, &list), RD_KAFKA_RESP_ERR_NO_ERROR);
    std::vector<int> out;
    for (int i = 0; list != nullptr && i < list->cnt; ++i) out.push_back(list->elems[i].partition);
    if (list != nullptr) rd_kafka_topic_partition_list_destroy(list);
    std::sort(out.begin(), out.end());
    return out;
  }

  rd_kafka_t* consumer_ = nullptr;
};

TEST_F(KafkaAssignmentTest, CooperativeChangesAddAndRemoveJustThosePartitions) {
  ASSERT_TRUE(
      ChangeAssignment(consumer_, true, AssignmentChange::kAssign, Partitions({0, 1}).get()).ok());
  ASSERT_TRUE(
      ChangeAssignment(consumer_, true, AssignmentChange::kAssign, Partitions({2}).get()).ok());
  EXPECT_EQ(Assigned(), (std::vector<int>{0, 1, 2}));
  ASSERT_TRUE(
      ChangeAssignment(consumer_, true, AssignmentChange::kRevoke, Partitions({1}).get()).ok());
  EXPECT_EQ(Assigned(), (std::vector<int>{0, 2}));
}

TEST_F(KafkaAssignmentTest, EagerChangesReplaceTheAssignment) {
  ASSERT_TRUE(
      ChangeAssignment(consumer_, false, AssignmentChange::kAssign, Partitions({0, 1}).get()).ok());
  ASSERT_TRUE(
      ChangeAssignment(consumer_, false, AssignmentChange::kAssign, Partitions({2}).get()).ok());
  EXPECT_EQ(Assigned(), (std::vector<int>{2}));
  ASSERT_TRUE(
      ChangeAssignment(consumer_, false, AssignmentChange::kRevoke, Partitions({2}).get()).ok());
  EXPECT_EQ(Assigned(), std::vector<int>{});
}

// What the worker used to drop: librdkafka refuses, the Status says so, and
// the assignment is unchanged.
TEST_F(KafkaAssignmentTest, ARefusedChangeIsAnErrorAndChangesNothing) {
  ASSERT_TRUE(
      ChangeAssignment(consumer_, true, AssignmentChange::kAssign, Partitions({0}).get()).ok());
  Status again =
      ChangeAssignment(consumer_, true, AssignmentChange::kAssign, Partitions({0}).get());
  EXPECT_EQ(again.code(), ErrorCode::kUnavailable) << again.ToString();
  EXPECT_NE(again.message().find("assigning 1 partition(s)"), std::string::npos) << again.message();
  Status absent =
      ChangeAssignment(consumer_, true, AssignmentChange::kRevoke, Partitions({5}).get());
  EXPECT_EQ(absent.code(), ErrorCode::kUnavailable) << absent.ToString();
  EXPECT_NE(absent.message().find("revoking"), std::string::npos) << absent.message();
  EXPECT_EQ(Assigned(), (std::vector<int>{0}));
}

}  // namespace
}  // namespace feedd
