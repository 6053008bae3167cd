#include "storage/info_log_file_system.h"

#include <string_view>

namespace feedd {
namespace {

// Reports success whatever the file says: only for the info log.
class ErrorIgnoringFile : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  using rocksdb::FSWritableFileOwnerWrapper::FSWritableFileOwnerWrapper;

  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& o,
                           rocksdb::IODebugContext* d) override {
    target()->Append(data, o, d).PermitUncheckedError();
    return rocksdb::IOStatus::OK();
  }
  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& o,
                           const rocksdb::DataVerificationInfo& v,
                           rocksdb::IODebugContext* d) override {
    target()->Append(data, o, v, d).PermitUncheckedError();
    return rocksdb::IOStatus::OK();
  }
  rocksdb::IOStatus Flush(const rocksdb::IOOptions& o, rocksdb::IODebugContext* d) override {
    target()->Flush(o, d).PermitUncheckedError();
    return rocksdb::IOStatus::OK();
  }
  rocksdb::IOStatus Sync(const rocksdb::IOOptions& o, rocksdb::IODebugContext* d) override {
    target()->Sync(o, d).PermitUncheckedError();
    return rocksdb::IOStatus::OK();
  }
  rocksdb::IOStatus Fsync(const rocksdb::IOOptions& o, rocksdb::IODebugContext* d) override {
    target()->Fsync(o, d).PermitUncheckedError();
    return rocksdb::IOStatus::OK();
  }
};

bool IsInfoLog(std::string_view path) {
  const size_t slash = path.find_last_of('/');
  return path.substr(slash == std::string_view::npos ? 0 : slash + 1) == "LOG";
}

}  // namespace

rocksdb::IOStatus InfoLogFileSystem::NewWritableFile(const std::string& f,
                                                     const rocksdb::FileOptions& o,
                                                     std::unique_ptr<rocksdb::FSWritableFile>* r,
                                                     rocksdb::IODebugContext* d) {
  rocksdb::IOStatus s = target()->NewWritableFile(f, o, r, d);
  if (s.ok() && IsInfoLog(f)) *r = std::make_unique<ErrorIgnoringFile>(std::move(*r));
  return s;
}

}  // namespace feedd
