#include "processors/view_read_memo.h"

#include <unordered_set>

#include "util/json_memory.h"

namespace feedd {

ViewReadMemo::Items ViewReadMemo::Find(const std::string& key, uint64_t generation) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = index_.find(key);
  if (it == index_.end() || it->second->generation != generation) {
    if (it != index_.end()) EraseLocked(it->second);  // outdated for good
    ++misses_;
    return nullptr;
  }
  entries_.splice(entries_.begin(), entries_, it->second);
  ++hits_;
  return it->second->items;
}

void ViewReadMemo::Keep(const std::string& key, uint64_t generation, Items items) {
  Items previous;  // a query's last answer (a point read's is one item: measured anew)
  size_t previous_bytes = 0;
  if (items != nullptr && items->size() > 1) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = index_.find(key); it != index_.end()) {
      previous = it->second->items;
      previous_bytes = it->second->bytes;
    }
  }
  // Measured outside the lock: `previous` and its bytes were taken
  // together, so the entry may change meanwhile.
  size_t bytes = 0;
  if (items != nullptr && items->size() <= limits_.max_items) {
    bytes = previous != nullptr ? EntryBytes(*items, *previous, previous_bytes)
                                : EntryBytes(key, *items);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = index_.find(key); it != index_.end()) EraseLocked(it->second);
  if (bytes == 0 || bytes > limits_.max_bytes) return;
  while (!entries_.empty() && bytes_.load() + bytes > limits_.max_bytes) {
    EraseLocked(std::prev(entries_.end()));
  }
  entries_.push_front(Entry{key, generation, std::move(items), bytes});
  index_.emplace(key, entries_.begin());
  bytes_ += bytes;
}

size_t ViewReadMemo::EntryBytes(const std::string& key, const std::vector<Item>& items) {
  // The key twice (list and index), the list and hash nodes, the answer.
  size_t bytes = 2 * key.size() + sizeof(Entry) + 64 + sizeof(std::vector<Item>) + 32;
  for (const Item& item : items) bytes += ItemBytes(item);
  return bytes;
}

size_t ViewReadMemo::EntryBytes(const std::vector<Item>& items, const std::vector<Item>& previous,
                                size_t previous_bytes) {
  std::unordered_set<const boost::json::object*> gone;
  gone.reserve(previous.size());
  for (const Item& item : previous) gone.insert(item.get());
  size_t bytes = previous_bytes;
  for (const Item& item : items) {
    if (gone.erase(item.get()) == 0) bytes += ItemBytes(item);  // new in `items`
  }
  for (const Item& item : previous) {
    if (gone.count(item.get()) != 0) bytes -= ItemBytes(item);  // not in `items`
  }
  return bytes;
}

size_t ViewReadMemo::ItemBytes(const Item& item) {
  // The item with its shared_ptr's control block.
  return sizeof(Item) + 32 + ApproximateJsonBytes(*item);
}

void ViewReadMemo::Erase(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = index_.find(key); it != index_.end()) EraseLocked(it->second);
}

void ViewReadMemo::EraseLocked(std::list<Entry>::iterator it) {
  bytes_ -= it->bytes;
  index_.erase(it->key);
  entries_.erase(it);
}

}  // namespace feedd
