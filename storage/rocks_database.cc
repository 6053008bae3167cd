#include "storage/rocks_database.h"

#include <rocksdb/cache.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/table.h>
#include <rocksdb/utilities/table_properties_collectors.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <boost/json.hpp>
#include <charconv>

#include "storage/info_log_file_system.h"
#include "storage/key_format.h"
#include "storage/memtable_skip_list.h"
#include "storage/prepared_item.h"
#include "storage/recycled_wal_file_system.h"
#include "storage/retryable_file_system.h"
#include "storage/wal_sync_timing_file_system.h"
#include "util/json_parse.h"
#include "util/logging.h"

namespace feedd {
namespace {

namespace kf = key_format;

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

}  // namespace

Status FromRocks(const rocksdb::Status& s, ErrorCode code, std::string_view what) {
  return Status(code, std::string(what) + ": " + s.ToString());
}

RocksDatabase::~RocksDatabase() {
  if (db_) {
    for (auto* h : handles_) db_->DestroyColumnFamilyHandle(h);
    const rocksdb::Status closed = db_->Close();
    db_.reset();  // before env_
    // A cleanly closed directory reads with RocksDB's own tools too.
    if (closed.ok() && recycled_wal_ != nullptr) {
      if (rocksdb::IOStatus s = recycled_wal_->WritePlainLogs(); !s.ok()) {
        FEEDD_LOG(kWarning, "storage")
            << "write-ahead logs left framed (only feedd reads them): " << s.ToString();
      }
    }
  }
}

const ContainerHandle* RocksDatabase::Find(std::string_view name) const {
  for (const auto& c : containers_) {
    if (c.spec.name == name) return &c;
  }
  return nullptr;
}

Result<std::unique_ptr<RocksDatabase>> RocksDatabase::Open(const StoreOptions& options) {
  for (const auto& spec : options.containers) {
    if (Status s = ValidateContainerSpec(spec); !s.ok()) return s;
  }

  std::unique_ptr<RocksDatabase> database(new RocksDatabase());
  std::shared_ptr<rocksdb::FileSystem> base =
      options.file_system ? options.file_system : rocksdb::FileSystem::Default();
  // Always there: logs framed by an earlier run read back whatever the option.
  auto recycled =
      std::make_shared<RecycledWalFileSystem>(base, options.data_dir, options.wal_recycle_files);
  database->recycled_wal_ = recycled.get();
  base = std::move(recycled);
  if (options.on_wal_sync) {
    base = std::make_shared<WalSyncTimingFileSystem>(base, options.on_wal_sync);
  }
  database->file_system_ =
      std::make_shared<RetryableFileSystem>(std::make_shared<InfoLogFileSystem>(base));
  database->env_ = rocksdb::NewCompositeEnv(database->file_system_);

  rocksdb::DBOptions db_options;
  db_options.env = database->env_.get();
  db_options.create_if_missing = true;
  db_options.create_missing_column_families = true;
  db_options.IncreaseParallelism(2);
  db_options.max_total_wal_size = options.max_total_wal_bytes;
  if (options.wal_compression) db_options.wal_compression = rocksdb::kZSTD;
  db_options.keep_log_file_num = 5;
  // Required by the memtables' skip list (storage/memtable_skip_list.h):
  // one insert at a time, by the write group's leader.
  db_options.allow_concurrent_memtable_write = false;

  auto cache = rocksdb::NewLRUCache(options.block_cache_bytes);
  auto memtable_factory = NewMemTableSkipListFactory();
  auto make_cf_options = [&](bool bloom) {
    rocksdb::ColumnFamilyOptions cf;
    cf.write_buffer_size = options.write_buffer_bytes;
    cf.memtable_factory = memtable_factory;
    cf.level_compaction_dynamic_level_bytes = true;
    cf.compression = rocksdb::kLZ4Compression;
    rocksdb::BlockBasedTableOptions table;
    table.block_cache = cache;
    table.cache_index_and_filter_blocks = true;
    table.pin_l0_filter_and_index_blocks_in_cache = true;
    // Index and filter in 4 KiB partitions under a small top level (pinned):
    // a point read loads the partitions it needs, not its file's whole index
    // and filter. Unpartitioned, they are about 3 % of the data (1.2 MB of
    // index and 0.75 MB of filter per 64 MB file), and once they outgrow the
    // block cache every read loads and decompresses megabytes (SF 1, 24 GB
    // with the default 256 MiB cache: a rename's fan-out took 2.4 s and 3 s
    // of CPU, against 0.45 s and 0.23 s with a cache that held them).
    table.index_type = rocksdb::BlockBasedTableOptions::kTwoLevelIndexSearch;
    table.partition_filters = true;
    if (bloom) table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
    if (bloom) {
      cf.memtable_whole_key_filtering = true;
      cf.memtable_prefix_bloom_size_ratio = 0.02;
    }
    cf.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
    // An SST file where deletes are dense (a rewritten view such as `feed`,
    // flushed by ChurnFlush) is compacted soon, dropping them.
    cf.table_properties_collector_factories.push_back(
        rocksdb::NewCompactOnDeletionCollectorFactory(128, 64));
    return cf;
  };

  std::vector<std::string> existing;
  rocksdb::Status ls = rocksdb::DB::ListColumnFamilies(db_options, options.data_dir, &existing);
  if (!ls.ok()) existing.clear();  // a new database

  // Families to open: everything that exists plus everything configured.
  std::vector<std::string> names = {rocksdb::kDefaultColumnFamilyName,
                                    std::string(kf::kFeedColumnFamily)};
  for (const auto& spec : options.containers) {
    names.push_back(kf::ItemsColumnFamily(spec.name));
    for (const auto& path : spec.index_paths)
      names.push_back(kf::IndexColumnFamily(spec.name, path));
  }
  for (const auto& name : existing) {
    if (!Contains(names, name)) names.push_back(name);
  }
  std::vector<rocksdb::ColumnFamilyDescriptor> descriptors;
  for (const auto& name : names) {
    bool items = name.rfind("items.", 0) == 0;
    descriptors.emplace_back(name, make_cf_options(items));
  }

  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(rocksdb::Options(db_options, make_cf_options(false)),
                                        options.data_dir, descriptors, &database->handles_, &raw);
  if (!s.ok()) return FromRocks(s, ErrorCode::kStorageError, "cannot open " + options.data_dir);
  database->db_.reset(raw);

  auto handle = [&](const std::string& name) {
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] == name) return database->handles_[i];
    }
    return static_cast<rocksdb::ColumnFamilyHandle*>(nullptr);
  };
  database->feed_ = handle(std::string(kf::kFeedColumnFamily));
  for (const auto& spec : options.containers) {
    ContainerHandle c;
    c.index = database->containers_.size();
    c.spec = spec;
    c.items = handle(kf::ItemsColumnFamily(spec.name));
    for (const auto& path : spec.index_paths) {
      c.indexes.push_back(
          {path, *JsonPointer::Parse(path), handle(kf::IndexColumnFamily(spec.name, path))});
    }
    database->containers_.push_back(std::move(c));
  }

  if (Status st = database->CheckFormatVersion(); !st.ok()) return st;
  if (Status st = database->CheckAndRecordContainers(names); !st.ok()) return st;
  // Drop index families that are no longer configured.
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& name = names[i];
    bool configured = name == rocksdb::kDefaultColumnFamilyName || name == kf::kFeedColumnFamily;
    for (const auto& c : database->containers_) {
      if (name == kf::ItemsColumnFamily(c.spec.name)) configured = true;
      for (const auto& idx : c.indexes) {
        if (name == kf::IndexColumnFamily(c.spec.name, idx.path)) configured = true;
      }
    }
    if (configured || name.rfind("index.", 0) != 0) continue;
    FEEDD_LOG(kWarning, "storage") << "dropping index " << name << ": no longer configured";
    if (auto ds = database->db_->DropColumnFamily(database->handles_[i]); !ds.ok()) {
      return FromRocks(ds, ErrorCode::kStorageError, "cannot drop " + name);
    }
    std::string prefix = name.substr(6);  // "<container>.<path>"
    size_t dot = prefix.find('.');
    if (dot != std::string::npos) {
      database->db_->Delete(rocksdb::WriteOptions(),
                            kf::MetaIndexBuiltKey(prefix.substr(0, dot), prefix.substr(dot + 1)));
    }
  }
  if (Status st = database->BuildMissingIndexes(); !st.ok()) return st;
  if (Status st = database->LoadFeedMetadata(); !st.ok()) return st;
  return database;
}

