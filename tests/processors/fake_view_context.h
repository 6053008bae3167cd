// FakeViewContext: an in-memory ViewContext for testing processor kinds
// without a DocumentStore.
//
// - Items live in per-container maps keyed by (partition key, id). The test
//   writes SOURCE items with Put() / Remove(): they are committed at once,
//   get a fresh _lsn (and _etag, _ts) and the call returns the Change the
//   change feed would carry (before/after images with system properties).
// - A kind's writes (Upsert / SetField / Delete) are only staged; Commit()
//   (or Flush()) applies them, gives written items a fresh _lsn like the
//   store does, and records the Change of each effective write in
//   view_changes() (so a test can feed a processor's own writes back to it).
//   As the store does for a processor's writes, it refuses an upsert that
//   would overwrite an item not derived from the same source (MayWrite():
//   the whole commit fails with derived_item and changes nothing), and
//   leaves a stored copy at least as new as an UpsertIfNewerSource() one.
// - Query() implements partitionKey, the filters and order of
//   storage/query_semantics.h, limit (1..kMaxQueryLimit) and continuations
//   (an offset).
// - Failure injection: FailNextReads(n) fails the next n Read/Query calls,
//   FailReadAfter(k) lets k of them succeed and fails the next one,
//   FailWritesTo(c) fails every staged write to container c,
//   FailNextCommits(n) fails the next n commits (dropping what was staged).
//
// Thread-safety: none; one test thread.
#pragma once

#include <algorithm>
#include <boost/json.hpp>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "processors/change.h"
#include "processors/kinds/view_helpers.h"
#include "processors/processor_kind.h"
#include "processors/view_context.h"
#include "storage/container_spec.h"
#include "storage/derived_items.h"
#include "storage/json_pointer.h"
#include "storage/patch.h"
#include "storage/query.h"
#include "storage/query_semantics.h"
#include "tests/blog_scenario.h"

namespace feedd::proctest {

// ---- small JSON helpers for tests ----
inline boost::json::object Obj(std::string_view text) {
  boost::json::value v = boost::json::parse(text);
  if (!v.is_object()) throw std::runtime_error("not a JSON object: " + std::string(text));
  return std::move(v.as_object());
}

inline JsonPointer Ptr(std::string_view text) {
  auto p = JsonPointer::Parse(text);
  if (!p.ok()) throw std::runtime_error("bad pointer in test: " + std::string(text));
  return *p;
}

inline std::string Str(const boost::json::value& v) { return boost::json::serialize(v); }

// The string member `key` of `o`, or "" when absent / not a string.
inline std::string S(const boost::json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->get_string()) : std::string();
}

inline uint64_t U(const boost::json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v != nullptr && v->is_number() ? v->to_number<uint64_t>() : 0;
}

// `o` without the properties the store maintains (_etag, _lsn, _ts).
inline boost::json::object WithoutStoreFields(boost::json::object o) {
  o.erase("_etag");
  o.erase("_lsn");
  o.erase("_ts");
  return o;
}

// Code points of `s` when it is valid UTF-8, nullopt otherwise.
inline std::optional<size_t> CodePoints(std::string_view s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80           ? 1
                 : (c >> 5) == 0x6  ? 2
                 : (c >> 4) == 0xE  ? 3
                 : (c >> 3) == 0x1E ? 4
                                    : 0;
    if (len == 0 || i + len > s.size()) return std::nullopt;
    for (size_t k = 1; k < len; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return std::nullopt;
    }
    i += len;
    ++n;
  }
  return n;
}

class FakeViewContext : public ViewContext {
 public:
  using Key = std::pair<std::string, std::string>;  // (partition key, id)

  explicit FakeViewContext(std::vector<ContainerSpec> containers = BlogContainers())
      : containers_(std::move(containers)) {
    for (const auto& c : containers_) items_[c.name];
  }

  // ================= the test's side =================

  // Creates or replaces a source item as a client would (properties starting
  // with '_' are dropped) and returns its change-feed record.
  Change Put(const std::string& container, boost::json::object item) {
    for (auto it = item.begin(); it != item.end();) {
      if (!it->key().empty() && it->key().front() == '_')
        it = item.erase(it);
      else
        ++it;
    }
    return Store(container, std::move(item));
  }
  Change Put(const std::string& container, std::string_view json) {
    return Put(container, Obj(json));
  }

