#include "storage/change_feed.h"

#include <rocksdb/convenience.h>
#include <rocksdb/write_batch.h>

#include "storage/key_format.h"
#include "util/logging.h"
#include "util/thread_name.h"

namespace feedd {
namespace {
namespace kf = key_format;
}  // namespace

ChangeFeed::ChangeFeed(RocksDatabase* db, const StoreOptions& options, std::function<Lsn()> head,
                       std::function<uint64_t()> appended_bytes)
    : db_(db),
      options_(options),
      head_(std::move(head)),
      appended_bytes_(std::move(appended_bytes)),
      truncated_before_(db->stored_truncated_before()) {}

ChangeFeed::~ChangeFeed() { Stop(); }

Status ChangeFeed::Load() {
  std::unique_ptr<rocksdb::Iterator> it(
      db_->db()->NewIterator(rocksdb::ReadOptions(), db_->meta()));
  const std::string prefix(kf::kMetaConsumerPrefix);
  std::lock_guard<std::mutex> lock(consumers_mutex_);
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    std::string_view value = it->value().ToStringView();
    Lsn acked;
    if (!kf::GetU64(&value, &acked))
      return Status(ErrorCode::kStorageError, "corrupt consumer record");
    consumers_[it->key().ToString().substr(prefix.size())] = acked;
  }
  if (!it->status().ok())
    return FromRocks(it->status(), ErrorCode::kStorageError, "load consumers");
  if (options_.retention_bytes > 0) {
    auto bytes = RecordBytes(truncated_before_.load(), head_() + 1);
    if (!bytes.ok()) return bytes.status();
    loaded_bytes_ = *bytes;
  }
  return Status::Ok();
}

Result<uint64_t> ChangeFeed::RecordBytes(Lsn from, Lsn to) const {
  const std::string upper = kf::FeedKey(to);
  rocksdb::Slice upper_slice(upper);
  rocksdb::ReadOptions ro;
  ro.iterate_upper_bound = &upper_slice;
  std::unique_ptr<rocksdb::Iterator> it(db_->db()->NewIterator(ro, db_->feed()));
  uint64_t bytes = 0;
  for (it->Seek(kf::FeedKey(from)); it->Valid(); it->Next()) {
    bytes += it->key().size() + it->value().size();
  }
  if (!it->status().ok()) return FromRocks(it->status(), ErrorCode::kStorageError, "feed size");
  return bytes;
}

uint64_t ChangeFeed::RetainedBytes() const {
  return loaded_bytes_ + appended_bytes_() - dropped_bytes_.load();
}

void ChangeFeed::Start() {
  thread_ = std::thread([this] {
    SetThreadName("feedd-retention");
    std::unique_lock<std::mutex> lock(thread_mutex_);
    while (!stopping_) {
      thread_wake_.wait_for(lock, std::chrono::milliseconds(options_.retention_interval_ms));
      if (stopping_) break;
      lock.unlock();
      Status s = EnforceRetention();
      if (!s.ok()) {
        FEEDD_LOG(kWarning, "feed") << "retention pass failed: " << s.ToString();
      }
      lock.lock();
    }
  });
}

