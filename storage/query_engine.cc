#include "storage/query_engine.h"

#include <algorithm>
#include <boost/json.hpp>
#include <unordered_set>

#include "storage/key_format.h"
#include "storage/query_continuation.h"
#include "storage/query_row_reader.h"
#include "storage/query_semantics.h"

namespace feedd {
namespace {

namespace kf = key_format;

// The smallest key above every key that starts with `prefix`; "" when there
// is none (an empty prefix, or one of 0xff bytes only).
std::string PrefixSuccessor(std::string prefix) {
  while (!prefix.empty()) {
    unsigned char last = static_cast<unsigned char>(prefix.back());
    if (last != 0xff) {
      prefix.back() = static_cast<char>(last + 1);
      return prefix;
    }
    prefix.pop_back();
  }
  return prefix;
}

class QueryRun {
 public:
  QueryRun(const RocksDatabase* db, const ContainerHandle& c, const QuerySpec& spec,
           QueryContinuation cont)
      : db_(db), c_(c), spec_(spec), cont_(std::move(cont)), reader_(spec) {}

  // On failure *spent (when given) is what the query had cost by then.
  // *rows, when given, gets the row of each item of the answer.
  Result<QueryResult> Run(QueryCost* spent, std::vector<QueryRow>* rows) {
    rows_wanted_ = rows != nullptr;
    Status s = ReadAccessPath();
    if (!single_partition_) result_.cost.partitions_scanned = partitions_.size();
    if (spent != nullptr) *spent = result_.cost;
    if (!s.ok()) return s;
    if (spec_.order_by) {
      FinishOrdered(rows);
    } else {
      if (more_) result_.continuation = EncodeQueryContinuation(last_key_, nullptr, false);
      if (rows != nullptr) *rows = std::move(unordered_rows_);
    }
    return std::move(result_);
  }

 private:
  // Reads through the query's access path.
  Status ReadAccessPath() {
    if (spec_.partition_key) {
      result_.cost.partitions_scanned = 1;
      single_partition_ = true;
      return ScanItems(kf::ItemPartitionPrefix(*spec_.partition_key));
    }
    if (const FieldFilter* f = IndexedFilter(&index_)) {
      auto encoded = kf::EncodeIndexValue(f->value);
      return encoded ? ScanIndex(kf::IndexValuePrefix(*encoded)) : Status::Ok();
    }
    return ScanItems("");
  }

  const FieldFilter* IndexedFilter(const IndexHandle** index) const {
    for (const auto& f : spec_.filters) {
      for (const auto& idx : c_.indexes) {
        if (idx.pointer.tokens() == f.path.tokens()) {
          *index = &idx;
          return &f;
        }
      }
    }
    return nullptr;
  }

  // Where an unordered scan resumes: the continuation's item key, inside the
  // index range `prefix` for index scans.
  std::string SeekKey(const std::string& prefix, bool index_scan) const {
    if (spec_.order_by || !cont_.present) return prefix;
    return index_scan ? prefix + cont_.row_key : cont_.row_key;
  }

  Status ScanItems(const std::string& prefix) { return Scan(c_.items, prefix, false); }
  Status ScanIndex(const std::string& prefix) { return Scan(index_->cf, prefix, true); }

  // Visits the keys under `prefix` of `cf` (items, or index entries whose
  // items are then read), resuming after an unordered continuation.
  Status Scan(rocksdb::ColumnFamilyHandle* cf, const std::string& prefix, bool index_scan) {
    // The bound lets RocksDB stop at the range's end instead of stepping
    // over what follows it (deleted keys included).
    const std::string upper = PrefixSuccessor(prefix);
    const rocksdb::Slice upper_slice(upper);
    rocksdb::ReadOptions options;
    if (!upper.empty()) options.iterate_upper_bound = &upper_slice;
    std::unique_ptr<rocksdb::Iterator> it(db_->db()->NewIterator(options, cf));
    std::string seek = SeekKey(prefix, index_scan);
    std::string value;
    for (it->Seek(seek); it->Valid(); it->Next()) {
      std::string_view key = it->key().ToStringView();
      if (key.substr(0, prefix.size()) != prefix) break;
      if (!spec_.order_by && cont_.present && key == seek) continue;
      if (stopped_) {
        more_ = true;
        break;
      }
      if (!index_scan) {
        if (Status s = Visit(key, it->value().ToStringView()); !s.ok()) return s;
        continue;
      }
      ++result_.cost.index_entries_read;
      result_.cost.bytes_read += key.size();
      if (Status s = CheckBudget(); !s.ok()) return s;
      std::string_view item_key = key.substr(prefix.size());
      auto s = db_->db()->Get(rocksdb::ReadOptions(), c_.items, item_key, &value);
      if (s.IsNotFound()) continue;  // deleted since the iterator was made
      if (!s.ok()) return FromRocks(s, ErrorCode::kStorageError, "query index lookup");
      if (Status st = Visit(item_key, value); !st.ok()) return st;
    }
    if (!it->status().ok()) return FromRocks(it->status(), ErrorCode::kStorageError, "query scan");
    return Status::Ok();
  }

