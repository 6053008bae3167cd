#include "storage/commit_pipeline.h"

#include <algorithm>
#include <boost/json.hpp>
#include <charconv>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <unordered_map>

#include "storage/etag.h"
#include "storage/key_format.h"
#include "util/json_parse.h"
#include "util/logging.h"
#include "util/thread_name.h"

namespace feedd {
namespace {

namespace kf = key_format;

// Compares an If-Match value with the etag of `lsn`. Quotes and a weak
// prefix on the client's side are ignored; "*" matches any version.
bool EtagMatches(std::string_view if_match, Lsn lsn) {
  if (if_match == "*") return true;
  if (if_match.size() >= 2 && if_match.substr(0, 2) == "W/") if_match.remove_prefix(2);
  if (if_match.size() >= 2 && if_match.front() == '"' && if_match.back() == '"') {
    if_match = if_match.substr(1, if_match.size() - 2);
  }
  return if_match == std::to_string(lsn);
}

// Appends `n` in decimal, as std::to_string() writes it, without a string
// of its own.
void AppendDecimal(std::string* out, uint64_t n) {
  char digits[20];
  const auto end = std::to_chars(digits, digits + sizeof(digits), n).ptr;
  out->append(digits, end);
}

// The stored value (key_format::ItemValue) of version `lsn` of the item
// `body_json`, a serialized non-empty object ("{...}" with at least `id`):
// its system properties appended, written at once instead of copied into a
// stored value. *item_json: the item's JSON in it.
std::string StoredItemValue(std::string_view body_json, Lsn lsn, uint64_t ts_ms,
                            std::string_view* item_json) {
  std::string out = kf::ItemValue(lsn, "");
  out.reserve(out.size() + body_json.size() + 64);
  const size_t item_offset = out.size();
  out.append(body_json.substr(0, body_json.size() - 1));
  out += ",\"_etag\":\"\\\"";
  AppendDecimal(&out, lsn);
  out += "\\\"\",\"_lsn\":";
  AppendDecimal(&out, lsn);
  out += ",\"_ts\":";
  AppendDecimal(&out, ts_ms);
  out += '}';
  *item_json = std::string_view(out).substr(item_offset);
  return out;
}

// Appends `s` as a JSON string, as boost::json::serialize() writes it: a
// string with no quote, backslash or control character (every partition
// key and id of the scenario) goes in as it is, between quotes.
void AppendJsonString(std::string* out, std::string_view s) {
  const bool plain = std::none_of(s.begin(), s.end(), [](char c) {
    return c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20;
  });
  if (!plain) {
    *out += boost::json::serialize(boost::json::string_view(s.data(), s.size()));
    return;
  }
  *out += '"';
  out->append(s);
  *out += '"';
}

// `imported`: the change of a bulk import, marked "import": true.
// *before_span: where the before-image is in the result; *after_offset:
// where the after-image starts (ChangeRecord::after_offset).
std::string Envelope(Lsn lsn, ChangeOp op, std::string_view container, std::string_view pk,
                     std::string_view id, uint64_t ts_ms, bool imported,
                     std::optional<std::string_view> before, std::optional<std::string_view> after,
                     kf::ImageSpan* before_span, size_t* after_offset) {
  std::string out;
  // The field names, numbers and the op take under 160 bytes; strings that
  // need escaping grow it once.
  out.reserve(160 + container.size() + pk.size() + id.size() + (before ? before->size() : 4) +
              (after ? after->size() : 4));
  out += "{\"lsn\":";
  AppendDecimal(&out, lsn);
  out += ",\"op\":\"";
  out += ChangeOpName(op);
  out += "\",\"container\":";
  AppendJsonString(&out, container);
  out += ",\"partitionKey\":";
  AppendJsonString(&out, pk);
  out += ",\"id\":";
  AppendJsonString(&out, id);
  out += ",\"ts\":";
  AppendDecimal(&out, ts_ms);
  if (imported) out += ",\"import\":true";
  out += ",\"before\":";
  before_span->offset = out.size();
  out += before ? *before : "null";
  before_span->size = out.size() - before_span->offset;
  out += ",\"after\":";
  *after_offset = out.size();
  out += after ? *after : "null";
  out += '}';
  return out;
}

// The records of a WriteBatch of Puts and Deletes, to be written again in
// (column family, key) order.
class BatchRecords : public rocksdb::WriteBatch::Handler {
 public:
  struct Record {
    bool is_delete;
    uint64_t head;         // the key's first 8 bytes, big-endian, zero-padded
    rocksdb::Slice key;    // into the batch that was iterated
    rocksdb::Slice value;  // likewise
  };

  // Bytewise key order, mostly decided by the heads without reading keys.
  static bool KeyLess(const Record& a, const Record& b) {
    if (a.head != b.head) return a.head < b.head;
    return a.key.compare(b.key) < 0;
  }

  rocksdb::Status PutCF(uint32_t cf, const rocksdb::Slice& key,
                        const rocksdb::Slice& value) override {
    records[cf].push_back(Record{false, Head(key), key, value});
    return rocksdb::Status::OK();
  }
  rocksdb::Status DeleteCF(uint32_t cf, const rocksdb::Slice& key) override {
    records[cf].push_back(Record{true, Head(key), key, rocksdb::Slice()});
    return rocksdb::Status::OK();
  }
  // Any other kind of record (none is written here) makes Iterate() fail.

  // By column family id, each in batch order.
  std::map<uint32_t, std::vector<Record>> records;

