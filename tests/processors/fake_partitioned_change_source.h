// FakePartitionedChangeSource: a PartitionedChangeSource over partition
// logs a test writes, for tests of what `feedd worker` does with its
// consumer (order, offsets it commits, rebalances) without a broker.
//
// The test keeps a FakeGroup - the "broker" and the consumer group's
// committed positions - shared by the sources of every worker of the
// group. It appends messages (their offsets are their indexes in the log),
// and asks a source to assign or revoke partitions; the source carries that
// out in its next Poll(), calling its listener as librdkafka's rebalance
// callback would: an assigned partition is then read from the group's
// committed offset (offset 0 when none). Close() revokes what the source
// still holds, as leaving a group does.
//
// Thread-safety: every method of both is thread-safe, except the
// accessors that say they are read under FakeGroup::mutex.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "processors/partitioned_change_source.h"

namespace feedd {

struct FakeGroup {
  std::mutex mutex;
  std::condition_variable changed;
  std::map<TopicPartition, std::vector<ConsumedMessage>> logs;
  std::map<TopicPartition, CommittedPosition> committed;  // the group's positions
  std::vector<CommittedPosition> commits;                 // every Commit(), in order
  std::map<std::string, int32_t> partition_counts;        // for PartitionCount()

  // Appends `message` to its partition's log; returns its offset.
  int64_t Append(ConsumedMessage message) {
    int64_t offset;
    {
      std::lock_guard<std::mutex> lock(mutex);
      auto& log = logs[message.at];
      offset = static_cast<int64_t>(log.size());
      message.offset = offset;
      log.push_back(std::move(message));
    }
    changed.notify_all();
    return offset;
  }

  // The committed position of `partition` (offset -1: none).
  CommittedPosition Committed(const TopicPartition& partition) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = committed.find(partition);
    return it == committed.end() ? CommittedPosition{partition, -1, ""} : it->second;
  }

  // Waits (up to `timeout`) until `done()` holds, under the mutex.
  bool WaitFor(const std::function<bool()>& done,
               std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    std::unique_lock<std::mutex> lock(mutex);
    return changed.wait_for(lock, timeout, done);
  }
};

class FakePartitionedChangeSource final : public PartitionedChangeSource {
 public:
  explicit FakePartitionedChangeSource(std::shared_ptr<FakeGroup> group)
      : group_(std::move(group)) {}

  // Rebalances, carried out by the next Poll().
  void Assign(std::vector<TopicPartition> partitions) {
    Queue({Rebalance::kAssign, std::move(partitions)});
  }
  void Revoke(std::vector<TopicPartition> partitions) {
    Queue({Rebalance::kRevoke, std::move(partitions)});
  }
  // An assignment the consumer refuses: OnAssignRefused(), and the
  // partitions are not read.
  void RefuseAssign(std::vector<TopicPartition> partitions) {
    Queue({Rebalance::kRefusedAssign, std::move(partitions)});
  }
  // The next Poll() reports this consumer error.
  void FailNextPoll(Status error) {
    {
      std::lock_guard<std::mutex> lock(group_->mutex);
      poll_errors_.push_back(std::move(error));
    }
    group_->changed.notify_all();
  }

  // How many rebalances this source has begun and finished (the listener
  // returned), under group->mutex (e.g. in FakeGroup::WaitFor).
  int rebalances_begun() const { return begun_; }
  int rebalances_done() const { return done_; }
  // The partitions this source holds, and the topics it subscribed to,
  // under group->mutex.
  const std::set<TopicPartition>& held() const { return held_; }
  const std::set<std::string>& subscribed() const { return topics_; }

  Status Subscribe(const std::vector<std::string>& topics, PartitionListener* listener) override {
    std::lock_guard<std::mutex> lock(group_->mutex);
    listener_ = listener;
    topics_ = std::set<std::string>(topics.begin(), topics.end());
    return Status::Ok();
  }

