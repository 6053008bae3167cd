#include "storage/query_engine.h"

#include <algorithm>
#include <boost/json.hpp>
#include <queue>
#include <unordered_set>

#include "storage/json_order.h"
#include "storage/key_format.h"

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

// Where the previous page stopped: the item key of its last item and, for
// ordered queries, that item's sort value.
struct Continuation {
  bool present = false;
  std::string item_key;
  std::optional<boost::json::value> sort_value;  // nullopt: missing
};

Status BadContinuation() {
  return Status(ErrorCode::kInvalidQuery, "'continuation' is not one this query returned");
}

Result<Continuation> DecodeContinuation(const std::string& token) {
  Continuation c;
  if (token.empty()) return c;
  std::string json;
  if (!HexDecode(token, &json)) return BadContinuation();
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(json, ec);
  const auto* obj = v.if_object();
  if (ec || obj == nullptr) return BadContinuation();
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

// Query order: by sort value, then item key; reversed when descending.
int CompareCandidates(const std::optional<boost::json::value>& av, std::string_view ak,
                      const std::optional<boost::json::value>& bv, std::string_view bk,
                      bool descending) {
  int c = CompareJson(av ? &*av : nullptr, bv ? &*bv : nullptr);
  if (c == 0) c = ak.compare(bk) < 0 ? -1 : (ak == bk ? 0 : 1);
  return descending ? -c : c;
}

class QueryRun {
 public:
  QueryRun(const RocksDatabase* db, const ContainerHandle& c, const QuerySpec& spec,
           Continuation cont)
      : db_(db), c_(c), spec_(spec), cont_(std::move(cont)) {
    snapshot_ = db_->db()->GetSnapshot();
    read_options_.snapshot = snapshot_;
  }
  ~QueryRun() { db_->db()->ReleaseSnapshot(snapshot_); }

  Result<QueryResult> Run() {
    if (spec_.partition_key) {
      result_.cost.partitions_scanned = 1;
      single_partition_ = true;
      Status s = ScanItems(kf::ItemPartitionPrefix(*spec_.partition_key));
      if (!s.ok()) return s;
    } else if (const FieldFilter* f = IndexedFilter(&index_)) {
      auto encoded = kf::EncodeIndexValue(f->value);
      if (encoded) {
        Status s = ScanIndex(kf::IndexValuePrefix(*encoded));
        if (!s.ok()) return s;
      }
    } else {
      Status s = ScanItems("");
      if (!s.ok()) return s;
    }
    if (!single_partition_) result_.cost.partitions_scanned = partitions_.size();
    if (spec_.order_by) {
      FinishOrdered();
    } else if (more_) {
      result_.continuation = EncodeContinuation(last_key_, nullptr, false);
    }
    return std::move(result_);
  }

 private:
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
    std::unique_ptr<rocksdb::Iterator> it(db_->db()->NewIterator(read_options_, cf));
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
      std::string_view item_key = key.substr(prefix.size());
      auto s = db_->db()->Get(read_options_, c_.items, item_key, &value);
      if (s.IsNotFound()) continue;  // cannot happen on a snapshot; tolerate it
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
    // Every item is parsed to test the filters and find the sort value: into
    // one arena reused item after item (no allocation per JSON node).
    parse_arena_.release();
    boost::system::error_code ec;
    parser_.reset(&parse_arena_);
    parser_.write(json, ec);
    if (ec) return Status(ErrorCode::kStorageError, "corrupt item JSON in " + c_.spec.name);
    const boost::json::value item = parser_.release();
    for (const auto& f : spec_.filters) {
      const boost::json::value* v = f.path.Find(item);
      if (v == nullptr || !JsonEquals(*v, f.value)) return Status::Ok();
    }
    if (!spec_.order_by) {
      result_.items.emplace_back(json);
      if (result_.items.size() == spec_.limit) {
        stopped_ = true;
        last_key_.assign(item_key);
      }
      return Status::Ok();
    }
    const boost::json::value* sv = spec_.order_by->Find(item);
    std::optional<boost::json::value> sort_value;
    if (sv != nullptr) sort_value.emplace(*sv, boost::json::storage_ptr());  // out of the arena
    if (cont_.present && CompareCandidates(sort_value, item_key, cont_.sort_value, cont_.item_key,
                                           spec_.descending) <= 0) {
      return Status::Ok();  // on an earlier page
    }
    heap_.push(Candidate{std::move(sort_value), std::string(item_key), std::string(json)});
    if (heap_.size() > spec_.limit) {
      heap_.pop();
      more_ = true;
    }
    return Status::Ok();
  }

  void FinishOrdered() {
    std::vector<Candidate> page;
    page.reserve(heap_.size());
    while (!heap_.empty()) {
      page.push_back(std::move(const_cast<Candidate&>(heap_.top())));
      heap_.pop();
    }
    std::reverse(page.begin(), page.end());
    for (auto& c : page) result_.items.push_back(std::move(c.json));
    if (more_ && !page.empty()) {
      const auto& last = page.back();
      result_.continuation =
          EncodeContinuation(last.item_key, last.sort_value ? &*last.sort_value : nullptr, true);
    }
  }

  struct WorseFirst {
    bool descending;
    bool operator()(const Candidate& a, const Candidate& b) const {
      return CompareCandidates(a.sort_value, a.item_key, b.sort_value, b.item_key, descending) < 0;
    }
  };

  const RocksDatabase* const db_;
  const ContainerHandle& c_;
  const QuerySpec& spec_;
  const Continuation cont_;
  const rocksdb::Snapshot* snapshot_;
  rocksdb::ReadOptions read_options_;
  const IndexHandle* index_ = nullptr;
  QueryResult result_;
  // Items up to ~16 KiB parse without touching the heap; release() keeps it.
  unsigned char parse_buffer_[16384];
  boost::json::monotonic_resource parse_arena_{parse_buffer_, sizeof(parse_buffer_)};
  boost::json::parser parser_;
  bool single_partition_ = false;
  std::string last_pk_;
  std::unordered_set<std::string> partitions_;
  bool stopped_ = false;  // unordered: the page is full
  bool more_ = false;     // more matches may follow
  std::string last_key_;
  std::priority_queue<Candidate, std::vector<Candidate>, WorseFirst> heap_{
      WorseFirst{spec_.descending}};
};

}  // namespace

Result<QueryResult> QueryEngine::Run(const ContainerHandle& container,
                                     const QuerySpec& spec) const {
  if (spec.limit < 1 || spec.limit > kMaxQueryLimit) {
    return Status(ErrorCode::kInvalidQuery, "'limit' must be an integer from 1 to 1000");
  }
  auto cont = DecodeContinuation(spec.continuation);
  if (!cont.ok()) return cont.status();
  QueryRun run(db_, container, spec, std::move(*cont));
  return run.Run();
}

}  // namespace feedd