 private:
  static uint64_t Head(const rocksdb::Slice& key) {
    uint64_t head = 0;
    const size_t n = std::min<size_t>(key.size(), 8);
    for (size_t i = 0; i < n; ++i) head |= uint64_t(uint8_t(key[i])) << (56 - 8 * i);
    return head;
  }
};

using IndexValues = std::vector<std::optional<std::string>>;

Status CorruptItem(std::string_view id) {
  return Status(ErrorCode::kStorageError, "corrupt stored item " + std::string(id));
}

// The version of an item the store holds (or its absence). Its JSON is
// parsed at most once, when a step first needs it.
class StoredVersion {
 public:
  // `value`: the stored value (key_format::ItemValue) of item `id`, nullopt
  // when there is none. Views `value` and `id`, which must outlive it.
  static Result<StoredVersion> Decode(const std::optional<std::string>& value,
                                      std::string_view id) {
    StoredVersion stored(id);
    if (!value) return stored;
    if (!kf::DecodeItemValue(*value, &stored.lsn_, &stored.json_)) return CorruptItem(id);
    stored.exists_ = true;
    return stored;
  }

  bool exists() const { return exists_; }
  Lsn lsn() const { return lsn_; }                 // 0 when absent
  std::string_view json() const { return json_; }  // with system properties; empty when absent

  // The item as ParseJson() reads it, which must be an object.
  Result<const boost::json::object*> Object() {
    Parse();
    if (!value_ || legacy_ || !value_->is_object()) return CorruptItem(id_);
    return &value_->as_object();
  }
  // Hands over what Object() reads, for a step that changes it (the last to
  // read the item).
  Result<boost::json::value> TakeObject() {
    if (Result<const boost::json::object*> object = Object(); !object.ok()) {
      return object.status();
    }
    boost::json::value taken = std::move(*value_);
    value_.reset();
    return taken;
  }
  // The item as its index entries were made of it: what ParseJson() reads
  // or, for an item a version before the invalid_number check stored with a
  // bare Infinity, what ParseLegacyJson() reads (`*legacy` true: no reader
  // could parse the stored text).
  Result<const boost::json::value*> ForIndexes(bool* legacy) {
    Parse();
    if (!value_) return CorruptItem(id_);
    *legacy = legacy_;
    return &*value_;
  }

 private:
  explicit StoredVersion(std::string_view id) : id_(id) {}

  void Parse() {
    if (parsed_) return;
    parsed_ = true;
    Result<boost::json::value> value = ParseJson(json_);
    if (!value.ok()) {
      value = ParseLegacyJson(json_);
      legacy_ = true;
    }
    if (value.ok()) value_ = std::move(*value);
  }