Status RocksDatabase::CheckFormatVersion() {
  std::string stored;
  auto s = db_->Get(rocksdb::ReadOptions(), kf::kMetaFormatVersion, &stored);
  if (s.IsNotFound()) return Status::Ok();  // a new database
  if (!s.ok()) return FromRocks(s, ErrorCode::kStorageError, "read format_version");
  uint64_t version = 0;
  const auto [end, ec] = std::from_chars(stored.data(), stored.data() + stored.size(), version);
  if (ec != std::errc() || end != stored.data() + stored.size() || version > kf::kFormatVersion) {
    return Status(ErrorCode::kStorageError, "the data directory is in storage format '" + stored +
                                                "', newer than this build of feedd reads (" +
                                                std::to_string(kf::kFormatVersion) +
                                                "); run the feedd that wrote it");
  }
  return Status::Ok();
}

Status RocksDatabase::CheckAndRecordContainers(const std::vector<std::string>& names) {
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i].rfind("items.", 0) != 0) continue;
    std::string container = names[i].substr(6);
    if (Find(container) != nullptr) continue;
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), handles_[i]));
    it->SeekToFirst();
    if (it->Valid()) {
      std::string path;
      db_->Get(rocksdb::ReadOptions(), kf::MetaContainerKey(container), &path);
      return Status(ErrorCode::kInvalidRequest,
                    "container '" + container + "' (partition key " + path +
                        ") holds items but is not declared in the configuration; declare it "
                        "again rather than hide its data");
    }
  }
  rocksdb::WriteBatch batch;
  for (const auto& c : containers_) {
    std::string stored;
    auto s = db_->Get(rocksdb::ReadOptions(), kf::MetaContainerKey(c.spec.name), &stored);
    if (s.ok() && stored != c.spec.partition_key_path) {
      return Status(ErrorCode::kInvalidRequest,
                    "container '" + c.spec.name + "' was created with partition key path " +
                        stored + "; the configuration says " + c.spec.partition_key_path +
                        ". A partition key path cannot change: restore it or use a new container");
    }
    if (!s.ok() && !s.IsNotFound()) return FromRocks(s, ErrorCode::kStorageError, "read metadata");
    batch.Put(kf::MetaContainerKey(c.spec.name), c.spec.partition_key_path);
  }
  batch.Put(kf::kMetaFormatVersion, std::to_string(kf::kFormatVersion));
  rocksdb::WriteOptions wo;
  wo.sync = true;
  auto s = db_->Write(wo, &batch);
  return s.ok() ? Status::Ok() : FromRocks(s, ErrorCode::kStorageError, "write metadata");
}