void ChangeFeed::Stop() {
  {
    std::lock_guard<std::mutex> lock(thread_mutex_);
    stopping_ = true;
  }
  thread_wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Status ChangeFeed::Read(const FeedReadSpec& spec, FeedPage* page) const {
  page->records.clear();
  page->cut_by_bytes = false;
  const Lsn head = head_();
  const Lsn oldest = truncated_before_.load();
  if (spec.from < oldest) {
    return Status(ErrorCode::kLsnNotRetained, "LSN " + std::to_string(spec.from) +
                                                  " is no longer retained; the oldest is " +
                                                  std::to_string(oldest));
  }
  page->next = spec.from;
  if (spec.from > head || spec.limit == 0) return Status::Ok();

  const std::string upper = kf::FeedKey(head + 1);
  rocksdb::Slice upper_slice(upper);
  rocksdb::ReadOptions ro;
  ro.iterate_upper_bound = &upper_slice;
  std::unique_ptr<rocksdb::Iterator> it(db_->db()->NewIterator(ro, db_->feed()));
  size_t scanned = 0;
  uint64_t page_bytes = 0;
  for (it->Seek(kf::FeedKey(spec.from)); it->Valid(); it->Next()) {
    if (page->records.size() >= spec.limit || scanned >= spec.max_scanned) break;
    ++scanned;
    Lsn lsn;
    if (!kf::DecodeFeedKey(it->key().ToStringView(), &lsn)) {
      return Status(ErrorCode::kStorageError, "corrupt change-feed key");
    }
    if (spec.container) {
      std::string_view container;
      if (!kf::PeekFeedContainer(it->value().ToStringView(), &container)) {
        return Status(ErrorCode::kStorageError, "corrupt change record " + std::to_string(lsn));
      }
      if (container != *spec.container) {
        page->next = lsn + 1;
        continue;
      }
    }
    ChangeRecord record;
    record.lsn = lsn;
    if (!kf::DecodeFeedValue(it->value().ToStringView(), &record)) {
      return Status(ErrorCode::kStorageError, "corrupt change record " + std::to_string(lsn));
    }
    // Counted as handed out (a stored before-image may be a difference): a
    // page that would pass max_bytes ends before this record, which the
    // next starts with.
    const uint64_t record_bytes = record.envelope_json.size();
    if (spec.max_bytes != 0 && !page->records.empty() &&
        page_bytes + record_bytes > spec.max_bytes) {
      page->cut_by_bytes = true;
      break;
    }
    page_bytes += record_bytes;
    page->next = lsn + 1;
    page->records.push_back(std::move(record));
  }
  if (!it->status().ok()) return FromRocks(it->status(), ErrorCode::kStorageError, "read feed");
  // Retention may have run during the scan; never hand out a page with a hole.
  if (spec.from < truncated_before_.load()) {
    page->records.clear();
    return Status(ErrorCode::kLsnNotRetained,
                  "LSN " + std::to_string(spec.from) + " was dropped by retention during the read");
  }
  return Status::Ok();
}

Status ChangeFeed::PersistConsumer(const std::string& name, Lsn acked) {
  rocksdb::WriteOptions wo;
  wo.sync = options_.sync;
  auto s = db_->db()->Put(wo, std::string(kf::kMetaConsumerPrefix) + name, kf::EncodeU64(acked));
  return s.ok() ? Status::Ok() : FromRocks(s, ErrorCode::kStorageError, "persist consumer " + name);
}

Status ChangeFeed::RegisterConsumer(const std::string& name, Lsn acked) {
  if (name.empty()) return Status(ErrorCode::kInvalidRequest, "a consumer needs a name");
  std::lock_guard<std::mutex> lock(consumers_mutex_);
  auto it = consumers_.find(name);
  if (it != consumers_.end()) return Status::Ok();  // keep its progress
  if (acked + 1 < truncated_before_.load()) {
    return Status(ErrorCode::kLsnNotRetained, "consumer " + name + " starts after LSN " +
                                                  std::to_string(acked) +
                                                  ", which is no longer retained");
  }
  if (Status s = PersistConsumer(name, acked); !s.ok()) return s;
  consumers_[name] = acked;
  return Status::Ok();
}

Status ChangeFeed::AckConsumer(const std::string& name, Lsn acked) {
  std::lock_guard<std::mutex> lock(consumers_mutex_);
  auto it = consumers_.find(name);
  if (it == consumers_.end()) {
    return Status(ErrorCode::kNotFound, "consumer " + name + " is not registered");
  }
  if (acked <= it->second) return Status::Ok();  // acks only move forward
  if (Status s = PersistConsumer(name, acked); !s.ok()) return s;
  it->second = acked;
  return Status::Ok();
}

Status ChangeFeed::UnregisterConsumer(const std::string& name) {
  std::lock_guard<std::mutex> lock(consumers_mutex_);
  rocksdb::WriteBatch batch;
  batch.Delete(db_->meta(), std::string(kf::kMetaConsumerPrefix) + name);
  const std::string prefix = kf::MetaParkedPrefix(name);
  std::unique_ptr<rocksdb::Iterator> it(
      db_->db()->NewIterator(rocksdb::ReadOptions(), db_->meta()));
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    batch.Delete(db_->meta(), it->key());
  }
  if (!it->status().ok()) {
    return FromRocks(it->status(), ErrorCode::kStorageError, "unregister consumer " + name);
  }
  auto s = db_->db()->Write(rocksdb::WriteOptions(), &batch);
  if (!s.ok()) return FromRocks(s, ErrorCode::kStorageError, "unregister consumer " + name);
  consumers_.erase(name);
  return Status::Ok();
}