  std::string_view id_;
  bool exists_ = false;
  Lsn lsn_ = 0;
  std::string_view json_;
  bool parsed_ = false;
  bool legacy_ = false;
  std::optional<boost::json::value> value_;  // nullopt: unread, taken or unreadable
};

// The id `op` writes in partition `pk`: the op's or its body's, which must
// agree, as must the body's partition key; an op that writes a version must
// have a body.
Result<std::string> OpId(const std::string& pk, const WriteOp& op) {
  std::string id = op.id;
  if (op.item) {
    if (id.empty()) id = op.item->id;
    if (id != op.item->id) {
      return Status(ErrorCode::kInvalidId,
                    "op id '" + id + "' differs from the body's id '" + op.item->id + "'");
    }
    if (op.item->partition_key != pk) {
      return Status(ErrorCode::kPartitionKeyMismatch,
                    "the item's partition key '" + op.item->partition_key +
                        "' differs from the request's ('" + pk + "')");
    }
  } else if (op.kind == WriteOpKind::kCreate || op.kind == WriteOpKind::kUpsert ||
             op.kind == WriteOpKind::kReplace) {
    return Status(ErrorCode::kInvalidItem, "the operation needs an item body");
  }
  if (Status s = ValidateId(id); !s.ok()) return s;
  return id;
}

// The op's own conditions, in this order: skip_if_exists, who may write
// (MayWrite), if_exists, source_lsn and if_match. nullopt: the op goes on;
// a status: the op does nothing and answers it.
Result<std::optional<int>> CheckConditions(const ContainerSpec& spec, const std::string& pk,
                                           const WriteOp& op, const std::string& id,
                                           const StoredVersion& stored) {
  const bool exists = stored.exists();
  if (exists && op.skip_if_exists && op.kind == WriteOpKind::kCreate) {
    return std::optional<int>(409);  // already there: left as it is
  }
  if (op.kind != WriteOpKind::kRead) {
    Status allowed =
        MayWrite(op.origin, spec, pk, id,
                 op.item ? std::optional<std::string_view>(op.item->body_json) : std::nullopt,
                 exists ? std::optional<std::string_view>(stored.json()) : std::nullopt);
    if (!allowed.ok()) return allowed;
  }
  if (!exists && op.if_exists &&
      (op.kind == WriteOpKind::kReplace || op.kind == WriteOpKind::kDelete ||
       op.kind == WriteOpKind::kPatch)) {
    return std::optional<int>(404);  // nothing to do
  }
  if (exists && op.source_lsn && op.kind == WriteOpKind::kUpsert) {
    // From the text: a view's copy is otherwise never parsed here.
    if (SourceLsnOf(stored.json()) >= *op.source_lsn) {
      return std::optional<int>(412);  // superseded by a newer source version
    }
  }
  if (op.if_match) {
    if (!exists) {
      return Status(ErrorCode::kPreconditionFailed,
                    "item '" + id + "' does not exist, so If-Match cannot hold");
    }
    if (!EtagMatches(*op.if_match, stored.lsn())) {
      return Status(ErrorCode::kPreconditionFailed,
                    "item '" + id + "' has etag " + EtagOf(stored.lsn()) + ", not " + *op.if_match);
    }
  }
  return std::optional<int>();
}

// conflict for a create of an existing item, not_found for any other op but
// an upsert of a missing one.
Status CheckExistence(WriteOpKind kind, const std::string& id, bool exists) {
  if (kind == WriteOpKind::kCreate) {
    if (exists) return Status(ErrorCode::kConflict, "item '" + id + "' already exists");
  } else if (kind != WriteOpKind::kUpsert && !exists) {
    return Status(ErrorCode::kNotFound, "item '" + id + "' does not exist");
  }
  return Status::Ok();
}

// The HTTP status of an op that succeeded.
int SuccessStatus(WriteOpKind kind, bool existed) {
  switch (kind) {
    case WriteOpKind::kCreate:
    case WriteOpKind::kUpsert:
      return existed ? 200 : 201;
    case WriteOpKind::kDelete:
      return 204;
    case WriteOpKind::kReplace:
    case WriteOpKind::kPatch:
    case WriteOpKind::kRead:
      return 200;
  }
  return 200;
}

// A patched item without its store properties (derived '_' fields stay),
// and its index values.
struct PatchedItem {
  std::string json;
  IndexValues index_values;
};

// Applies the op's patch to the stored version, which it takes over.
Result<PatchedItem> Patch(const ContainerSpec& spec, const WriteOp& op, StoredVersion& stored,
                          size_t max_item_bytes) {
  Result<boost::json::value> item = stored.TakeObject();
  if (!item.ok()) return item.status();
  StripStoreProperties(item->as_object());
  if (Status s = ApplyPatch(op.patch, *item); !s.ok()) return s;
  PatchedItem patched;
  patched.json = boost::json::serialize(*item);
  if (Status s =
          CheckItemSize(item->as_object(), patched.json.size(), max_item_bytes, "the patched item");
      !s.ok()) {
    return s;
  }
  patched.index_values = ExtractIndexValues(spec, *item);
  return patched;
}

}  // namespace

bool CommitPipeline::SortedByKey(const rocksdb::WriteBatch& batch, rocksdb::WriteBatch* sorted) {
  if (cf_handles_.empty()) {
    cf_handles_[db_->meta()->GetID()] = db_->meta();
    cf_handles_[db_->feed()->GetID()] = db_->feed();
    for (const ContainerHandle& c : db_->containers()) {
      cf_handles_[c.items->GetID()] = c.items;
      for (const IndexHandle& index : c.indexes) cf_handles_[index.cf->GetID()] = index.cf;
    }
  }
  BatchRecords records;
  if (!batch.Iterate(&records).ok()) return false;
  for (auto& [cf, run] : records.records) {
    auto handle = cf_handles_.find(cf);
    if (handle == cf_handles_.end()) return false;
    // The feed's records (LSN keys) come in order already.
    if (!std::is_sorted(run.begin(), run.end(), BatchRecords::KeyLess)) {
      std::stable_sort(run.begin(), run.end(), BatchRecords::KeyLess);
    }
    for (const BatchRecords::Record& r : run) {
      rocksdb::Status s = r.is_delete ? sorted->Delete(handle->second, r.key)
                                      : sorted->Put(handle->second, r.key, r.value);
      if (!s.ok()) return false;
    }
  }
  return true;
}

// Evaluates the requests of one group into one WriteBatch.
class CommitPipeline::GroupBuilder {
 public:
  // `collect_records`: keep each change's record for the commit listeners
  // (room is made for `expected_changes` of them at once).
  // `batch`: empty; the group is added to it. `feed_batch`, when given: empty
  // and another batch; the change records go there instead (an import's,
  // whose other records are then sorted into it: SortedByKey()).
  GroupBuilder(RocksDatabase* db, const StoreOptions& options, Lsn next_lsn, uint64_t ts_ms,
               bool collect_records, size_t expected_changes, rocksdb::WriteBatch* batch,
               rocksdb::WriteBatch* feed_batch = nullptr)
      : db_(db),
        options_(options),
        next_lsn_(next_lsn),
        ts_ms_(ts_ms),
        records_(collect_records ? std::make_shared<std::vector<ChangeRecord>>() : nullptr),
        batch_(batch),
        feed_batch_(feed_batch) {
    if (records_) records_->reserve(expected_changes);
  }

  // Adds every one of `requests` (and `view`'s watermark, when given) to the
  // batch, or leaves the batch untouched and returns the failure.
  WriteResult Add(std::span<const WriteRequest> requests, const ViewWrite* view) {
    WriteResult result;
    batch_->SetSavePoint();
    if (feed_batch_ != nullptr) feed_batch_->SetSavePoint();
    undo_.clear();
    request_changes_.clear();
    const Lsn first_lsn = next_lsn_;
    const uint64_t first_feed_bytes = feed_bytes_;
    const size_t first_record = records_ ? records_->size() : 0;
    size_t op_index = 0;
    for (const WriteRequest& request : requests) {
      Status s;
      const ContainerHandle* container = db_->Find(request.container);
      if (container == nullptr) {
        s = Status(ErrorCode::kContainerNotFound,
                   "container '" + request.container + "' does not exist");
      } else if (request.ops.empty() || request.ops.size() > kMaxBatchOperations) {
        s = Status(ErrorCode::kTooManyOperations,
                   "a request holds 1 to " + std::to_string(kMaxBatchOperations) +
                       " operations, not " + std::to_string(request.ops.size()));
      }
      for (size_t i = 0; s.ok() && i < request.ops.size(); ++i) {
        OpResult op_result;
        s = Apply(*container, request.partition_key, request.ops[i], &op_result);
        if (!s.ok()) break;
        ++op_index;
        if (op_result.lsn != 0) result.last_lsn = op_result.lsn;
        result.results.push_back(std::move(op_result));
      }
      if (!s.ok()) {
        batch_->RollbackToSavePoint();
        if (feed_batch_ != nullptr) feed_batch_->RollbackToSavePoint();
        for (auto it = undo_.rbegin(); it != undo_.rend(); ++it) {
          if (it->second)
            overlay_[it->first] = *it->second;
          else
            overlay_.erase(it->first);
        }
        next_lsn_ = first_lsn;
        feed_bytes_ = first_feed_bytes;
        if (records_) records_->resize(first_record);
        WriteResult failed;
        failed.status = std::move(s);
        failed.failed_index = static_cast<int>(op_index);
        return failed;
      }
    }
    if (view != nullptr) {
      batch_->Put(db_->meta(), std::string(kf::kMetaConsumerPrefix) + view->consumer,
                  kf::EncodeU64(view->consumer_acked));
    }
    batch_->PopSavePoint();
    if (feed_batch_ != nullptr) feed_batch_->PopSavePoint();
    for (auto& [container, op, pk, id, record] : request_changes_) {
      ++changes_[container][static_cast<size_t>(op) - 1];
      written_.push_back({container, *pk, std::move(id), record});
    }
    return result;
  }

