#include "storage/query_cache.h"

#include <algorithm>
#include <functional>

#include "storage/query_continuation.h"
#include "storage/query_row_reader.h"
#include "storage/query_semantics.h"

namespace feedd {

// Every item of one partition a query selects, in the query's order.
class QueryCache::CurrentAnswer {
 public:
  // Whether `result` (of `spec`, with `rows`) holds every item its query
  // selects, so that the changes of its partition can be taken in. An
  // unordered query with filters cannot be kept: whether its page has a
  // continuation depends on the items after it that the filters reject.
  static bool CanKeep(const QuerySpec& spec, const QueryResult& result,
                      const std::vector<QueryRow>& rows) {
    return spec.continuation.empty() && !result.continuation && !result.cut_by_bytes &&
           (spec.order_by || spec.filters.empty()) && rows.size() == result.items.size();
  }

  CurrentAnswer(const QuerySpec& spec, size_t container_index, const QueryResult& result,
                std::vector<QueryRow> rows)
      : spec_(spec), reader_(spec_), container_index_(container_index), cost_(result.cost) {
    rows_.reserve(rows.size());
    for (size_t i = 0; i < rows.size(); ++i) {
      rows_bytes_ += RowBytes(rows[i].row_key, result.items[i]);
      rows_.push_back(QueryRowItem{std::move(rows[i]), result.items[i]});
    }
  }

  bool Of(size_t container_index, std::string_view partition_key) const {
    return container_index == container_index_ && partition_key == *spec_.partition_key;
  }

  // Takes in the new version of the item `row_key` (nullopt: deleted).
  // False when the answer can no longer be kept current: the version is not
  // readable, the rows grew past twice the limit, or the page is over its
  // bytes.
  bool Take(const std::string& row_key, std::optional<std::string_view> version) {
    auto old = std::find_if(rows_.begin(), rows_.end(),
                            [&](const QueryRowItem& r) { return r.row.row_key == row_key; });
    if (old != rows_.end()) {
      rows_bytes_ -= RowBytes(old->row.row_key, old->json);
      rows_.erase(old);
    }
    if (!version) return true;
    const boost::json::value* sort_value = nullptr;
    switch (reader_.Read(*version, &sort_value)) {
      case QueryRowReader::Outcome::kMalformed:
        return false;
      case QueryRowReader::Outcome::kFilteredOut:
        return true;
      case QueryRowReader::Outcome::kMatches:
        break;
    }
    QueryRowItem row{QueryRow{row_key, std::nullopt}, std::string(*version)};
    if (sort_value != nullptr) row.row.sort_value.emplace(*sort_value, boost::json::storage_ptr());
    auto at = std::partition_point(rows_.begin(), rows_.end(), [&](const QueryRowItem& r) {
      return Compare(r.row, row.row) < 0;
    });
    rows_bytes_ += RowBytes(row.row.row_key, row.json);
    rows_.insert(at, std::move(row));
    return rows_.size() <= 2 * spec_.limit && !PageOverBytes();
  }

  // The page: the first `limit` rows, with a continuation when more follow.
  std::shared_ptr<const QueryResult> Page() const {
    auto page = std::make_shared<QueryResult>();
    const size_t n = std::min(rows_.size(), spec_.limit);
    page->items.reserve(n);
    for (size_t i = 0; i < n; ++i) page->items.push_back(rows_[i].json);
    if (rows_.size() > n) {
      const QueryRow& last = rows_[n - 1].row;
      page->continuation =
          EncodeQueryContinuation(last.row_key, last.sort(), spec_.order_by.has_value());
    }
    page->cost = cost_;
    return page;
  }

  size_t bytes() const { return sizeof(CurrentAnswer) + rows_bytes_; }

 private:
  static size_t RowBytes(const std::string& row_key, const std::string& json) {
    return sizeof(QueryRowItem) + row_key.size() + json.size();
  }

  // The query's order; an unordered query's is its rows' keys, ascending.
  int Compare(const QueryRow& a, const QueryRow& b) const {
    return CompareQueryRows(a.sort(), a.row_key, b.sort(), b.row_key,
                            spec_.order_by.has_value() && spec_.descending);
  }

  // The rule of the query engine: a page of two items or more stays within
  // max_page_bytes.
  bool PageOverBytes() const {
    const uint64_t max = spec_.limits.max_page_bytes;
    const size_t n = std::min(rows_.size(), spec_.limit);
    if (max == 0 || n < 2) return false;
    uint64_t bytes = 0;
    for (size_t i = 0; i < n; ++i) bytes += rows_[i].json.size();
    return bytes > max;
  }

