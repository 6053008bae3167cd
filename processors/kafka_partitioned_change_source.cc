#include "processors/kafka_partitioned_change_source.h"

#include <librdkafka/rdkafka.h>

#include <cstring>
#include <memory>
#include <utility>

#include "feed/kafka_conf.h"
#include "feed/message_headers.h"
#include "processors/kafka_assignment.h"

namespace feedd {
namespace {

constexpr int kCommittedTimeoutMs = 10000;
constexpr int kMetadataTimeoutMs = 10000;

using PartitionList = std::unique_ptr<rd_kafka_topic_partition_list_t,
                                      decltype(&rd_kafka_topic_partition_list_destroy)>;

PartitionList NewPartitionList(int size) {
  return PartitionList(rd_kafka_topic_partition_list_new(size),
                       &rd_kafka_topic_partition_list_destroy);
}

std::vector<TopicPartition> PartitionsOf(const rd_kafka_topic_partition_list_t* list) {
  std::vector<TopicPartition> partitions;
  partitions.reserve(list->cnt);
  for (int i = 0; i < list->cnt; ++i) {
    partitions.push_back({list->elems[i].topic, list->elems[i].partition});
  }
  return partitions;
}

class KafkaPartitionedChangeSource final : public PartitionedChangeSource {
 public:
  KafkaPartitionedChangeSource(KafkaConsumerConfig config, std::string group_id,
                               std::string client_id)
      : config_(std::move(config)),
        group_id_(std::move(group_id)),
        client_id_(std::move(client_id)) {}
  ~KafkaPartitionedChangeSource() override { (void)Close(); }
  KafkaPartitionedChangeSource(const KafkaPartitionedChangeSource&) = delete;
  KafkaPartitionedChangeSource& operator=(const KafkaPartitionedChangeSource&) = delete;

  Status Subscribe(const std::vector<std::string>& topics, PartitionListener* listener) override {
    std::map<std::string, std::string> props = {
        {"bootstrap.servers", config_.bootstrap},
        {"group.id", group_id_},
        {"client.id", client_id_},
        {"enable.auto.commit", "false"},
        // What retention dropped shows as a gap in the offsets (the
        // listener catches up from elsewhere).
        {"auto.offset.reset", "earliest"},
        {"fetch.wait.max.ms", "5"},
        {"log_level", "3"},
    };
    for (const auto& [k, v] : config_.properties) props[k] = v;
    Result<KafkaConfPtr> conf = NewKafkaConf(props);
    if (!conf.ok()) return conf.status();
    listener_ = listener;
    rd_kafka_conf_set_opaque(conf->get(), this);
    rd_kafka_conf_set_rebalance_cb(conf->get(), &RebalanceCallback);
    rd_kafka_conf_set_offset_commit_cb(conf->get(), &CommitCallback);
    Result<rd_kafka_t*> consumer =
        NewKafkaClient(RD_KAFKA_CONSUMER, std::move(*conf), "kafka consumer");
    if (!consumer.ok()) return consumer.status();
    consumer_ = *consumer;
    rd_kafka_resp_err_t e = rd_kafka_poll_set_consumer(consumer_);
    if (e == RD_KAFKA_RESP_ERR_NO_ERROR) {
      PartitionList list = NewPartitionList(static_cast<int>(topics.size()));
      for (const std::string& topic : topics) {
        rd_kafka_topic_partition_list_add(list.get(), topic.c_str(), RD_KAFKA_PARTITION_UA);
      }
      e = rd_kafka_subscribe(consumer_, list.get());
    }
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
      rd_kafka_destroy(consumer_);
      consumer_ = nullptr;
      return Status(ErrorCode::kUnavailable,
                    std::string("kafka subscribe: ") + rd_kafka_err2str(e));
    }
    return Status::Ok();
  }