  // Looks up the items `requests` will write, a few dozen keys per RocksDB
  // MultiGet, before any is added: Apply() then finds them in the overlay
  // instead of reading them one by one (an import group holds thousands).
  // Stops once StoreOptions::import_prefetch_bytes of stored versions are
  // held (replaced items can be large); the rest are read when applied, as
  // are keys whose read failed.
  void Prefetch(std::span<const WriteRequest> requests) {
    struct Wanted {
      const ContainerHandle* container;
      std::string overlay_key;  // OverlayKey(): the container's name, '\0', the item key
      rocksdb::Slice key() const {
        const size_t prefix = container->spec.name.size() + 1;
        return rocksdb::Slice(overlay_key.data() + prefix, overlay_key.size() - prefix);
      }
    };
    std::vector<Wanted> wanted;
    for (const WriteRequest& request : requests) {
      const ContainerHandle* container = db_->Find(request.container);
      if (container == nullptr) continue;
      for (const WriteOp& op : request.ops) {
        Result<std::string> id = OpId(request.partition_key, op);
        if (id.ok()) {
          wanted.push_back(
              {container, OverlayKey(*container, kf::ItemKey(request.partition_key, *id))});
        }
      }
    }
    // By container, and within one by item key: MultiGet's sorted input.
    std::sort(wanted.begin(), wanted.end(),
              [](const Wanted& a, const Wanted& b) { return a.overlay_key < b.overlay_key; });
    overlay_.reserve(overlay_.size() + wanted.size());
    size_t held = 0;
    std::vector<rocksdb::Slice> keys;
    std::vector<rocksdb::PinnableSlice> values(kPrefetchKeys);
    std::vector<rocksdb::Status> statuses(kPrefetchKeys);
    for (size_t first = 0; first < wanted.size() && held < options_.import_prefetch_bytes;) {
      const ContainerHandle* container = wanted[first].container;
      keys.clear();
      size_t end = first;
      while (end < wanted.size() && keys.size() < kPrefetchKeys &&
             wanted[end].container == container) {
        keys.push_back(wanted[end++].key());
      }
      db_->db()->MultiGet(rocksdb::ReadOptions(), container->items, keys.size(), keys.data(),
                          values.data(), statuses.data(), /*sorted_input=*/true);
      for (size_t i = 0; i < keys.size(); ++i) {
        Value value;
        if (statuses[i].ok()) {
          value = values[i].ToString();
          held += value->size();
        }
        values[i].Reset();
        if (statuses[i].ok() || statuses[i].IsNotFound()) {
          overlay_.emplace(std::move(wanted[first + i].overlay_key), std::move(value));
        }
      }
      first = end;
    }
  }

  // The records of the added requests: all of them, or all but their
  // change records when a feed batch was given.
  rocksdb::WriteBatch* batch() { return batch_; }
  // Whether the added requests wrote anything (reads alone write nothing).
  bool wrote() const {
    return batch_->Count() > 0 || (feed_batch_ != nullptr && feed_batch_->Count() > 0);
  }
  // Changes of the requests added so far, by container index and op.
  const std::map<size_t, std::array<uint64_t, 3>>& changes() const { return changes_; }
  // The item of each change of the added requests, in order: an item (and
  // a partition) changed n times is listed n times, since QueryCache and
  // ItemGenerations count changes.
  struct WrittenItem {
    size_t container;
    std::string partition_key, id;
    // Its change record's index in records(); kNoRecord when they are not
    // collected.
    size_t record;
  };
  static constexpr size_t kNoRecord = SIZE_MAX;
  const std::vector<WrittenItem>& written() const { return written_; }
  Lsn next_lsn() const { return next_lsn_; }
  // Bytes of change records (key + value) in the batch.
  uint64_t feed_bytes() const { return feed_bytes_; }
  // The change records of the added requests, in LSN order; null unless
  // collected.
  const std::shared_ptr<std::vector<ChangeRecord>>& records() const { return records_; }

 private:
  using Value = std::optional<std::string>;  // nullopt: absent
  // Prefetch(): keys per MultiGet (RocksDB batches 32 at a time).
  static constexpr size_t kPrefetchKeys = 32;

  Result<Value> Lookup(const ContainerHandle& c, const std::string& key) {
    std::string overlay_key = OverlayKey(c, key);
    auto it = overlay_.find(overlay_key);
    if (it != overlay_.end()) return it->second;
    std::string value;
    auto s = db_->db()->Get(rocksdb::ReadOptions(), c.items, key, &value);
    if (s.IsNotFound()) return Value();
    if (!s.ok()) return FromRocks(s, ErrorCode::kStorageError, "read before write");
    return Value(std::move(value));
  }

  void Remember(const ContainerHandle& c, const std::string& key, Value value) {
    auto [it, added] = overlay_.try_emplace(OverlayKey(c, key));
    undo_.emplace_back(it->first,
                       added ? std::nullopt : std::optional<Value>(std::move(it->second)));
    it->second = std::move(value);
  }