Status ChangeFeed::PutParked(const std::string& consumer, const ParkedRecord& parked) {
  rocksdb::WriteOptions wo;
  wo.sync = options_.sync;
  auto s = db_->db()->Put(wo, db_->meta(), kf::MetaParkedKey(consumer, parked.change.lsn),
                          kf::ParkedValue(parked.error, parked.change));
  return s.ok() ? Status::Ok()
                : FromRocks(s, ErrorCode::kStorageError, "park a change of " + consumer);
}

Status ChangeFeed::DeleteParked(const std::string& consumer, Lsn lsn) {
  rocksdb::WriteOptions wo;
  wo.sync = options_.sync;
  auto s = db_->db()->Delete(wo, db_->meta(), kf::MetaParkedKey(consumer, lsn));
  return s.ok() ? Status::Ok()
                : FromRocks(s, ErrorCode::kStorageError, "unpark a change of " + consumer);
}

Result<std::vector<ParkedRecord>> ChangeFeed::ListParked(const std::string& consumer) const {
  const std::string prefix = kf::MetaParkedPrefix(consumer);
  std::unique_ptr<rocksdb::Iterator> it(
      db_->db()->NewIterator(rocksdb::ReadOptions(), db_->meta()));
  std::vector<ParkedRecord> out;
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    ParkedRecord parked;
    if (!kf::DecodeParked(it->key().ToStringView(), it->value().ToStringView(), &parked.error,
                          &parked.change)) {
      return Status(ErrorCode::kStorageError, "corrupt parked record of " + consumer);
    }
    out.push_back(std::move(parked));
  }
  if (!it->status().ok())
    return FromRocks(it->status(), ErrorCode::kStorageError, "list parked changes of " + consumer);
  return out;
}

bool ChangeFeed::IsRegistered(const std::string& name) const {
  std::lock_guard<std::mutex> lock(consumers_mutex_);
  return consumers_.count(name) != 0;
}

void ChangeFeed::NoteAcked(const std::string& name, Lsn acked) {
  std::lock_guard<std::mutex> lock(consumers_mutex_);
  auto it = consumers_.find(name);
  if (it != consumers_.end() && acked > it->second) it->second = acked;
}

std::vector<ConsumerWatermark> ChangeFeed::Consumers() const {
  std::lock_guard<std::mutex> lock(consumers_mutex_);
  std::vector<ConsumerWatermark> out;
  for (const auto& [name, acked] : consumers_) out.push_back({name, acked});
  return out;
}

