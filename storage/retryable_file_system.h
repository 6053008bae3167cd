// RetryableFileSystem: a rocksdb::FileSystem decorator that marks the errors
// of a passing resource shortage - too many open files (EMFILE, ENFILE) -
// as retryable. RocksDB 7.8 treats a plain I/O error while rolling the WAL
// (opening its next file) as fatal: the database refuses every write until
// it is reopened. A retryable error is a hard error instead, which RocksDB
// resumes from by itself (flushing the memtables, then writing a new WAL)
// and which DB::Resume() can clear (storage/commit_pipeline.h).
//
// Thread-safety: as the wrapped FileSystem.
// Ownership: shares the wrapped FileSystem. Internal to storage/.
#pragma once

#include <rocksdb/file_system.h>

#include <memory>
#include <string>

namespace feedd {

class RetryableFileSystem : public rocksdb::FileSystemWrapper {
 public:
  explicit RetryableFileSystem(const std::shared_ptr<rocksdb::FileSystem>& target)
      : rocksdb::FileSystemWrapper(target) {}

  static const char* kClassName() { return "FeeddRetryableFileSystem"; }
  const char* Name() const override { return kClassName(); }

  rocksdb::IOStatus NewSequentialFile(const std::string& f, const rocksdb::FileOptions& o,
                                      std::unique_ptr<rocksdb::FSSequentialFile>* r,
                                      rocksdb::IODebugContext* d) override;
  rocksdb::IOStatus NewRandomAccessFile(const std::string& f, const rocksdb::FileOptions& o,
                                        std::unique_ptr<rocksdb::FSRandomAccessFile>* r,
                                        rocksdb::IODebugContext* d) override;
  rocksdb::IOStatus NewWritableFile(const std::string& f, const rocksdb::FileOptions& o,
                                    std::unique_ptr<rocksdb::FSWritableFile>* r,
                                    rocksdb::IODebugContext* d) override;
  rocksdb::IOStatus ReopenWritableFile(const std::string& f, const rocksdb::FileOptions& o,
                                       std::unique_ptr<rocksdb::FSWritableFile>* r,
                                       rocksdb::IODebugContext* d) override;
  rocksdb::IOStatus ReuseWritableFile(const std::string& f, const std::string& old,
                                      const rocksdb::FileOptions& o,
                                      std::unique_ptr<rocksdb::FSWritableFile>* r,
                                      rocksdb::IODebugContext* d) override;
  rocksdb::IOStatus NewDirectory(const std::string& name, const rocksdb::IOOptions& o,
                                 std::unique_ptr<rocksdb::FSDirectory>* r,
                                 rocksdb::IODebugContext* d) override;
};

// True when `s` reports EMFILE or ENFILE (RocksDB keeps only the message).
bool IsOutOfFileDescriptors(const rocksdb::IOStatus& s);

}  // namespace feedd