  static std::string OverlayKey(const ContainerHandle& c, const std::string& key) {
    std::string k = c.spec.name;
    k.push_back('\0');
    k += key;
    return k;
  }

  // Evaluates one op against the store as the group has changed it so far
  // and adds what it writes to the batch.
  Status Apply(const ContainerHandle& c, const std::string& pk, const WriteOp& op, OpResult* out) {
    Result<std::string> id = OpId(pk, op);
    if (!id.ok()) return id.status();
    const std::string key = kf::ItemKey(pk, *id);
    Result<Value> value = Lookup(c, key);
    if (!value.ok()) return value.status();
    Result<StoredVersion> stored = StoredVersion::Decode(*value, *id);
    if (!stored.ok()) return stored.status();
    Result<std::optional<int>> skipped = CheckConditions(c.spec, pk, op, *id, *stored);
    if (!skipped.ok()) return skipped.status();
    if (*skipped) {
      out->http_status = **skipped;
      return Status::Ok();
    }
    if (Status s = CheckExistence(op.kind, *id, stored->exists()); !s.ok()) return s;
    out->http_status = SuccessStatus(op.kind, stored->exists());
    if (op.kind == WriteOpKind::kRead) {
      out->item_json.assign(stored->json());
      out->item_lsn = stored->lsn();
      return Status::Ok();
    }
    return Write(c, pk, *id, key, op, *stored, out);
  }

  // Adds a create, upsert, replace, delete or patch that passed its checks:
  // the item's new version (or its deletion), its index entries and its
  // change record.
  Status Write(const ContainerHandle& c, const std::string& pk, const std::string& id,
               const std::string& key, const WriteOp& op, StoredVersion& stored, OpResult* out) {
    // The old version's index values, read before a patch takes it over.
    IndexValues old_index_values(c.indexes.size());
    bool before_unreadable = false;
    if (!c.indexes.empty() && stored.exists()) {
      // An item an older version stored with an Infinity can still be
      // replaced or deleted: its index entries are found again, and the
      // change record gets no before-image no reader could parse.
      Result<const boost::json::value*> old_item = stored.ForIndexes(&before_unreadable);
      if (!old_item.ok()) return old_item.status();
      old_index_values = ExtractIndexValues(c.spec, **old_item);
    }
    std::optional<PatchedItem> patched;
    if (op.kind == WriteOpKind::kPatch) {
      Result<PatchedItem> p = Patch(c.spec, op, stored, options_.max_item_bytes);
      if (!p.ok()) return p.status();
      patched = std::move(*p);
    }

    const Lsn lsn = next_lsn_++;
    const bool is_delete = op.kind == WriteOpKind::kDelete;
    std::string stored_value;
    std::optional<std::string_view> after;  // in stored_value
    if (!is_delete) {
      std::string_view item_json;
      stored_value =
          StoredItemValue(patched ? patched->json : op.item->body_json, lsn, ts_ms_, &item_json);
      after = item_json;
    }
    const IndexValues none(is_delete ? c.indexes.size() : 0);
    WriteIndexEntries(c, pk, id, old_index_values,
                      is_delete ? none : (patched ? patched->index_values : op.item->index_values));

    const ChangeOp change_op =
        is_delete ? ChangeOp::kDelete : (stored.exists() ? ChangeOp::kReplace : ChangeOp::kCreate);
    std::optional<std::string_view> before;
    if (stored.exists() && options_.before_images && !before_unreadable) before = stored.json();
    AppendChange(c, pk, id, lsn, change_op, op.imported, before, after);

    if (is_delete) {
      batch_->Delete(c.items, key);
      Remember(c, key, std::nullopt);
    } else {
      batch_->Put(c.items, key, stored_value);
      if (!op.imported) out->item_json = std::string(*after);  // an import reports counts only
      Remember(c, key, std::move(stored_value));
      out->item_lsn = lsn;
    }
    out->lsn = lsn;
    return Status::Ok();
  }

  // Removes the index entries of the old version and adds the new ones
  // (`new_values` empty for no index of a container without any).
  void WriteIndexEntries(const ContainerHandle& c, const std::string& pk, const std::string& id,
                         const IndexValues& old_values, const IndexValues& new_values) {
    for (size_t i = 0; i < c.indexes.size(); ++i) {
      if (old_values[i] == new_values[i]) continue;
      if (old_values[i]) batch_->Delete(c.indexes[i].cf, kf::IndexKey(*old_values[i], pk, id));
      if (new_values[i]) batch_->Put(c.indexes[i].cf, kf::IndexKey(*new_values[i], pk, id), "");
    }
  }

  // Adds the change record of `lsn` to the batch (and to the records
  // collected for the listeners).
  void AppendChange(const ContainerHandle& c, const std::string& pk, const std::string& id, Lsn lsn,
                    ChangeOp change_op, bool imported, std::optional<std::string_view> before,
                    std::optional<std::string_view> after) {
    kf::ImageSpan before_span;
    size_t after_offset = 0;
    std::string envelope = Envelope(lsn, change_op, c.spec.name, pk, id, ts_ms_, imported, before,
                                    after, &before_span, &after_offset);
    std::string feed_value =
        kf::FeedValue(ts_ms_, change_op, c.spec.name, pk, id, envelope,
                      before ? std::optional<kf::ImageSpan>(before_span) : std::nullopt);
    feed_bytes_ += 8 + feed_value.size();
    (feed_batch_ != nullptr ? feed_batch_ : batch_)->Put(db_->feed(), kf::FeedKey(lsn), feed_value);
    size_t record = kNoRecord;
    if (records_) {
      record = records_->size();
      records_->push_back(
          ChangeRecord{lsn, ts_ms_, change_op, c.spec.name, pk, id, std::move(envelope)});
      records_->back().after_offset = after_offset;
    }
    request_changes_.push_back({c.index, change_op, &pk, id, record});
  }