  // Deletes a source item; returns its change record (before image set).
  Change Remove(const std::string& container, const std::string& pk, const std::string& id) {
    auto& items = Items(container);
    auto it = items.find({pk, id});
    if (it == items.end()) throw std::runtime_error("Remove: no item " + container + "/" + id);
    Change c = Envelope(ChangeOp::kDelete, container, pk, id);
    c.before = std::make_shared<const boost::json::object>(it->second);
    items.erase(it);
    return c;
  }

  // Writes an item exactly as given (keeping '_' fields such as _sourceLsn),
  // bypassing any processor: for corrupting a view. Returns the change.
  Change Poke(const std::string& container, boost::json::object item) {
    return Store(container, std::move(item));
  }
  // Removes an item without going through a processor.
  void Erase(const std::string& container, const std::string& pk, const std::string& id) {
    Items(container).erase({pk, id});
  }

  std::optional<boost::json::object> Get(const std::string& container, const std::string& pk,
                                         const std::string& id) const {
    const auto& items = Items(container);
    auto it = items.find({pk, id});
    if (it == items.end()) return std::nullopt;
    return it->second;
  }

  // Every item of `container` (of one partition when `pk` is set), by (pk, id).
  std::vector<boost::json::object> All(const std::string& container,
                                       std::optional<std::string> pk = std::nullopt) const {
    std::vector<boost::json::object> out;
    for (const auto& [key, item] : Items(container)) {
      if (!pk || key.first == *pk) out.push_back(item);
    }
    return out;
  }

  Lsn head() const { return lsn_; }

  // ================= staged writes =================

  size_t staged() const { return staged_.size(); }
  void DiscardStaged() { staged_.clear(); }
  // Changes produced by committed view writes, in commit order.
  const std::vector<Change>& view_changes() const { return view_changes_; }
  void ClearViewChanges() { view_changes_.clear(); }
  size_t commits() const { return commits_; }

  // Applies what is staged, in staging order. A write that does nothing (a
  // SetField or Delete of a missing item) produces no change.
  Status Commit() {
    if (staged_.empty()) return Status::Ok();
    if (fail_commits_ > 0) {
      --fail_commits_;
      staged_.clear();
      return Status(ErrorCode::kStorageError, "injected commit failure");
    }
    std::vector<StagedWrite> writes;
    writes.swap(staged_);
    // Kept to undo a refused commit, which changes nothing.
    const auto items_before = items_;
    const size_t changes_before = view_changes_.size();
    const Lsn lsn_before = lsn_;
    ++commits_;
    for (auto& w : writes) {
      auto& items = Items(w.container);
      auto it = items.find({w.pk, w.id});
      switch (w.kind) {
        case StagedWrite::kUpsert: {
          const bool exists = it != items.end();
          Status allowed =
              MayWrite(WriteOrigin::kProcessor, *Container(w.container), w.pk, w.id, Str(w.item),
                       exists ? std::optional(Str(it->second)) : std::nullopt);
          if (!allowed.ok()) {
            items_ = items_before;
            view_changes_.resize(changes_before);
            lsn_ = lsn_before;
            return allowed;
          }
          if (exists && w.if_newer_source &&
              views::SourceLsnOf(it->second) >= views::SourceLsnOf(w.item)) {
            break;  // the stored copy shows this source version or a newer one
          }
          view_changes_.push_back(Store(w.container, std::move(w.item)));
          break;
        }
        case StagedWrite::kSetField: {
          if (it == items.end()) break;
          boost::json::value copy = it->second;
          Status s = ApplyPatch({PatchOp{PatchOpKind::kSet, w.field, w.value}}, copy);
          if (!s.ok()) return s;
          view_changes_.push_back(Store(w.container, std::move(copy.as_object())));
          break;
        }
        case StagedWrite::kDelete: {
          if (it == items.end()) break;
          Change c = Envelope(ChangeOp::kDelete, w.container, w.pk, w.id);
          c.before = std::make_shared<const boost::json::object>(it->second);
          items.erase(it);
          view_changes_.push_back(std::move(c));
          break;
        }
      }
    }
    return Status::Ok();
  }

  // What the runtime does with one change: apply, then commit the staged
  // writes, or drop them when Apply fails.
  Status Run(const ProcessorKind& kind, const Change& change) {
    Status s = kind.Apply(change, *this);
    if (!s.ok()) {
      staged_.clear();
      return s;
    }
    return Commit();
  }

  // ================= failure injection =================

