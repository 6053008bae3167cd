#include "processors/keyed_applier.h"

#include <algorithm>
#include <cstdint>

#include "util/logging.h"
#include "util/thread_name.h"

namespace feedd {

KeyedApplier::KeyedApplier(const ProcessorKind* kind, Options options, ApplyFn apply, DoneFn done,
                           ErrorFn on_error, ApplyBatchFn apply_batch)
    : kind_(kind),
      options_(std::move(options)),
      apply_(std::move(apply)),
      done_(std::move(done)),
      on_error_(std::move(on_error)),
      apply_batch_(std::move(apply_batch)),
      max_batch_(apply_batch_ ? std::max<size_t>(1, kind->MaxBatch()) : 1) {}

KeyedApplier::~KeyedApplier() { Stop(); }

void KeyedApplier::Start() {
  stopping_ = false;
  workers_.clear();
  routes_.clear();
  size_t n = options_.parallelism == 0 ? 1 : options_.parallelism;
  for (size_t i = 0; i < n; ++i) workers_.push_back(std::make_unique<Worker>());
  for (size_t i = 0; i < n; ++i) {
    workers_[i]->thread = std::thread([this, i] {
      SetThreadName("ap-" + std::to_string(i) + "-" + options_.name);
      WorkerLoop(i);
    });
  }
}

void KeyedApplier::Stop() {
  stopping_ = true;
  for (auto& w : workers_) {
    { std::lock_guard<std::mutex> lock(w->mutex); }
    w->wake.notify_all();
    if (w->thread.joinable()) w->thread.join();
  }
  workers_.clear();
}

size_t KeyedApplier::ChooseWorkerLocked() const {
  size_t least = 0;
  for (size_t i = 1; i < workers_.size(); ++i) {
    if (workers_[i]->load < workers_[least]->load) least = i;
  }
  return least;
}

size_t KeyedApplier::RouteLocked(const std::string& key, size_t* fresh, size_t* fresh_given) {
  auto [it, added] = routes_.try_emplace(key);
  Route& route = it->second;
  if (added) {
    if (*fresh == SIZE_MAX || *fresh_given == max_batch_) {
      *fresh = ChooseWorkerLocked();
      *fresh_given = 0;
    }
    route.worker = *fresh;
    ++*fresh_given;
  }
  ++route.unfinished;
  ++workers_[route.worker]->load;
  return route.worker;
}

void KeyedApplier::Finished(size_t worker, const std::vector<std::string>& keys) {
  std::lock_guard<std::mutex> lock(route_mutex_);
  for (const std::string& key : keys) {
    auto it = routes_.find(key);
    if (it != routes_.end() && --it->second.unfinished == 0) routes_.erase(it);
  }
  workers_[worker]->load -= keys.size();
}

void KeyedApplier::Dispatch(Change change) {
  std::vector<Change> one;
  one.push_back(std::move(change));
  Dispatch(std::move(one));
}

void KeyedApplier::Dispatch(std::vector<Change> changes) {
  if (workers_.empty() || changes.empty()) return;
  std::vector<std::vector<Routed>> by_worker(workers_.size());
  std::lock_guard<std::mutex> route_lock(route_mutex_);
  size_t fresh = SIZE_MAX, fresh_given = 0;
  for (Change& change : changes) {
    std::string key = kind_->OrderingKey(change);
    const size_t worker = RouteLocked(key, &fresh, &fresh_given);
    by_worker[worker].push_back({std::move(key), std::move(change)});
  }
  for (size_t i = 0; i < workers_.size(); ++i) {
    if (by_worker[i].empty()) continue;
    Worker* w = workers_[i].get();
    {
      std::lock_guard<std::mutex> lock(w->mutex);
      for (Routed& routed : by_worker[i]) w->queue.push_back(std::move(routed));
    }
    w->wake.notify_one();
  }
}

void KeyedApplier::WorkerLoop(size_t index) {
  Worker* w = workers_[index].get();
  for (;;) {
    std::vector<std::string> keys;
    std::vector<Change> batch;
    {
      std::unique_lock<std::mutex> lock(w->mutex);
      // Stop() and every Dispatch() notify: an idle thread sleeps.
      w->wake.wait(lock, [&] { return stopping_.load() || !w->queue.empty(); });
      if (stopping_) return;
      // The changes queued at the front, whatever their keys.
      while (batch.size() < max_batch_ && !w->queue.empty()) {
        keys.push_back(std::move(w->queue.front().key));
        batch.push_back(std::move(w->queue.front().change));
        w->queue.pop_front();
      }
    }
    ApplyBatchOrEach(keys, std::move(batch));
    Finished(index, keys);
  }
}

void KeyedApplier::ApplyOrPark(const std::string& key, Change change) {
  if (ParkIfKeyParked(key, change)) return;
  std::string error;
  if (ApplyWithRetries(change, &error)) {
    done_(change);
  } else if (!stopping_) {
    ParkWithKey(key, std::move(change), error);
  }
}

void KeyedApplier::ApplyBatchOrEach(const std::vector<std::string>& all_keys,
                                    std::vector<Change> batch) {
  std::vector<const std::string*> keys;
  keys.reserve(batch.size());
  for (const std::string& key : all_keys) keys.push_back(&key);
  if (batch.size() > 1) {
    // Changes of parked keys join their keys' parked lists, in order; the
    // others close up in place.
    size_t runnable = 0;
    for (size_t i = 0; i < batch.size(); ++i) {
      if (ParkIfKeyParked(*keys[i], batch[i])) continue;
      if (runnable != i) {
        keys[runnable] = keys[i];
        batch[runnable] = std::move(batch[i]);
      }
      ++runnable;
    }
    keys.resize(runnable);
    batch.resize(runnable);
  }
  if (batch.size() > 1) {
    Status s = apply_batch_(batch);
    if (s.ok()) {
      ++batches_;
      for (const Change& change : batch) done_(change);
      return;
    }
    FEEDD_LOG(kWarning, "processor")
        << options_.name << ": a batch of " << batch.size() << " changes (LSN " << batch.front().lsn
        << " to " << batch.back().lsn << ") failed; applying them one at a time: " << s.ToString();
  }
  // One by one: ApplyOrPark() checks each key again, since a change that
  // parks here must take the later changes of its key with it.
  for (size_t i = 0; i < batch.size(); ++i) {
    if (stopping_) return;
    ApplyOrPark(*keys[i], std::move(batch[i]));
  }
}

bool KeyedApplier::ApplyWithRetries(const Change& change, std::string* error) {
  constexpr std::chrono::milliseconds kMaxTransientBackoff(5000);
  auto backoff = options_.retry_backoff;
  for (int attempt = 1; attempt <= options_.max_attempts && !stopping_; ++attempt) {
    Status s = apply_(change);
    if (s.ok()) return true;
    ++errors_;
    *error = s.ToString();
    const bool transient = options_.transient && options_.transient(s);
    on_error_("LSN " + std::to_string(change.lsn) + " (" + change.container + "/" + change.id +
              "), " + (transient ? "retrying" : "attempt " + std::to_string(attempt)) + ": " +
              *error);
    if (options_.permanent && options_.permanent(s)) return false;
    if (transient) {
      --attempt;
      std::this_thread::sleep_for(backoff);
      backoff = std::min(backoff * 2, kMaxTransientBackoff);
    } else if (attempt < options_.max_attempts) {
      std::this_thread::sleep_for(backoff);
      backoff *= 2;
    }
  }
  return false;
}

bool KeyedApplier::ParkIfKeyParked(const std::string& key, Change& change) {
  std::lock_guard<std::mutex> lock(park_mutex_);
  auto it = parked_.find(key);
  if (it == parked_.end()) return false;
  ReportParked(change, "");
  it->second.push_back({std::move(change), ""});
  ++parked_count_;
  ++parked_total_;
  return true;
}

void KeyedApplier::Park(Change change, const std::string& error) {
  std::string key = kind_->OrderingKey(change);
  ParkWithKey(key, std::move(change), error);
}

void KeyedApplier::Restore(Change change, const std::string& error) {
  std::string key = kind_->OrderingKey(change);
  std::lock_guard<std::mutex> lock(park_mutex_);
  parked_[key].push_back({std::move(change), error});
  ++parked_count_;
}

void KeyedApplier::ParkWithKey(const std::string& key, Change change, const std::string& error) {
  FEEDD_LOG(kError, "processor") << options_.name << ": parked LSN " << change.lsn << " ("
                                 << change.container << "/" << change.id
                                 << ") and later changes of key '" << key << "': " << error;
  std::lock_guard<std::mutex> lock(park_mutex_);
  ReportParked(change, error);
  parked_[key].push_back({std::move(change), error});
  ++parked_count_;
  ++parked_total_;
}

void KeyedApplier::ReportParked(const Change& change, const std::string& error) {
  if (options_.on_parked) options_.on_parked(change, error);
}

std::vector<ParkedChange> KeyedApplier::Parked() const {
  std::lock_guard<std::mutex> lock(park_mutex_);
  std::vector<ParkedChange> out;
  for (const auto& [key, list] : parked_) {
    for (const auto& p : list) {
      out.push_back(
          {key, p.change.lsn, p.change.container, p.change.partition_key, p.change.id, p.error});
    }
  }
  return out;
}

size_t KeyedApplier::ReplayParked() {
  std::map<std::string, std::deque<ParkedEntry>> parked;
  {
    std::lock_guard<std::mutex> lock(park_mutex_);
    parked.swap(parked_);
    parked_count_ = 0;
  }
  // To the front of their threads' queues, in order and at once: later
  // changes of the same keys may be queued already (their routes say
  // where) and must not overtake.
  std::vector<std::vector<Routed>> by_worker(workers_.size());
  size_t n = 0;
  std::lock_guard<std::mutex> route_lock(route_mutex_);
  size_t fresh = SIZE_MAX, fresh_given = 0;
  for (auto& [key, list] : parked) {
    for (auto& p : list) {
      if (workers_.empty()) break;
      by_worker[RouteLocked(key, &fresh, &fresh_given)].push_back({key, std::move(p.change)});
      ++n;
    }
  }
  for (size_t i = 0; i < by_worker.size(); ++i) {
    if (by_worker[i].empty()) continue;
    Worker* w = workers_[i].get();
    {
      std::lock_guard<std::mutex> lock(w->mutex);
      w->queue.insert(w->queue.begin(), std::make_move_iterator(by_worker[i].begin()),
                      std::make_move_iterator(by_worker[i].end()));
    }
    w->wake.notify_one();
  }
  if (n > 0) {
    FEEDD_LOG(kInfo, "processor") << options_.name << ": replaying " << n << " parked changes";
  }
  return n;
}

void KeyedApplier::ClearParked() {
  std::lock_guard<std::mutex> lock(park_mutex_);
  parked_.clear();
  parked_count_ = 0;
}

}  // namespace feedd