  RocksDatabase* const db_;
  const StoreOptions& options_;
  Lsn next_lsn_;
  const uint64_t ts_ms_;
  uint64_t feed_bytes_ = 0;
  const std::shared_ptr<std::vector<ChangeRecord>> records_;
  struct RequestChange {
    size_t container;
    ChangeOp op;
    const std::string* partition_key;  // the request's, alive while it is added
    std::string id;
    size_t record;  // WrittenItem::record
  };
  std::vector<RequestChange> request_changes_;         // of the request being added
  std::map<size_t, std::array<uint64_t, 3>> changes_;  // of the added requests
  std::vector<WrittenItem> written_;                   // of the added requests
  rocksdb::WriteBatch* const batch_;
  rocksdb::WriteBatch* const feed_batch_;  // null: the change records go to batch_
  std::unordered_map<std::string, Value> overlay_;
  std::vector<std::pair<std::string, std::optional<Value>>> undo_;
};

CommitPipeline::CommitPipeline(RocksDatabase* db, const StoreOptions& options, Lsn head_lsn,
                               QueryCache* cache, ItemGenerations* item_generations,
                               SpaceReserve* space)
    : db_(db),
      options_(options),
      cache_(cache),
      item_generations_(item_generations),
      space_(space),
      churn_(db),
      head_(head_lsn),
      written_head_(head_lsn),
      changes_by_container_(
          std::make_unique<std::array<std::atomic<uint64_t>, 3>[]>(db->containers().size())) {}

std::array<uint64_t, 3> CommitPipeline::changes_of(size_t container_index) const {
  const auto& counts = changes_by_container_[container_index];
  return {counts[0].load(), counts[1].load(), counts[2].load()};
}

CommitPipeline::~CommitPipeline() { Stop(); }

void CommitPipeline::Start() {
  thread_ = std::thread([this] {
    SetThreadName("feedd-commit");
    Run();
  });
}

void CommitPipeline::Stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  head_.Clear();  // never fire into an owner that is going away
}

void CommitPipeline::Submit(WriteRequest request, WriteCallback done) {
  Pending pending;
  pending.parts.requests.push_back(std::move(request));
  pending.done = std::move(done);
  Enqueue(std::move(pending));
}

void CommitPipeline::SubmitView(ViewWrite view, WriteCallback done) {
  Pending pending;
  pending.parts = std::move(view);
  pending.is_view = true;
  pending.sync = false;
  pending.done = std::move(done);
  Enqueue(std::move(pending));
}

void CommitPipeline::SubmitImport(ImportBatch batch, ImportCallback done) {
  Pending pending;
  pending.parts.requests = std::move(batch.requests);
  pending.is_import = true;
  pending.sync = batch.sync;
  pending.import_done = std::move(done);
  Enqueue(std::move(pending));
}

void CommitPipeline::Fail(Pending& pending, const Status& status) {
  if (pending.is_import) {
    ImportResult result;
    result.status = status;
    pending.import_done(std::move(result));
    return;
  }
  WriteResult result;
  result.status = status;
  pending.done(std::move(result));
}

bool CommitPipeline::Writes(const Pending& pending) {
  if (pending.is_view) return true;  // the watermark at least
  for (const WriteRequest& request : pending.parts.requests) {
    for (const WriteOp& op : request.ops) {
      if (op.kind != WriteOpKind::kRead) return true;
    }
  }
  return false;
}

void CommitPipeline::Enqueue(Pending pending) {
  Status refused;
  if (space_ != nullptr && Writes(pending)) refused = space_->Admit();
  if (refused.ok()) {
    if (options_.on_queue_wait) pending.queued = std::chrono::steady_clock::now();
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) {
      refused = Status(ErrorCode::kUnavailable, "the store is shutting down");
    } else if (permanent_) {
      refused = Status(ErrorCode::kUnavailable,
                       "the store refuses writes after a storage failure: " + failure_.message());
      ++requests_failed_;
    } else if (!failure_.ok()) {
      refused = Status(ErrorCode::kUnavailable,
                       "the store is recovering from a storage failure: " + failure_.message());
      ++requests_failed_;
    } else {
      queue_.push_back(std::move(pending));
    }
  }
  if (!refused.ok()) return Fail(pending, refused);
  wake_.notify_one();
}

Status CommitPipeline::health() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (failure_.ok()) return failure_;
  if (permanent_) {
    return Status(
        ErrorCode::kStorageError,
        "a RocksDB write failed and RocksDB cannot resume; restart feedd: " + failure_.message());
  }
  return Status(ErrorCode::kUnavailable,
                "recovering from a failed RocksDB write: " + failure_.message());
}

uint64_t CommitPipeline::OnHeadReached(Lsn lsn, std::function<void()> fn) {
  return head_.Watch(lsn, std::move(fn));
}

void CommitPipeline::CancelHeadWatch(uint64_t token) { head_.Cancel(token); }

uint64_t CommitPipeline::AddCommitListener(CommitListener listener) {
  std::lock_guard<std::mutex> lock(listeners_mutex_);
  uint64_t token = next_listener_++;
  listeners_.emplace(token, std::move(listener));
  has_listeners_ = true;
  return token;
}

void CommitPipeline::RemoveCommitListener(uint64_t token) {
  // Listeners run under the mutex: once it is taken here, none runs.
  std::lock_guard<std::mutex> lock(listeners_mutex_);
  listeners_.erase(token);
  has_listeners_ = !listeners_.empty();
}