  Status Visit(std::string_view item_key, std::string_view value) {
    uint64_t lsn;
    std::string_view json, pk, id;
    if (!kf::DecodeItemValue(value, &lsn, &json) || !kf::DecodeItemKey(item_key, &pk, &id)) {
      return Status(ErrorCode::kStorageError, "corrupt item in " + c_.spec.name);
    }
    ++result_.cost.items_read;
    result_.cost.bytes_read += value.size();
    if (!single_partition_ && (last_pk_ != pk || partitions_.empty())) {
      last_pk_.assign(pk);
      partitions_.insert(last_pk_);
    }
    if (Status s = CheckBudget(); !s.ok()) return s;
    const boost::json::value* sort_value = nullptr;
    switch (reader_.Read(json, &sort_value)) {
      case QueryRowReader::Outcome::kMalformed:
        return CorruptItem();
      case QueryRowReader::Outcome::kFilteredOut:
        return Status::Ok();
      case QueryRowReader::Outcome::kMatches:
        break;
    }
    if (!spec_.order_by) {
      if (!result_.items.empty() && OverPageBytes(page_bytes_ + json.size())) {
        // The page ends before this item; the next one starts with it.
        stopped_ = true;
        more_ = true;
        result_.cut_by_bytes = true;
        return Status::Ok();
      }
      result_.items.emplace_back(json);
      page_bytes_ += json.size();
      last_key_.assign(item_key);
      if (rows_wanted_) unordered_rows_.push_back(QueryRow{last_key_, std::nullopt});
      if (result_.items.size() == spec_.limit) stopped_ = true;
      return Status::Ok();
    }
    if (cont_.present && CompareQueryRows(sort_value, item_key, cont_.sort(), cont_.row_key,
                                          spec_.descending) <= 0) {
      return Status::Ok();  // on an earlier page
    }
    // The page so far is a heap of indexes into candidates_, worst on top:
    // always the first heap_.size() items, in query order, of those seen.
    // It is full at `limit` items, or once it had to give up an item to
    // stay within max_page_bytes (a later item may not overtake one that
    // no longer fits). An item that enters a full page takes the slot of
    // the one it pushes out, reusing its strings' memory.
    if (heap_.size() == spec_.limit || page_capped_) {
      more_ = true;
      const QueryRowItem& last = candidates_[heap_.front()];
      if (CompareQueryRows(sort_value, item_key, last.row.sort(), last.row.row_key,
                           spec_.descending) > 0) {
        return Status::Ok();  // it goes after the page's last item
      }
      PopWorst();
    }
    size_t slot;
    if (!free_slots_.empty()) {
      slot = free_slots_.back();
      free_slots_.pop_back();
    } else {
      slot = candidates_.size();
      candidates_.emplace_back();
    }
    QueryRowItem& c = candidates_[slot];
    if (sort_value != nullptr) {
      c.row.sort_value.emplace(*sort_value, boost::json::storage_ptr());
    } else {
      c.row.sort_value.reset();
    }
    c.row.row_key.assign(item_key);
    // Reuse the slot's memory, unless it held a much larger item.
    if (c.json.capacity() > 2 * json.size() + 4096) c.json = std::string();
    c.json.assign(json);
    page_bytes_ += json.size();
    heap_.push_back(static_cast<uint32_t>(slot));
    std::push_heap(heap_.begin(), heap_.end(), WorseFirst{this});
    while (heap_.size() > 1 && OverPageBytes(page_bytes_)) {
      PopWorst();
      page_capped_ = true;
      more_ = true;
      result_.cut_by_bytes = true;
    }
    return Status::Ok();
  }

  // Ordered queries: drops the page's last item, freeing its slot.
  void PopWorst() {
    std::pop_heap(heap_.begin(), heap_.end(), WorseFirst{this});
    const uint32_t slot = heap_.back();
    heap_.pop_back();
    page_bytes_ -= candidates_[slot].json.size();
    free_slots_.push_back(slot);
  }

