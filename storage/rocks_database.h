// RocksDatabase: the opened RocksDB instance with one handle per column
// family of docs/storage-format.md, and the open-time checks and index
// builds that keep the database consistent with the configuration.
//
// Thread-safety: immutable after Open(); rocksdb::DB is thread-safe.
// Ownership: owns the DB and its column-family handles; closes them on
// destruction. Internal to storage/.
#pragma once

#include <rocksdb/db.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "storage/container_spec.h"
#include "storage/json_pointer.h"
#include "storage/recycled_wal_file_system.h"
#include "storage/store_options.h"
#include "util/status.h"

namespace feedd {

struct IndexHandle {
  std::string path;
  JsonPointer pointer;
  rocksdb::ColumnFamilyHandle* cf = nullptr;
};

struct ContainerHandle {
  size_t index = 0;  // its position in RocksDatabase::containers()
  ContainerSpec spec;
  rocksdb::ColumnFamilyHandle* items = nullptr;
  std::vector<IndexHandle> indexes;  // in spec.index_paths order
};

class RocksDatabase {
 public:
  static Result<std::unique_ptr<RocksDatabase>> Open(const StoreOptions& options);
  ~RocksDatabase();

  rocksdb::DB* db() const { return db_.get(); }
  rocksdb::ColumnFamilyHandle* meta() const { return db_->DefaultColumnFamily(); }
  rocksdb::ColumnFamilyHandle* feed() const { return feed_; }
  const std::vector<ContainerHandle>& containers() const { return containers_; }
  // Every open column family.
  const std::vector<rocksdb::ColumnFamilyHandle*>& families() const { return handles_; }
  const ContainerHandle* Find(std::string_view name) const;

  // The file system RocksDB works on.
  rocksdb::FileSystem* file_system() const { return file_system_.get(); }
  // The write-ahead logs' recycling (none when
  // StoreOptions::wal_recycle_files is 0, but framed logs still read).
  const RecycledWalFileSystem* recycled_wal() const { return recycled_wal_; }

  // The head LSN and feed truncation point recorded in the metadata.
  uint64_t stored_head_lsn() const { return stored_head_lsn_; }
  // The head LSN as stored now: the head_lsn metadata, or the feed's last
  // record when that is ahead.
  Result<uint64_t> ReadHeadLsn() const;
  uint64_t stored_truncated_before() const { return stored_truncated_before_; }

 private:
  RocksDatabase() = default;
  // `names` are the opened families, in handles_ order.
  // Refuses a database written in a newer format than this build reads.
  Status CheckFormatVersion();
  Status CheckAndRecordContainers(const std::vector<std::string>& names);
  Status BuildMissingIndexes();
  Status LoadFeedMetadata();

  std::shared_ptr<rocksdb::FileSystem> file_system_;
  RecycledWalFileSystem* recycled_wal_ = nullptr;  // inside file_system_
  std::unique_ptr<rocksdb::Env> env_;              // over file_system_; outlives db_
  std::unique_ptr<rocksdb::DB> db_;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
  rocksdb::ColumnFamilyHandle* feed_ = nullptr;
  std::vector<ContainerHandle> containers_;
  uint64_t stored_head_lsn_ = 0;
  uint64_t stored_truncated_before_ = 1;
};

// rocksdb::Status -> feedd Status with `code` and a message naming `what`.
Status FromRocks(const rocksdb::Status& s, ErrorCode code, std::string_view what);

}  // namespace feedd