void CommitPipeline::Run() {
  std::vector<Pending> group;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      while (queue_.empty()) {
        if (has_unsynced_ && failure_.ok()) {
          // Give a group that syncs anyway the chance to cover them
          // (StoreOptions::idle_sync_delay).
          const auto due = unsynced_since_ + options_.idle_sync_delay;
          if (!stopping_ && std::chrono::steady_clock::now() < due) {
            wake_.wait_until(lock, due);
            continue;
          }
          lock.unlock();
          (void)SyncUnsynced();  // on failure, failure_ is set
          lock.lock();
          continue;
        }
        if (stopping_) return;  // everything is committed
        if (failure_.ok() || permanent_) {
          wake_.wait(lock);
        } else if (wake_.wait_for(lock, std::chrono::milliseconds(kResumeIntervalMs)) ==
                   std::cv_status::timeout) {
          lock.unlock();
          TryRecover();
          lock.lock();
        }
      }
      size_t bytes = 0;
      // An import's batch is a group of its own (its own sync).
      while (!queue_.empty() && group.size() < options_.max_group_requests &&
             (group.empty() || bytes < options_.max_group_bytes) &&
             (group.empty() || (!group.front().is_import && !queue_.front().is_import))) {
        for (const auto& request : queue_.front().parts.requests) {
          for (const auto& op : request.ops) bytes += op.item ? op.item->body_json.size() : 256;
        }
        group.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
    }
    ReportQueueWaits(group);
    CommitGroup(group);
    group.clear();
  }
}

void CommitPipeline::ReportQueueWaits(const std::vector<Pending>& group) {
  if (!options_.on_queue_wait || group.front().is_import) return;
  const auto now = std::chrono::steady_clock::now();
  for (const Pending& pending : group) {
    options_.on_queue_wait(std::chrono::duration<double>(now - pending.queued).count());
  }
}

void CommitPipeline::TryRecover() {
  Status failure;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (failure_.ok() || permanent_) return;
    failure = failure_;
  }
  rocksdb::Status s = db_->db()->Resume();
  if (s.IsBusy()) return;  // RocksDB is recovering by itself
  if (!s.ok()) {
    if (s.severity() >= rocksdb::Status::Severity::kFatalError) {
      FEEDD_LOG(kError, "storage") << "RocksDB cannot resume after '" << failure.message()
                                   << "': " << s.ToString() << "; writes are refused until restart";
      std::lock_guard<std::mutex> lock(mutex_);
      permanent_ = true;
    } else {
      FEEDD_LOG_EVERY_N_SEC(kWarning, "storage", 60)
          << "RocksDB has not resumed yet: " << s.ToString();
    }
    return;
  }
  // Nothing of the failed group is visible, so the stored head is ours.
  Result<Lsn> stored = db_->ReadHeadLsn();
  if (!stored.ok()) {
    FEEDD_LOG_EVERY_N_SEC(kWarning, "storage", 60)
        << "after RocksDB resumed: " << stored.status().ToString();
    return;
  }
  if (*stored != written_head_) {
    // Part of the failed group is visible after all (never seen): its LSNs
    // must not be handed out again, and caches and counters missed it.
    FEEDD_LOG(kError, "storage") << "after RocksDB resumed, the stored head LSN is " << *stored
                                 << ", not " << written_head_
                                 << "; writes are refused until restart";
    std::lock_guard<std::mutex> lock(mutex_);
    permanent_ = true;
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    failure_ = Status::Ok();
  }
  // Resume() flushed the memtables: unsynced groups are durable now.
  if (has_unsynced_) PublishUnsynced();
  FEEDD_LOG(kInfo, "storage") << "RocksDB resumed after '" << failure.message()
                              << "': accepting writes again at LSN " << written_head_ + 1;
}

Status CommitPipeline::SyncUnsynced() {
  rocksdb::Status s = db_->db()->SyncWAL();
  if (!s.ok()) {
    Status failure = FromRocks(s, ErrorCode::kUnavailable, "syncing the WAL failed");
    FEEDD_LOG(kError, "storage") << failure.message() << "; refusing writes until RocksDB resumes";
    std::lock_guard<std::mutex> lock(mutex_);
    failure_ = failure;
    return failure;
  }
  PublishUnsynced();
  return Status::Ok();
}

void CommitPipeline::UpdateQueryCache(size_t container_index, const std::string& partition_key,
                                      const std::string& id,
                                      const std::shared_ptr<std::vector<ChangeRecord>>& records,
                                      size_t record) {
  if (!records || record >= records->size()) {
    return cache_->Invalidate(container_index, partition_key);
  }
  const ChangeRecord& change = (*records)[record];
  if (change.op == ChangeOp::kDelete) {
    return cache_->Update(container_index, partition_key, id, std::nullopt);
  }
  std::optional<std::string_view> after = change.KnownAfterImage();
  if (!after) return cache_->Invalidate(container_index, partition_key);
  cache_->Update(container_index, partition_key, id, after);
}

void CommitPipeline::PublishUnsynced() {
  {
    std::lock_guard<std::mutex> lock(listeners_mutex_);
    for (const CommittedChanges& records : unsynced_) {
      if (!records || records->empty()) continue;
      for (const auto& [token, listener] : listeners_) listener(records);
    }
  }
  unsynced_.clear();
  has_unsynced_ = false;
  head_.Advance(written_head_);
}