  void FailNextReads(int n) {
    skip_reads_ = 0;
    fail_reads_ = n;
  }
  // Lets `skip` Read/Query calls succeed, then fails one.
  void FailReadAfter(int skip) {
    skip_reads_ = skip;
    fail_reads_ = 1;
  }
  void FailWritesTo(const std::string& container) { fail_writes_.insert(container); }
  void StopFailingWrites() { fail_writes_.clear(); }
  void FailNextCommits(int n) { fail_commits_ = n; }
  // Read() and Query() calls so far (including failed ones).
  size_t reads() const { return reads_; }
  // Query() calls of `container` across partitions with an order_by: a
  // store answers each page of one by scanning the whole container (no
  // index orders it).
  size_t ordered_scans(const std::string& container) const {
    auto it = ordered_scans_.find(container);
    return it == ordered_scans_.end() ? 0 : it->second;
  }

  // ================= ViewContext =================

  const ContainerSpec* Container(const std::string& name) const override {
    for (const auto& c : containers_) {
      if (c.name == name) return &c;
    }
    return nullptr;
  }

  Result<std::optional<boost::json::object>> Read(const std::string& container,
                                                  const std::string& partition_key,
                                                  const std::string& id) override {
    if (Status s = ReadGate(container); !s.ok()) return s;
    return Get(container, partition_key, id);
  }

  Result<ViewQueryPage> Query(const std::string& container, const QuerySpec& spec) override {
    if (Status s = ReadGate(container); !s.ok()) return s;
    if (!spec.partition_key && spec.order_by) ++ordered_scans_[container];
    if (spec.limit < 1 || spec.limit > kMaxQueryLimit) {
      return Status(ErrorCode::kInvalidQuery, "'limit' must be an integer from 1 to 1000");
    }
    size_t offset = 0;
    if (!spec.continuation.empty()) {
      try {
        offset = std::stoul(spec.continuation);
      } catch (const std::exception&) {
        return Status(ErrorCode::kInvalidQuery, "bad continuation");
      }
    }
    std::vector<std::pair<std::string, const boost::json::object*>> hits;  // row key, item
    for (const auto& [key, item] : Items(container)) {
      if (spec.partition_key && key.first != *spec.partition_key) continue;
      if (MatchesFilters(item, spec.filters))
        hits.emplace_back(QueryRowKey(key.first, key.second), &item);
    }
    std::sort(hits.begin(), hits.end(), [&](const auto& a, const auto& b) {
      const JsonPointer* order_by = spec.order_by ? &*spec.order_by : nullptr;
      return CompareQueryRows(order_by ? order_by->Find(*a.second) : nullptr, a.first,
                              order_by ? order_by->Find(*b.second) : nullptr, b.first,
                              spec.descending) < 0;
    });
    ViewQueryPage page;
    for (size_t i = offset; i < hits.size() && page.items.size() < spec.limit; ++i) {
      page.items.push_back(*hits[i].second);
    }
    if (offset + page.items.size() < hits.size()) {
      page.continuation = std::to_string(offset + page.items.size());
    }
    return page;
  }

  Status Upsert(const std::string& container, boost::json::object item) override {
    return StageUpsert(container, std::move(item), false);
  }
  Status UpsertIfNewerSource(const std::string& container, boost::json::object item) override {
    if (Result<uint64_t> source_lsn = views::RequiredSourceLsn(container, item); !source_lsn.ok()) {
      return source_lsn.status();
    }
    return StageUpsert(container, std::move(item), true);
  }

  Status SetField(const std::string& container, const std::string& partition_key,
                  const std::string& id, const JsonPointer& field,
                  boost::json::value value) override {
    if (Status s = WriteGate(container); !s.ok()) return s;
    StagedWrite w;
    w.kind = StagedWrite::kSetField;
    w.container = container;
    w.pk = partition_key;
    w.id = id;
    w.field = field;
    w.value = std::move(value);
    staged_.push_back(std::move(w));
    return Status::Ok();
  }

  Status Delete(const std::string& container, const std::string& partition_key,
                const std::string& id) override {
    if (Status s = WriteGate(container); !s.ok()) return s;
    StagedWrite w;
    w.kind = StagedWrite::kDelete;
    w.container = container;
    w.pk = partition_key;
    w.id = id;
    staged_.push_back(std::move(w));
    return Status::Ok();
  }

  Status Flush() override { return Commit(); }

 private:
  struct StagedWrite {
    enum Kind { kUpsert, kSetField, kDelete } kind = kUpsert;
    std::string container, pk, id;
    boost::json::object item;      // kUpsert
    JsonPointer field;             // kSetField
    boost::json::value value;      // kSetField
    bool if_newer_source = false;  // kUpsert: UpsertIfNewerSource()
  };

