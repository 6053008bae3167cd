#include "storage/query_cache.h"

#include <functional>

namespace feedd {

QueryCache::QueryCache(size_t capacity_bytes)
    : capacity_bytes_(capacity_bytes),
      generations_(std::make_unique<std::atomic<uint64_t>[]>(kSlots)) {}

std::string QueryCache::Key(size_t container_index, const QuerySpec& spec) {
  return std::to_string(container_index) + ":" + CanonicalQueryText(spec);
}

size_t QueryCache::SlotOf(size_t container_index, std::string_view partition_key) {
  size_t h = std::hash<std::string_view>()(partition_key);
  return (h ^ (container_index * 0x9e3779b97f4a7c15ull)) % kSlots;
}

uint64_t QueryCache::Generation(size_t container_index, std::string_view partition_key) const {
  return generations_[SlotOf(container_index, partition_key)].load(std::memory_order_acquire);
}

void QueryCache::Invalidate(size_t container_index, std::string_view partition_key) {
  generations_[SlotOf(container_index, partition_key)].fetch_add(1, std::memory_order_acq_rel);
}

std::shared_ptr<const QueryResult> QueryCache::Find(const std::string& key, size_t container_index,
                                                    std::string_view partition_key) {
  const uint64_t now = Generation(container_index, partition_key);
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = index_.find(key);
  if (it == index_.end() || it->second->generation != now) {
    if (it != index_.end()) EraseLocked(it->second);
    ++misses_;
    return nullptr;
  }
  lru_.splice(lru_.begin(), lru_, it->second);
  ++hits_;
  return it->second->result;
}

void QueryCache::Insert(std::string key, size_t container_index, std::string_view partition_key,
                        uint64_t generation, const QueryResult& result) {
  size_t bytes = key.size() + sizeof(Entry) + sizeof(QueryResult);
  for (const auto& item : result.items) bytes += item.size() + sizeof(std::string);
  if (result.continuation) bytes += result.continuation->size();
  if (bytes > capacity_bytes_ / 8) return;
  const size_t slot = SlotOf(container_index, partition_key);
  // Already outdated: a write to the partition became visible meanwhile.
  if (generations_[slot].load(std::memory_order_acquire) != generation) return;
  auto kept = std::make_shared<const QueryResult>(result);
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = index_.find(key); it != index_.end()) EraseLocked(it->second);
  while (!lru_.empty() && bytes_ + bytes > capacity_bytes_) EraseLocked(std::prev(lru_.end()));
  lru_.push_front(Entry{key, generation, bytes, std::move(kept)});
  index_.emplace(std::move(key), lru_.begin());
  bytes_ += bytes;
}

size_t QueryCache::bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return bytes_;
}

void QueryCache::EraseLocked(std::list<Entry>::iterator it) {
  bytes_ -= it->bytes;
  index_.erase(it->key);
  lru_.erase(it);
}

}  // namespace feedd