Result<ChangeFeed::Cutoff> ChangeFeed::RetentionCutoff(Lsn from, Lsn last) const {
  Cutoff cutoff{from, 0};
  if (options_.retention_ms == 0 && options_.retention_bytes == 0) return cutoff;

  uint64_t excess_bytes = 0;
  if (options_.retention_bytes > 0) {
    uint64_t size = RetainedBytes();
    if (size > options_.retention_bytes) excess_bytes = size - options_.retention_bytes;
  }
  const uint64_t now = options_.clock->NowMillis();
  const uint64_t min_ts =
      options_.retention_ms > 0 && now > options_.retention_ms ? now - options_.retention_ms : 0;

  std::unique_ptr<rocksdb::Iterator> it(
      db_->db()->NewIterator(rocksdb::ReadOptions(), db_->feed()));
  for (it->Seek(kf::FeedKey(from)); it->Valid(); it->Next()) {
    Lsn lsn;
    std::string_view value = it->value().ToStringView();
    uint64_t ts;
    if (!kf::DecodeFeedKey(it->key().ToStringView(), &lsn) || !kf::GetU64(&value, &ts)) {
      return Status(ErrorCode::kStorageError, "corrupt change record");
    }
    if (lsn > last) break;
    bool too_old = options_.retention_ms > 0 && ts < min_ts;
    bool too_big = cutoff.dropped_bytes < excess_bytes;
    if (!too_old && !too_big) break;
    cutoff.dropped_bytes += it->key().size() + it->value().size();
    cutoff.keep_from = lsn + 1;
  }
  if (!it->status().ok())
    return FromRocks(it->status(), ErrorCode::kStorageError, "retention scan");
  return cutoff;
}

Status ChangeFeed::EnforceRetention() {
  std::lock_guard<std::mutex> guard(retention_mutex_);
  // The last LSN retention may drop: none past the head or a registered
  // consumer's acknowledged LSN. The scan stops there, not where age and
  // size alone would: behind a slow consumer that is most of the feed,
  // every pass (at SF 1, 156 s of CPU in 18 minutes).
  Lsn last = head_();
  {
    std::lock_guard<std::mutex> lock(consumers_mutex_);
    for (const auto& [name, acked] : consumers_) last = std::min(last, acked);
  }
  const Lsn old = truncated_before_.load();
  auto cutoff = RetentionCutoff(old, last);
  if (!cutoff.ok()) return cutoff.status();
  const Lsn keep_from = cutoff->keep_from;
  if (keep_from <= old) return Status::Ok();

  // The truncation point alone drops the records: no reader reads below it.
  // A range tombstone would also hide them, but every feed file flushed
  // with one would span the dropped range, overlap the feed's older files
  // and have them merged, instead of moved down, by compaction (SF 1 with
  // feed.retention_mb: 2 GB compactions of the feed and write stalls).
  rocksdb::WriteBatch batch;
  batch.Put(db_->meta(), kf::kMetaFeedTruncatedBefore, kf::EncodeU64(keep_from));
  rocksdb::WriteOptions wo;
  wo.sync = options_.sync;
  // Publish the new truncation point first: readers re-check it after reading.
  truncated_before_.store(keep_from);
  auto s = db_->db()->Write(wo, &batch);
  if (!s.ok()) {
    truncated_before_.store(old);
    return FromRocks(s, ErrorCode::kStorageError, "retention delete");
  }
  dropped_bytes_ += cutoff->dropped_bytes;
  FEEDD_LOG(kInfo, "feed") << "retention dropped LSNs " << old << ".." << keep_from - 1;
  DeleteDroppedFiles(keep_from);
  return Status::Ok();
}

void ChangeFeed::DeleteDroppedFiles(Lsn keep_from) {
  // Every file that holds only records before keep_from goes now. A file
  // still in level 0 (which this leaves alone) goes at a later pass, once it
  // has moved down; a file that straddles keep_from once a later pass passes
  // its end. Until then its dropped records take space but are never read.
  // If this fails, a later pass deletes the files.
  const std::string end = kf::FeedKey(keep_from);
  const rocksdb::Slice end_slice(end);
  rocksdb::Status s = rocksdb::DeleteFilesInRange(db_->db(), db_->feed(), /*begin=*/nullptr,
                                                  &end_slice, /*include_end=*/false);
  if (!s.ok()) {
    FEEDD_LOG(kWarning, "feed") << "retention could not delete the files of the changes before LSN "
                                << keep_from << " (a later pass tries again): " << s.ToString();
  }
}

}  // namespace feedd