  Status StageUpsert(const std::string& container, boost::json::object item, bool if_newer_source) {
    if (Status s = WriteGate(container); !s.ok()) return s;
    const ContainerSpec* spec = Container(container);
    const auto* id = item.if_contains("id");
    if (id == nullptr || !id->is_string() || id->get_string().empty()) {
      return Status(ErrorCode::kInvalidId, "derived item without a string id");
    }
    const boost::json::value* pk = Ptr(spec->partition_key_path).Find(item);
    if (pk == nullptr || !pk->is_string()) {
      return Status(ErrorCode::kInvalidPartitionKey,
                    "derived item without a string " + spec->partition_key_path);
    }
    item = WithoutStoreFields(std::move(item));
    StagedWrite w;
    w.kind = StagedWrite::kUpsert;
    w.container = container;
    w.pk = std::string(pk->get_string());
    w.id = std::string(id->get_string());
    w.item = std::move(item);
    w.if_newer_source = if_newer_source;
    staged_.push_back(std::move(w));
    return Status::Ok();
  }

  std::map<Key, boost::json::object>& Items(const std::string& container) {
    auto it = items_.find(container);
    if (it == items_.end()) throw std::runtime_error("no container '" + container + "'");
    return it->second;
  }
  const std::map<Key, boost::json::object>& Items(const std::string& container) const {
    auto it = items_.find(container);
    if (it == items_.end()) throw std::runtime_error("no container '" + container + "'");
    return it->second;
  }

  Status ReadGate(const std::string& container) {
    ++reads_;
    if (fail_reads_ > 0 && skip_reads_ > 0) {
      --skip_reads_;
    } else if (fail_reads_ > 0) {
      --fail_reads_;
      return Status(ErrorCode::kStorageError, "injected read failure");
    }
    if (Container(container) == nullptr) {
      return Status(ErrorCode::kContainerNotFound, "container '" + container + "' does not exist");
    }
    return Status::Ok();
  }

  Status WriteGate(const std::string& container) const {
    if (fail_writes_.count(container) != 0) {
      return Status(ErrorCode::kStorageError, "injected write failure on " + container);
    }
    if (Container(container) == nullptr) {
      return Status(ErrorCode::kContainerNotFound, "container '" + container + "' does not exist");
    }
    return Status::Ok();
  }

  Change Envelope(ChangeOp op, const std::string& container, const std::string& pk,
                  const std::string& id) {
    Change c;
    c.lsn = ++lsn_;
    c.op = op;
    c.container = container;
    c.partition_key = pk;
    c.id = id;
    c.ts_ms = 1700000000000ull + c.lsn;
    return c;
  }

  // Stores `item` (keeping '_' fields other than the store's own) with a new
  // _lsn, and returns the change record.
  Change Store(const std::string& container, boost::json::object item) {
    const ContainerSpec* spec = Container(container);
    if (spec == nullptr) throw std::runtime_error("no container '" + container + "'");
    const boost::json::value* pk = Ptr(spec->partition_key_path).Find(item);
    const auto* id = item.if_contains("id");
    if (pk == nullptr || !pk->is_string() || id == nullptr || !id->is_string()) {
      throw std::runtime_error("item without id / partition key: " + Str(item));
    }
    std::string pk_text(pk->get_string()), id_text(id->get_string());
    auto& items = Items(container);
    auto it = items.find({pk_text, id_text});
    Change c = Envelope(it == items.end() ? ChangeOp::kCreate : ChangeOp::kReplace, container,
                        pk_text, id_text);
    if (it != items.end()) c.before = std::make_shared<const boost::json::object>(it->second);
    item = WithoutStoreFields(std::move(item));
    item["_etag"] = "\"" + std::to_string(c.lsn) + "\"";
    item["_lsn"] = c.lsn;
    item["_ts"] = c.ts_ms / 1000;
    c.after = std::make_shared<const boost::json::object>(item);
    items[{pk_text, id_text}] = std::move(item);
    return c;
  }

  std::vector<ContainerSpec> containers_;
  std::map<std::string, std::map<Key, boost::json::object>> items_;
  Lsn lsn_ = 0;
  std::vector<StagedWrite> staged_;
  std::vector<Change> view_changes_;
  size_t commits_ = 0;
  int fail_reads_ = 0;
  int skip_reads_ = 0;
  int fail_commits_ = 0;
  std::set<std::string> fail_writes_;
  size_t reads_ = 0;
  std::map<std::string, size_t> ordered_scans_;
};

}  // namespace feedd::proctest