  bool OverPageBytes(uint64_t bytes) const {
    return spec_.limits.max_page_bytes != 0 && bytes > spec_.limits.max_page_bytes;
  }

  // query_too_expensive once the query has read more than its budget.
  Status CheckBudget() const {
    const QueryLimits& limits = spec_.limits;
    const QueryCost& cost = result_.cost;
    if (limits.max_items_read != 0 &&
        cost.items_read + cost.index_entries_read > limits.max_items_read) {
      return Status(ErrorCode::kQueryTooExpensive,
                    "the query read more than query.max_items_read (" +
                        std::to_string(limits.max_items_read) +
                        ") items and index entries; narrow it with partitionKey or a filter "
                        "on an indexed field");
    }
    if (limits.max_bytes_read != 0 && cost.bytes_read > limits.max_bytes_read) {
      return Status(ErrorCode::kQueryTooExpensive,
                    "the query read more than query.max_bytes_read (" +
                        std::to_string(limits.max_bytes_read) +
                        " bytes); narrow it with partitionKey or a filter on an indexed field");
    }
    return Status::Ok();
  }

  Status CorruptItem() const {
    return Status(ErrorCode::kStorageError, "corrupt item JSON in " + c_.spec.name);
  }

  void FinishOrdered(std::vector<QueryRow>* rows) {
    std::sort_heap(heap_.begin(), heap_.end(), WorseFirst{this});  // best first
    for (uint32_t i : heap_) result_.items.push_back(std::move(candidates_[i].json));
    if (more_ && !heap_.empty()) {
      const QueryRowItem& last = candidates_[heap_.back()];
      result_.continuation = EncodeQueryContinuation(last.row.row_key, last.row.sort(), true);
    }
    if (rows == nullptr) return;
    rows->clear();
    rows->reserve(heap_.size());
    for (uint32_t i : heap_) rows->push_back(std::move(candidates_[i].row));
  }

  // Heap order on candidate indexes: true when a goes before b in the query.
  struct WorseFirst {
    const QueryRun* run;
    bool operator()(uint32_t a, uint32_t b) const {
      const QueryRowItem& x = run->candidates_[a];
      const QueryRowItem& y = run->candidates_[b];
      return CompareQueryRows(x.row.sort(), x.row.row_key, y.row.sort(), y.row.row_key,
                              run->spec_.descending) < 0;
    }
  };

  const RocksDatabase* const db_;
  const ContainerHandle& c_;
  const QuerySpec& spec_;
  const QueryContinuation cont_;
  const IndexHandle* index_ = nullptr;
  QueryRowReader reader_;
  QueryResult result_;
  bool single_partition_ = false;
  std::string last_pk_;
  std::unordered_set<std::string> partitions_;
  bool stopped_ = false;  // unordered: the page is full
  bool more_ = false;     // more matches may follow
  std::string last_key_;
  bool rows_wanted_ = false;
  std::vector<QueryRow> unordered_rows_;  // unordered queries: of the items on the page
  uint64_t page_bytes_ = 0;               // of the items on the page so far
  bool page_capped_ = false;              // ordered: an item was dropped for max_page_bytes
  std::vector<QueryRowItem> candidates_;  // ordered queries: at most `limit`
  std::vector<uint32_t> heap_;            // indexes into candidates_
  std::vector<uint32_t> free_slots_;      // candidates_ no longer on the page
};

}  // namespace

Status QueryEngine::Admit(const QuerySpec& spec) {
  if (spec.limit < 1 || spec.limit > kMaxQueryLimit) {
    return Status(ErrorCode::kInvalidQuery, "'limit' must be an integer from 1 to 1000");
  }
  const size_t max_filters = spec.limits.max_filters;
  if (max_filters != 0 && spec.filters.size() > max_filters) {
    return Status(ErrorCode::kQueryTooExpensive,
                  "the query has " + std::to_string(spec.filters.size()) +
                      " filters; query.max_filters allows " + std::to_string(max_filters));
  }
  return Status::Ok();
}

Result<QueryResult> QueryEngine::Run(const ContainerHandle& container, const QuerySpec& spec,
                                     QueryCost* spent, std::vector<QueryRow>* rows) const {
  if (spent != nullptr) *spent = QueryCost();
  if (Status s = Admit(spec); !s.ok()) return s;
  auto cont = DecodeQueryContinuation(spec.continuation);
  if (!cont.ok()) return cont.status();
  QueryRun run(db_, container, spec, std::move(*cont));
  return run.Run(spent, rows);
}

}  // namespace feedd