  Status Poll(std::chrono::milliseconds wait, std::optional<ConsumedMessage>* out) override {
    out->reset();
    std::unique_lock<std::mutex> lock(group_->mutex);
    group_->changed.wait_for(
        lock, wait, [&] { return !rebalances_.empty() || !poll_errors_.empty() || HasMessage(); });
    if (!rebalances_.empty()) {
      Rebalance rebalance = std::move(rebalances_.front());
      rebalances_.pop_front();
      ++begun_;
      group_->changed.notify_all();
      if (rebalance.kind == Rebalance::kRefusedAssign) {
        lock.unlock();
        listener_->OnAssignRefused(rebalance.partitions,
                                   Status(ErrorCode::kUnavailable, "assignment refused"));
        lock.lock();
      } else if (rebalance.kind == Rebalance::kAssign) {
        std::vector<CommittedPosition> positions;
        for (const TopicPartition& p : rebalance.partitions) {
          auto it = group_->committed.find(p);
          positions.push_back(it == group_->committed.end() ? CommittedPosition{p, -1, ""}
                                                            : it->second);
          fetch_[p] = it == group_->committed.end() ? 0 : it->second.offset;
        }
        lock.unlock();
        listener_->OnAssigned(positions, Status::Ok());
        lock.lock();
        held_.insert(rebalance.partitions.begin(), rebalance.partitions.end());
      } else {
        lock.unlock();
        listener_->OnRevoked(rebalance.partitions);
        lock.lock();
        for (const TopicPartition& p : rebalance.partitions) held_.erase(p);
      }
      ++done_;
      group_->changed.notify_all();
      return Status::Ok();
    }
    if (!poll_errors_.empty()) {
      Status error = std::move(poll_errors_.front());
      poll_errors_.pop_front();
      return error;
    }
    // One message of the next partition (in turn) that has one.
    for (size_t i = 0; i < held_.size(); ++i) {
      auto it = held_.upper_bound(last_);
      if (it == held_.end()) it = held_.begin();
      last_ = *it;
      const auto& log = group_->logs[*it];
      int64_t& next = fetch_[*it];
      if (next < static_cast<int64_t>(log.size())) {
        *out = log[next++];
        return Status::Ok();
      }
    }
    return Status::Ok();
  }

  Status Commit(const std::vector<CommittedPosition>& positions, bool sync) override {
    {
      std::lock_guard<std::mutex> lock(group_->mutex);
      for (const CommittedPosition& position : positions) {
        group_->committed[position.partition] = position;
        group_->commits.push_back(position);
      }
    }
    group_->changed.notify_all();
    return Status::Ok();
  }

  Result<int32_t> PartitionCount(const std::string& topic) override {
    std::lock_guard<std::mutex> lock(group_->mutex);
    auto it = group_->partition_counts.find(topic);
    if (it == group_->partition_counts.end()) {
      return Status(ErrorCode::kUnavailable, "no metadata for " + topic);
    }
    return it->second;
  }

  Status Close() override {
    std::vector<TopicPartition> held;
    {
      std::lock_guard<std::mutex> lock(group_->mutex);
      held.assign(held_.begin(), held_.end());
      held_.clear();
    }
    if (!held.empty()) listener_->OnRevoked(held);
    group_->changed.notify_all();
    return Status::Ok();
  }

 private:
  struct Rebalance {
    enum Kind { kAssign, kRevoke, kRefusedAssign } kind;
    std::vector<TopicPartition> partitions;
  };

  void Queue(Rebalance rebalance) {
    {
      std::lock_guard<std::mutex> lock(group_->mutex);
      rebalances_.push_back(std::move(rebalance));
    }
    group_->changed.notify_all();
  }

  // Under group_->mutex.
  bool HasMessage() {
    for (const TopicPartition& p : held_) {
      if (fetch_[p] < static_cast<int64_t>(group_->logs[p].size())) return true;
    }
    return false;
  }

  const std::shared_ptr<FakeGroup> group_;
  PartitionListener* listener_ = nullptr;
  // All GUARDED_BY(group_->mutex):
  std::set<std::string> topics_;
  std::deque<Rebalance> rebalances_;
  std::deque<Status> poll_errors_;
  std::set<TopicPartition> held_;
  std::map<TopicPartition, int64_t> fetch_;  // the next offset to deliver
  TopicPartition last_;                      // delivered from last
  int begun_ = 0, done_ = 0;
};

}  // namespace feedd
