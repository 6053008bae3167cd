#include "storage/retryable_file_system.h"

#include <cerrno>
#include <cstring>

namespace feedd {
namespace {

rocksdb::IOStatus Classified(rocksdb::IOStatus s) {
  if (IsOutOfFileDescriptors(s)) s.SetRetryable(true);
  return s;
}

}  // namespace

bool IsOutOfFileDescriptors(const rocksdb::IOStatus& s) {
  if (!s.IsIOError()) return false;
  // RocksDB's POSIX file system puts strerror(errno) into the message.
  static const std::string emfile = std::strerror(EMFILE);
  static const std::string enfile = std::strerror(ENFILE);
  const std::string text = s.ToString();
  return text.find(emfile) != std::string::npos || text.find(enfile) != std::string::npos;
}

rocksdb::IOStatus RetryableFileSystem::NewSequentialFile(
    const std::string& f, const rocksdb::FileOptions& o,
    std::unique_ptr<rocksdb::FSSequentialFile>* r, rocksdb::IODebugContext* d) {
  return Classified(target()->NewSequentialFile(f, o, r, d));
}

rocksdb::IOStatus RetryableFileSystem::NewRandomAccessFile(
    const std::string& f, const rocksdb::FileOptions& o,
    std::unique_ptr<rocksdb::FSRandomAccessFile>* r, rocksdb::IODebugContext* d) {
  return Classified(target()->NewRandomAccessFile(f, o, r, d));
}

rocksdb::IOStatus RetryableFileSystem::NewWritableFile(const std::string& f,
                                                       const rocksdb::FileOptions& o,
                                                       std::unique_ptr<rocksdb::FSWritableFile>* r,
                                                       rocksdb::IODebugContext* d) {
  return Classified(target()->NewWritableFile(f, o, r, d));
}

rocksdb::IOStatus RetryableFileSystem::ReopenWritableFile(
    const std::string& f, const rocksdb::FileOptions& o,
    std::unique_ptr<rocksdb::FSWritableFile>* r, rocksdb::IODebugContext* d) {
  return Classified(target()->ReopenWritableFile(f, o, r, d));
}

rocksdb::IOStatus RetryableFileSystem::ReuseWritableFile(
    const std::string& f, const std::string& old, const rocksdb::FileOptions& o,
    std::unique_ptr<rocksdb::FSWritableFile>* r, rocksdb::IODebugContext* d) {
  return Classified(target()->ReuseWritableFile(f, old, o, r, d));
}

rocksdb::IOStatus RetryableFileSystem::NewDirectory(const std::string& name,
                                                    const rocksdb::IOOptions& o,
                                                    std::unique_ptr<rocksdb::FSDirectory>* r,
                                                    rocksdb::IODebugContext* d) {
  return Classified(target()->NewDirectory(name, o, r, d));
}

}  // namespace feedd