  const QuerySpec spec_;
  QueryRowReader reader_;  // reads with spec_
  const size_t container_index_;
  const QueryCost cost_;
  std::vector<QueryRowItem> rows_;
  size_t rows_bytes_ = 0;
};

QueryCache::QueryCache(size_t capacity_bytes)
    : capacity_bytes_(capacity_bytes),
      generations_(std::make_unique<std::atomic<uint64_t>[]>(kSlots)),
      current_in_slot_(std::make_unique<std::atomic<uint32_t>[]>(kSlots)) {}

QueryCache::~QueryCache() = default;

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

void QueryCache::Update(size_t container_index, std::string_view partition_key, std::string_view id,
                        std::optional<std::string_view> version) {
  const size_t slot = SlotOf(container_index, partition_key);
  if (BumpUnlessKept(slot)) return;
  const std::string row_key = QueryRowKey(partition_key, id);
  std::lock_guard<std::mutex> lock(mutex_);
  ChangeLocked(slot, container_index, partition_key, &row_key, version);
}

void QueryCache::Invalidate(size_t container_index, std::string_view partition_key) {
  const size_t slot = SlotOf(container_index, partition_key);
  if (BumpUnlessKept(slot)) return;
  std::lock_guard<std::mutex> lock(mutex_);
  ChangeLocked(slot, container_index, partition_key, nullptr, std::nullopt);
}

bool QueryCache::BumpUnlessKept(size_t slot) {
  if (current_in_slot_[slot].load(std::memory_order_acquire) != 0) return false;
  generations_[slot].fetch_add(1, std::memory_order_acq_rel);
  return true;
}

void QueryCache::ChangeLocked(size_t slot, size_t container_index, std::string_view partition_key,
                              const std::string* row_key, std::optional<std::string_view> version) {
  // Under the lock, with one caller: no other change moves the counter
  // meanwhile, and no answer is found or kept between the change and it.
  const uint64_t before = generations_[slot].load(std::memory_order_acquire);
  std::vector<Entries::iterator> dropped;
  auto [first, last] = current_by_slot_.equal_range(slot);
  for (auto it = first; it != last; ++it) {
    Entry& entry = *it->second;
    if (entry.generation != before) {
      dropped.push_back(it->second);  // stale already: it will never be served
      continue;
    }
    if (entry.current->Of(container_index, partition_key)) {
      if (row_key == nullptr || !entry.current->Take(*row_key, version)) {
        dropped.push_back(it->second);
        continue;
      }
      entry.result.reset();
      SetBytesLocked(entry);
      if (entry.bytes > capacity_bytes_ / 8) {
        dropped.push_back(it->second);
        continue;
      }
      ++updates_;
    }
    entry.generation = before + 1;
  }
  generations_[slot].store(before + 1, std::memory_order_release);
  for (Entries::iterator it : dropped) EraseLocked(it);
  while (bytes_ > capacity_bytes_ && !lru_.empty()) EraseLocked(std::prev(lru_.end()));
}

std::shared_ptr<const QueryResult> QueryCache::Find(const std::string& key, size_t container_index,
                                                    std::string_view partition_key) {
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t now = Generation(container_index, partition_key);
  auto it = index_.find(key);
  if (it == index_.end() || it->second->generation != now) {
    if (it != index_.end()) EraseLocked(it->second);
    ++misses_;
    return nullptr;
  }
  Entry& entry = *it->second;
  if (entry.result == nullptr) {
    entry.result = entry.current->Page();
    SetBytesLocked(entry);
  }
  lru_.splice(lru_.begin(), lru_, it->second);
  ++hits_;
  return entry.result;
}

void QueryCache::Insert(std::string key, size_t container_index, const QuerySpec& spec,
                        uint64_t generation, const QueryResult& result,
                        std::vector<QueryRow> rows) {
  const size_t slot = SlotOf(container_index, *spec.partition_key);
  // Already outdated: a write to the partition became visible meanwhile.
  if (generations_[slot].load(std::memory_order_acquire) != generation) return;
  Entry entry{std::move(key), slot, generation, 0, std::make_shared<const QueryResult>(result),
              nullptr};
  if (CurrentAnswer::CanKeep(spec, result, rows)) {
    entry.current = std::make_unique<CurrentAnswer>(spec, container_index, result, std::move(rows));
  }
  entry.bytes = EntryBytes(entry);
  if (entry.bytes > capacity_bytes_ / 8) return;
  std::lock_guard<std::mutex> lock(mutex_);
  // Checked again under the lock, which a change that keeps answers
  // current holds: either this answer takes that change in, or it is not kept.
  if (generations_[slot].load(std::memory_order_acquire) != generation) return;
  if (auto it = index_.find(entry.key); it != index_.end()) EraseLocked(it->second);
  lru_.push_front(std::move(entry));
  Entries::iterator it = lru_.begin();
  bytes_ += it->bytes;
  index_.emplace(it->key, it);
  if (it->current) {
    current_by_slot_.emplace(slot, it);
    current_in_slot_[slot].fetch_add(1, std::memory_order_acq_rel);
  }
  while (bytes_ > capacity_bytes_) EraseLocked(std::prev(lru_.end()));
}

size_t QueryCache::bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return bytes_;
}

size_t QueryCache::EntryBytes(const Entry& entry) {
  size_t bytes = entry.key.size() + sizeof(Entry);
  if (entry.result) {
    bytes += sizeof(QueryResult);
    for (const auto& item : entry.result->items) bytes += item.size() + sizeof(std::string);
    if (entry.result->continuation) bytes += entry.result->continuation->size();
  }
  if (entry.current) bytes += entry.current->bytes();
  return bytes;
}

void QueryCache::SetBytesLocked(Entry& entry) {
  const size_t bytes = EntryBytes(entry);
  bytes_ = bytes_ - entry.bytes + bytes;
  entry.bytes = bytes;
}

void QueryCache::EraseLocked(Entries::iterator it) {
  bytes_ -= it->bytes;
  if (it->current) {
    auto [first, last] = current_by_slot_.equal_range(it->slot);
    for (auto c = first; c != last; ++c) {
      if (c->second == it) {
        current_by_slot_.erase(c);
        current_in_slot_[it->slot].fetch_sub(1, std::memory_order_acq_rel);
        break;
      }
    }
  }
  if (auto found = index_.find(it->key); found != index_.end() && found->second == it) {
    index_.erase(found);
  }
  lru_.erase(it);
}

}  // namespace feedd