Status RocksDatabase::BuildMissingIndexes() {
  for (const auto& c : containers_) {
    for (const auto& idx : c.indexes) {
      std::string built;
      std::string meta_key = kf::MetaIndexBuiltKey(c.spec.name, idx.path);
      if (db_->Get(rocksdb::ReadOptions(), meta_key, &built).ok()) continue;
      FEEDD_LOG(kInfo, "storage") << "building index " << idx.path << " of " << c.spec.name;
      ContainerSpec one = c.spec;
      one.index_paths = {idx.path};
      std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), c.items));
      rocksdb::WriteBatch batch;
      uint64_t entries = 0;
      for (it->SeekToFirst(); it->Valid(); it->Next()) {
        std::string_view pk, id, json;
        uint64_t lsn;
        if (!kf::DecodeItemKey(it->key().ToStringView(), &pk, &id) ||
            !kf::DecodeItemValue(it->value().ToStringView(), &lsn, &json)) {
          return Status(ErrorCode::kStorageError, "corrupt item in " + c.spec.name);
        }
        Result<boost::json::value> item = ParseJson(json);
        if (!item.ok()) {
          return Status(ErrorCode::kStorageError, "corrupt item JSON in " + c.spec.name);
        }
        auto values = ExtractIndexValues(one, *item);
        if (!values[0]) continue;
        batch.Put(idx.cf, kf::IndexKey(*values[0], pk, id), "");
        if (++entries % 1000 == 0) {
          if (auto s = db_->Write(rocksdb::WriteOptions(), &batch); !s.ok()) {
            return FromRocks(s, ErrorCode::kStorageError, "build index");
          }
          batch.Clear();
        }
      }
      if (!it->status().ok())
        return FromRocks(it->status(), ErrorCode::kStorageError, "build index");
      batch.Put(meta_key, "1");
      rocksdb::WriteOptions wo;
      wo.sync = true;
      if (auto s = db_->Write(wo, &batch); !s.ok()) {
        return FromRocks(s, ErrorCode::kStorageError, "build index");
      }
      FEEDD_LOG(kInfo, "storage") << "index " << idx.path << " of " << c.spec.name << " built ("
                                  << entries << " entries)";
    }
  }
  return Status::Ok();
}

Result<uint64_t> RocksDatabase::ReadHeadLsn() const {
  std::string value;
  uint64_t head = 0;
  auto s = db_->Get(rocksdb::ReadOptions(), kf::kMetaHeadLsn, &value);
  std::string_view view = value;
  if (!s.ok() && !s.IsNotFound()) return FromRocks(s, ErrorCode::kStorageError, "read head_lsn");
  if (s.ok() && !kf::GetU64(&view, &head)) {
    return Status(ErrorCode::kStorageError, "corrupt head_lsn metadata");
  }
  // The feed's last record is authoritative if it is ahead of the metadata.
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), feed_));
  it->SeekToLast();
  uint64_t last = 0;
  if (it->Valid() && kf::DecodeFeedKey(it->key().ToStringView(), &last))
    head = std::max(head, last);
  if (!it->status().ok()) return FromRocks(it->status(), ErrorCode::kStorageError, "read feed");
  return head;
}

Status RocksDatabase::LoadFeedMetadata() {
  Result<uint64_t> head = ReadHeadLsn();
  if (!head.ok()) return head.status();
  stored_head_lsn_ = *head;
  std::string value;
  auto s = db_->Get(rocksdb::ReadOptions(), kf::kMetaFeedTruncatedBefore, &value);
  std::string_view view = value;
  if (s.ok() && !kf::GetU64(&view, &stored_truncated_before_)) {
    return Status(ErrorCode::kStorageError, "corrupt feed_truncated_before metadata");
  }
  return Status::Ok();
}

}  // namespace feedd