  Status Poll(std::chrono::milliseconds wait, std::optional<ConsumedMessage>* out) override {
    out->reset();
    if (!commit_failure_.empty()) {
      Status failed(ErrorCode::kUnavailable, std::move(commit_failure_));
      commit_failure_.clear();
      return failed;
    }
    rd_kafka_message_t* m = rd_kafka_consumer_poll(consumer_, static_cast<int>(wait.count()));
    if (m == nullptr) return Status::Ok();
    std::unique_ptr<rd_kafka_message_t, decltype(&rd_kafka_message_destroy)> owned(
        m, &rd_kafka_message_destroy);
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) return Status::Ok();
    if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      return Status(ErrorCode::kUnavailable, rd_kafka_message_errstr(m));
    }
    ConsumedMessage& message = out->emplace();
    message.at = {rd_kafka_topic_name(m->rkt), m->partition};
    message.offset = m->offset;
    if (m->payload != nullptr)
      message.payload.emplace(static_cast<const char*>(m->payload), m->len);
    message.lsn = LsnHeader(m);
    message.resolved = ResolvedHeader(m);
    message.container = HeaderValue(m, "feedd-container");
    message.id = HeaderValue(m, "feedd-id");
    message.op = HeaderValue(m, "feedd-op");
    message.partition_key = PartitionKeyOf(m);
    return Status::Ok();
  }

  Status Commit(const std::vector<CommittedPosition>& positions, bool sync) override {
    if (positions.empty()) return Status::Ok();
    PartitionList list = NewPartitionList(static_cast<int>(positions.size()));
    for (const CommittedPosition& position : positions) {
      rd_kafka_topic_partition_t* p = rd_kafka_topic_partition_list_add(
          list.get(), position.partition.topic.c_str(), position.partition.partition);
      p->offset = position.offset;
      // Freed with the list.
      p->metadata = strdup(position.metadata.c_str());
      if (p->metadata == nullptr) return Status(ErrorCode::kInternal, "out of memory");
      p->metadata_size = position.metadata.size();
    }
    rd_kafka_resp_err_t e = rd_kafka_commit(consumer_, list.get(), sync ? 0 : 1);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR && e != RD_KAFKA_RESP_ERR__NO_OFFSET) {
      return Status(ErrorCode::kUnavailable,
                    std::string("committing offsets: ") + rd_kafka_err2str(e));
    }
    return Status::Ok();
  }

  Result<int32_t> PartitionCount(const std::string& topic) override {
    rd_kafka_topic_t* rkt = rd_kafka_topic_new(consumer_, topic.c_str(), nullptr);
    if (rkt == nullptr) {
      return Status(ErrorCode::kUnavailable,
                    "no metadata for " + topic + ": " + rd_kafka_err2str(rd_kafka_last_error()));
    }
    const rd_kafka_metadata_t* metadata = nullptr;
    rd_kafka_resp_err_t e = rd_kafka_metadata(consumer_, 0, rkt, &metadata, kMetadataTimeoutMs);
    rd_kafka_topic_destroy(rkt);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
      return Status(ErrorCode::kUnavailable,
                    "no metadata for " + topic + ": " + rd_kafka_err2str(e));
    }
    int32_t count = 0;
    if (metadata->topic_cnt == 1 && metadata->topics[0].err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      count = metadata->topics[0].partition_cnt;
    }
    rd_kafka_metadata_destroy(metadata);
    if (count <= 0) return Status(ErrorCode::kUnavailable, "no metadata for " + topic);
    return count;
  }

  Status Close() override {
    if (consumer_ == nullptr) return Status::Ok();
    rd_kafka_resp_err_t e = rd_kafka_consumer_close(consumer_);
    rd_kafka_destroy(consumer_);
    consumer_ = nullptr;
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
      return Status(ErrorCode::kUnavailable,
                    std::string("leaving the consumer group: ") + rd_kafka_err2str(e));
    }
    return Status::Ok();
  }

 private:
  static void RebalanceCallback(rd_kafka_t* rk, rd_kafka_resp_err_t err,
                                rd_kafka_topic_partition_list_t* partitions, void* opaque) {
    auto* self = static_cast<KafkaPartitionedChangeSource*>(opaque);
    const char* protocol = rd_kafka_rebalance_protocol(rk);  // NULL on error: eager
    const bool cooperative = protocol != nullptr && std::strcmp(protocol, "COOPERATIVE") == 0;
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
      self->Assign(partitions, cooperative);
    } else {
      self->Revoke(partitions, cooperative);  // revoked, or lost
    }
  }

  // The result of a commit, served inside Poll() (an asynchronous one's
  // only report); the failure is returned by the next Poll().
  static void CommitCallback(rd_kafka_t* rk, rd_kafka_resp_err_t err,
                             rd_kafka_topic_partition_list_t* offsets, void* opaque) {
    auto* self = static_cast<KafkaPartitionedChangeSource*>(opaque);
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR && offsets != nullptr) {
      for (int i = 0; i < offsets->cnt && err == RD_KAFKA_RESP_ERR_NO_ERROR; ++i) {
        err = offsets->elems[i].err;
      }
    }
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR || err == RD_KAFKA_RESP_ERR__NO_OFFSET) return;
    self->commit_failure_ = std::string("committing offsets: ") + rd_kafka_err2str(err);
  }

  void Assign(const rd_kafka_topic_partition_list_t* partitions, bool cooperative) {
    // Where this group stands: the committed offsets and their metadata.
    PartitionList committed(rd_kafka_topic_partition_list_copy(partitions),
                            &rd_kafka_topic_partition_list_destroy);
    rd_kafka_resp_err_t e = rd_kafka_committed(consumer_, committed.get(), kCommittedTimeoutMs);
    Status read = Status::Ok();
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
      read = Status(ErrorCode::kUnavailable,
                    std::string("reading committed offsets: ") + rd_kafka_err2str(e));
    }
    std::vector<CommittedPosition> positions;
    positions.reserve(committed->cnt);
    for (int i = 0; i < committed->cnt; ++i) {
      const rd_kafka_topic_partition_t& c = committed->elems[i];
      CommittedPosition& position = positions.emplace_back();
      position.partition = {c.topic, c.partition};
      if (e == RD_KAFKA_RESP_ERR_NO_ERROR && c.err == RD_KAFKA_RESP_ERR_NO_ERROR && c.offset >= 0) {
        position.offset = c.offset;
        if (c.metadata != nullptr) {
          position.metadata.assign(static_cast<const char*>(c.metadata), c.metadata_size);
        }
      }
    }
    Status assigned =
        ChangeAssignment(consumer_, cooperative, AssignmentChange::kAssign, partitions);
    if (!assigned.ok()) {
      listener_->OnAssignRefused(PartitionsOf(partitions), assigned);
      return;
    }
    listener_->OnAssigned(positions, read);
  }

  void Revoke(const rd_kafka_topic_partition_list_t* partitions, bool cooperative) {
    const std::vector<TopicPartition> revoked = PartitionsOf(partitions);
    listener_->OnRevoked(revoked);
    Status s = ChangeAssignment(consumer_, cooperative, AssignmentChange::kRevoke, partitions);
    if (!s.ok()) listener_->OnRevokeRefused(revoked, s);
  }

  const KafkaConsumerConfig config_;
  const std::string group_id_, client_id_;
  PartitionListener* listener_ = nullptr;
  rd_kafka_t* consumer_ = nullptr;
  std::string commit_failure_;  // the polling thread's
};

}  // namespace

std::unique_ptr<PartitionedChangeSource> NewKafkaPartitionedChangeSource(KafkaConsumerConfig config,
                                                                         std::string group_id,
                                                                         std::string client_id) {
  return std::make_unique<KafkaPartitionedChangeSource>(std::move(config), std::move(group_id),
                                                        std::move(client_id));
}

}  // namespace feedd
