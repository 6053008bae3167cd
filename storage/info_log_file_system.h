// InfoLogFileSystem: a rocksdb::FileSystem decorator under which writes to
// RocksDB's info log (the `LOG` file in the data directory) never fail: a
// line that cannot be written (the disk is full) is dropped.
//
// Why: RocksDB writes LOG through a WritableFileWriter, and Debian's 7.8
// build asserts (`sync_without_flush_called_`, in
// AssertFalseAndGetStatusForPrevError) when a writer that has seen an error
// is written again. Once ENOSPC had failed one LOG line, the next one - the
// SstFileManager logs "Cannot clear hard error" every 5 s - aborted the
// process, whether or not space had been freed.
//
// Thread-safety: as the wrapped FileSystem.
// Ownership: shares the wrapped FileSystem. Internal to storage/.
#pragma once

#include <rocksdb/file_system.h>

#include <memory>
#include <string>

namespace feedd {

class InfoLogFileSystem : public rocksdb::FileSystemWrapper {
 public:
  explicit InfoLogFileSystem(const std::shared_ptr<rocksdb::FileSystem>& target)
      : rocksdb::FileSystemWrapper(target) {}

  static const char* kClassName() { return "FeeddInfoLogFileSystem"; }
  const char* Name() const override { return kClassName(); }

  // The file named LOG is opened with write errors ignored.
  rocksdb::IOStatus NewWritableFile(const std::string& f, const rocksdb::FileOptions& o,
                                    std::unique_ptr<rocksdb::FSWritableFile>* r,
                                    rocksdb::IODebugContext* d) override;
  // RocksDB's own: it opens the log through NewWritableFile() above
  // (FileSystemWrapper would hand it to the wrapped file system, whose
  // NewWritableFile() it would then call).
  rocksdb::IOStatus NewLogger(const std::string& f, const rocksdb::IOOptions& o,
                              std::shared_ptr<rocksdb::Logger>* r,
                              rocksdb::IODebugContext* d) override {
    return rocksdb::FileSystem::NewLogger(f, o, r, d);
  }
};

}  // namespace feedd
