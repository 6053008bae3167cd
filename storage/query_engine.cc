#include "storage/query_engine.h"

#include <algorithm>
#include <boost/json.hpp>
#include <unordered_set>

#include "storage/json_scan.h"
#include "storage/key_format.h"
#include "storage/query_semantics.h"
#include "util/json_parse.h"

namespace feedd {
namespace {

namespace kf = key_format;

std::string HexEncode(std::string_view in) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  out.reserve(in.size() * 2);
  for (unsigned char c : in) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

bool HexDecode(std::string_view in, std::string* out) {
  if (in.size() % 2 != 0) return false;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  out->clear();
  for (size_t i = 0; i < in.size(); i += 2) {
    int hi = nibble(in[i]), lo = nibble(in[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out->push_back(static_cast<char>(hi << 4 | lo));
  }
  return true;
}

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

// Where the previous page stopped: the item key of its last item and, for
// ordered queries, that item's sort value.
struct Continuation {
  bool present = false;
  std::string item_key;
  std::optional<boost::json::value> sort_value;  // nullopt: missing
};

const boost::json::value* Ptr(const std::optional<boost::json::value>& v) {
  return v ? &*v : nullptr;
}

Status BadContinuation() {
  return Status(ErrorCode::kInvalidQuery, "'continuation' is not one this query returned");
}

Result<Continuation> DecodeContinuation(const std::string& token) {
  Continuation c;
  if (token.empty()) return c;
  std::string json;
  if (!HexDecode(token, &json)) return BadContinuation();
  Result<boost::json::value> v = ParseJson(json);
  const auto* obj = v.ok() ? v->if_object() : nullptr;
  if (obj == nullptr) return BadContinuation();
  const auto* key = obj->if_contains("k");
  if (key == nullptr || !key->is_string() || !HexDecode(key->get_string(), &c.item_key)) {
    return BadContinuation();
  }
  if (const auto* sv = obj->if_contains("v")) c.sort_value = *sv;
  c.present = true;
  return c;
}

std::string EncodeContinuation(std::string_view item_key, const boost::json::value* sort_value,
                               bool ordered) {
  boost::json::object obj;
  obj["k"] = HexEncode(item_key);
  if (ordered && sort_value != nullptr) obj["v"] = *sort_value;
  return HexEncode(boost::json::serialize(obj));
}

struct Candidate {
  std::optional<boost::json::value> sort_value;
  std::string item_key;
  std::string json;
};

class QueryRun {
 public:
  QueryRun(const RocksDatabase* db, const ContainerHandle& c, const QuerySpec& spec,
           Continuation cont)
      : db_(db), c_(c), spec_(spec), cont_(std::move(cont)) {
    for (const FieldFilter& f : spec_.filters) filter_paths_.push_back(PathOf(f.path));
    if (spec_.order_by) order_path_ = PathOf(*spec_.order_by);
  }

  // On failure *spent (when given) is what the query had cost by then.
  Result<QueryResult> Run(QueryCost* spent) {
    Status s = ReadAccessPath();
    if (!single_partition_) result_.cost.partitions_scanned = partitions_.size();
    if (spent != nullptr) *spent = result_.cost;
    if (!s.ok()) return s;
    if (spec_.order_by) {
      FinishOrdered();
    } else if (more_) {
      result_.continuation = EncodeContinuation(last_key_, nullptr, false);
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
    return index_scan ? prefix + cont_.item_key : cont_.item_key;
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
    // Filters and the sort value are read from the item's text: the
    // top-level members they name are found in one pass, and only their
    // values are parsed, into an arena reused item after item.
    scratch_ = nullptr;
    parse_arena_.release();
    if (!members_.empty() &&
        FindJsonMembers(json, members_, &member_values_) == JsonScan::kMalformed) {
      return CorruptItem();
    }
    for (size_t i = 0; i < spec_.filters.size(); ++i) {
      std::string_view raw;
      JsonScan found = Find(json, filter_paths_[i], spec_.filters[i].path, &raw);
      if (found == JsonScan::kMalformed) return CorruptItem();
      if (found == JsonScan::kMissing || !RawMatches(raw, spec_.filters[i])) {
        return Status::Ok();
      }
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
      if (result_.items.size() == spec_.limit) stopped_ = true;
      return Status::Ok();
    }
    std::string_view raw;
    JsonScan found = Find(json, order_path_, *spec_.order_by, &raw);
    if (found == JsonScan::kMalformed) return CorruptItem();
    const boost::json::value* sort_value = nullptr;
    if (found == JsonScan::kFound) {
      sort_value = ParseScratch(raw);
      if (sort_value == nullptr) return CorruptItem();
    }
    if (cont_.present && CompareQueryRows(sort_value, item_key, Ptr(cont_.sort_value),
                                          cont_.item_key, spec_.descending) <= 0) {
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
      const Candidate& last = candidates_[heap_.front()];
      if (CompareQueryRows(sort_value, item_key, Ptr(last.sort_value), last.item_key,
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
    Candidate& c = candidates_[slot];
    if (sort_value != nullptr) {
      c.sort_value.emplace(*sort_value, boost::json::storage_ptr());
    } else {
      c.sort_value.reset();
    }
    c.item_key.assign(item_key);
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

  // Where a path's value is read from: a top-level member of members_ and
  // the tokens below it, or (member < 0, the root) the whole item.
  struct MemberPath {
    int member = -1;
    std::vector<std::string> rest;
  };

  MemberPath PathOf(const JsonPointer& pointer) {
    MemberPath path;
    const std::vector<std::string>& tokens = pointer.tokens();
    if (tokens.empty()) return path;
    auto it = std::find(members_.begin(), members_.end(), tokens[0]);
    path.member = static_cast<int>(it - members_.begin());
    if (it == members_.end()) members_.push_back(tokens[0]);
    path.rest.assign(tokens.begin() + 1, tokens.end());
    return path;
  }

  // The value at `pointer` in the item `json`, after FindJsonMembers().
  JsonScan Find(std::string_view json, const MemberPath& path, const JsonPointer& pointer,
                std::string_view* raw) const {
    if (path.member < 0) return FindJsonValue(json, pointer.tokens(), raw);
    const std::optional<std::string_view>& value = member_values_[path.member];
    if (!value) return JsonScan::kMissing;
    if (path.rest.empty()) {
      *raw = *value;
      return JsonScan::kFound;
    }
    return FindJsonValue(*value, path.rest, raw);
  }

  Status CorruptItem() const {
    return Status(ErrorCode::kStorageError, "corrupt item JSON in " + c_.spec.name);
  }

  // `raw` (one value's text) parsed into the per-item arena; nullptr if it
  // is not JSON.
  const boost::json::value* ParseScratch(std::string_view raw) {
    Result<boost::json::value> v = ParseJson(raw, &parse_arena_);
    if (!v.ok()) return nullptr;
    scratch_ = std::move(*v);
    return &scratch_;
  }

  // MatchesFilter() on a value's text: a plain string (no escapes) compares
  // as text, the rest after parsing.
  bool RawMatches(std::string_view raw, const FieldFilter& filter) {
    if (const auto* s = filter.value.if_string(); s != nullptr && raw.size() >= 2 &&
                                                  raw.front() == '"' &&
                                                  raw.find('\\') == std::string_view::npos) {
      return raw.substr(1, raw.size() - 2) == std::string_view(*s);
    }
    return MatchesFilter(ParseScratch(raw), filter);
  }

  void FinishOrdered() {
    std::sort_heap(heap_.begin(), heap_.end(), WorseFirst{this});  // best first
    for (uint32_t i : heap_) result_.items.push_back(std::move(candidates_[i].json));
    if (more_ && !heap_.empty()) {
      const Candidate& last = candidates_[heap_.back()];
      result_.continuation = EncodeContinuation(last.item_key, Ptr(last.sort_value), true);
    }
  }

  // Heap order on candidate indexes: true when a goes before b in the query.
  struct WorseFirst {
    const QueryRun* run;
    bool operator()(uint32_t a, uint32_t b) const {
      const Candidate& x = run->candidates_[a];
      const Candidate& y = run->candidates_[b];
      return CompareQueryRows(Ptr(x.sort_value), x.item_key, Ptr(y.sort_value), y.item_key,
                              run->spec_.descending) < 0;
    }
  };

  const RocksDatabase* const db_;
  const ContainerHandle& c_;
  const QuerySpec& spec_;
  const Continuation cont_;
  const IndexHandle* index_ = nullptr;
  std::vector<std::string> members_;      // top-level members the query reads
  std::vector<MemberPath> filter_paths_;  // one per filter
  MemberPath order_path_;
  std::vector<std::optional<std::string_view>> member_values_;  // of the current item
  QueryResult result_;
  // Filter and sort values parse without touching the heap; release() keeps it.
  unsigned char parse_buffer_[4096];
  boost::json::monotonic_resource parse_arena_{parse_buffer_, sizeof(parse_buffer_)};
  boost::json::value scratch_;  // the last ParseScratch() result, in parse_arena_
  bool single_partition_ = false;
  std::string last_pk_;
  std::unordered_set<std::string> partitions_;
  bool stopped_ = false;  // unordered: the page is full
  bool more_ = false;     // more matches may follow
  std::string last_key_;
  uint64_t page_bytes_ = 0;            // of the items on the page so far
  bool page_capped_ = false;           // ordered: an item was dropped for max_page_bytes
  std::vector<Candidate> candidates_;  // ordered queries: at most `limit`
  std::vector<uint32_t> heap_;         // indexes into candidates_
  std::vector<uint32_t> free_slots_;   // candidates_ no longer on the page
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
                                     QueryCost* spent) const {
  if (spent != nullptr) *spent = QueryCost();
  if (Status s = Admit(spec); !s.ok()) return s;
  auto cont = DecodeContinuation(spec.continuation);
  if (!cont.ok()) return cont.status();
  QueryRun run(db_, container, spec, std::move(*cont));
  return run.Run(spent);
}

}  // namespace feedd