void CommitPipeline::CommitGroup(std::vector<Pending>& group) {
  // An import is a group of one Pending whose requests count one by one.
  const bool import = group.front().is_import;
  const size_t requests = import ? group.front().parts.requests.size() : group.size();
  Status failed = health();
  if (!failed.ok()) {
    requests_failed_ += requests;
    const Status unavailable(ErrorCode::kUnavailable, failed.message());
    for (Pending& pending : group) Fail(pending, unavailable);
    return;
  }

  last_ts_ms_ = std::max(last_ts_ms_, options_.clock->NowMillis());
  const Lsn first = written_head_ + 1;
  size_t reserve = 0;
  size_t expected_changes = 0;
  if (import) {
    // Per item: the stored item, its change record (the item again in the
    // envelope) and keys.
    for (const WriteRequest& request : group.front().parts.requests) {
      for (const WriteOp& op : request.ops) {
        if (op.item) reserve += 2 * op.item->body_json.size() + 256;
      }
      expected_changes += request.ops.size();
    }
  }
  rocksdb::WriteBatch ordinary;  // a few KiB: new for each group
  // An import's change records go straight to the batch that is written:
  // they come in LSN order, and only the other records need sorting.
  rocksdb::WriteBatch* const import_sorted = import ? import_sorted_.Take(reserve) : nullptr;
  // The records go to the listeners, and their after-images to the query cache.
  const bool collect_records = has_listeners_.load() || (cache_ != nullptr && cache_->enabled());
  GroupBuilder builder(db_, options_, first, last_ts_ms_, collect_records, expected_changes,
                       import ? import_batch_.Take(reserve) : &ordinary, import_sorted);
  std::vector<WriteResult> results;
  results.reserve(requests);
  if (import) {
    builder.Prefetch(group.front().parts.requests);
    for (const WriteRequest& request : group.front().parts.requests) {
      results.push_back(builder.Add(std::span<const WriteRequest>(&request, 1), nullptr));
    }
  } else {
    for (const Pending& pending : group) {
      results.push_back(
          builder.Add(pending.parts.requests, pending.is_view ? &pending.parts : nullptr));
    }
  }
  size_t committed_requests = 0;
  for (const WriteResult& result : results) {
    if (result.status.ok()) ++committed_requests;
  }
  requests_rejected_ += requests - committed_requests;

  const Lsn last = builder.next_lsn() - 1;
  // A group that needs no fsync (view writes alone, an unsynced import
  // batch) waits for the next synced group or the idle commit thread to
  // publish its records; should a crash come first, a view write's consumer
  // watermark goes with it and the processor applies the same changes again.
  const bool sync = options_.sync && std::any_of(group.begin(), group.end(),
                                                 [](const Pending& p) { return p.sync; });
  bool synced = false;  // a write with an fsync: everything before it is durable too
  if (builder.wrote()) {
    if (last >= first) {
      builder.batch()->Put(db_->meta(), key_format::kMetaHeadLsn, key_format::EncodeU64(last));
    }
    rocksdb::WriteOptions wo;
    wo.sync = sync;
    auto started = std::chrono::steady_clock::now();
    // An import's keys are scattered over the memtables; written in key
    // order they go in several times faster (the skip list's last insert
    // position is reused). Same records, one WriteBatch: the import's change
    // records, then its other records sorted.
    rocksdb::WriteBatch* written = builder.batch();
    if (import) {
      written = import_sorted;
      if (!SortedByKey(*builder.batch(), written)) {
        // The builder adds only Puts and Deletes of the store's column
        // families; should that ever change, the group fails whole, and
        // nothing of it is written.
        requests_rejected_ -= requests - committed_requests;
        requests_failed_ += requests;
        const Status unsortable(ErrorCode::kStorageError, "an import batch could not be sorted");
        FEEDD_LOG(kError, "storage") << unsortable.message();
        for (Pending& pending : group) Fail(pending, unsortable);
        return;
      }
    }
    rocksdb::Status s = db_->db()->Write(wo, written);
    if (options_.on_group_commit) {
      options_.on_group_commit(
          requests,
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    }
    if (!s.ok()) {
      requests_rejected_ -= requests - committed_requests;
      requests_failed_ += requests;
      Status failure = FromRocks(s, ErrorCode::kUnavailable, "write to RocksDB failed");
      FEEDD_LOG(kError, "storage")
          << failure.message() << "; refusing writes until RocksDB resumes";
      {
        std::lock_guard<std::mutex> lock(mutex_);
        failure_ = failure;
      }
      for (Pending& pending : group) Fail(pending, failure);
      return;
    }
    synced = sync;
    if (space_ != nullptr) space_->NoteWritten(written->GetDataSize());
    for (const auto& [index, counts] : builder.changes()) {
      for (size_t op = 0; op < 3; ++op) changes_by_container_[index][op] += counts[op];
      churn_.NoteCommitted(index, counts);
    }
    for (const auto& [index, pk, id, record] : builder.written()) {
      if (cache_ != nullptr) UpdateQueryCache(index, pk, id, builder.records(), record);
      if (item_generations_ == nullptr) continue;
      const uint64_t generation = item_generations_->Bump(index, pk, id);
      if (record != GroupBuilder::kNoRecord)
        (*builder.records())[record].item_generation = generation;
    }
    if (last >= first) {
      changes_committed_ += last - first + 1;
      feed_bytes_appended_ += builder.feed_bytes();
      written_head_ = last;
      if (!has_unsynced_) unsynced_since_ = std::chrono::steady_clock::now();
      unsynced_.push_back(builder.records());
      has_unsynced_ = true;
    }
  }
  // Published only once durable: readers of the feed, listeners and Kafka
  // never see a change that a crash could take back.
  if (has_unsynced_ && (synced || !options_.sync)) PublishUnsynced();
  // A synced import batch that wrote nothing still makes the earlier ones
  // durable before it is answered.
  if (has_unsynced_ && import && sync) {
    if (Status s = SyncUnsynced(); !s.ok()) {
      for (Pending& pending : group) Fail(pending, s);
      return;
    }
  }
  ++groups_committed_;
  requests_committed_ += committed_requests;
  if (import) {
    ImportResult result;
    result.results = std::move(results);
    group.front().import_done(std::move(result));
    return;
  }
  for (size_t i = 0; i < group.size(); ++i) group[i].done(std::move(results[i]));
}

}  // namespace feedd
