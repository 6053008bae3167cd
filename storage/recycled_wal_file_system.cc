#include "storage/recycled_wal_file_system.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <string_view>
#include <utility>
#include <vector>

#include "storage/crc32c.h"
#include "storage/wal_file_name.h"

namespace feedd {
namespace {

constexpr uint32_t kFrameMagic = 0x57444646;  // "FFDW" on disk
constexpr size_t kHeaderBytes = 20;           // magic, length, log number, crc
constexpr size_t kCoveredHeaderBytes = 16;    // what the CRC covers of the header
// Larger payloads are written as a header and a payload, not copied into one.
constexpr size_t kCopiedPayloadBytes = 64 * 1024;
// A header claiming more than this is not read: no append of RocksDB's is
// that large (a WriteBatch is at most a few hundred MiB).
constexpr uint32_t kMaxFrameBytes = 1u << 30;
constexpr std::string_view kKeptPrefix = "feedd-recycled-";
// A log being rewritten without frames (WritePlainLogs).
constexpr std::string_view kPlainSuffix = ".plain";

// A header field, little-endian.
template <typename T>
void PutLe(char* out, T v) {
  for (size_t i = 0; i < sizeof(T); ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
template <typename T>
T GetLe(const char* in) {
  T v = 0;
  for (size_t i = sizeof(T); i-- > 0;)
    v = static_cast<T>((v << 8) | static_cast<unsigned char>(in[i]));
  return v;
}

// CRC-32C of the header's covered bytes and the payload.
uint32_t FrameCrc(const char* header, const rocksdb::Slice& payload) {
  return Crc32cExtend(Crc32cExtend(0, header, kCoveredHeaderBytes), payload.data(), payload.size());
}

// Reads up to `n` bytes into `out`, fewer only at the end of the file.
rocksdb::IOStatus ReadFully(rocksdb::FSSequentialFile* file, size_t n, char* out, size_t* got,
                            rocksdb::IODebugContext* d) {
  *got = 0;
  while (*got < n) {
    rocksdb::Slice chunk;
    rocksdb::IOStatus s = file->Read(n - *got, rocksdb::IOOptions(), &chunk, out + *got, d);
    if (!s.ok()) return s;
    if (chunk.empty()) break;
    if (chunk.data() != out + *got) std::memmove(out + *got, chunk.data(), chunk.size());
    *got += chunk.size();
  }
  return rocksdb::IOStatus::OK();
}

// A log being written: each append is one frame.
class FramedWalFile : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  FramedWalFile(std::unique_ptr<rocksdb::FSWritableFile> file, uint64_t log_number)
      : rocksdb::FSWritableFileOwnerWrapper(std::move(file)), log_number_(log_number) {}

  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& o,
                           rocksdb::IODebugContext* d) override {
    return AppendFrame(data, o, d);
  }
  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& o,
                           const rocksdb::DataVerificationInfo& /*checksum*/,
                           rocksdb::IODebugContext* d) override {
    return AppendFrame(data, o, d);
  }
  rocksdb::IOStatus PositionedAppend(const rocksdb::Slice&, uint64_t, const rocksdb::IOOptions&,
                                     rocksdb::IODebugContext*) override {
    return rocksdb::IOStatus::NotSupported("a framed write-ahead log is appended to only");
  }
  rocksdb::IOStatus PositionedAppend(const rocksdb::Slice&, uint64_t, const rocksdb::IOOptions&,
                                     const rocksdb::DataVerificationInfo&,
                                     rocksdb::IODebugContext*) override {
    return rocksdb::IOStatus::NotSupported("a framed write-ahead log is appended to only");
  }
  // Only at its end: what RocksDB wrote is the file's frames.
  rocksdb::IOStatus Truncate(uint64_t size, const rocksdb::IOOptions& o,
                             rocksdb::IODebugContext* d) override {
    if (size != logical_) {
      return rocksdb::IOStatus::NotSupported("a framed write-ahead log is cut only at its end");
    }
    return target()->Truncate(physical_, o, d);
  }
  uint64_t GetFileSize(const rocksdb::IOOptions&, rocksdb::IODebugContext*) override {
    return logical_;
  }
  void PrepareWrite(size_t offset, size_t len, const rocksdb::IOOptions& o,
                    rocksdb::IODebugContext* d) override {
    const uint64_t ahead = offset > logical_ ? offset - logical_ : 0;
    target()->PrepareWrite(static_cast<size_t>(physical_ + ahead), len + kHeaderBytes, o, d);
  }

 private:
  rocksdb::IOStatus AppendFrame(const rocksdb::Slice& data, const rocksdb::IOOptions& o,
                                rocksdb::IODebugContext* d) {
    if (data.size() > kMaxFrameBytes) {
      return rocksdb::IOStatus::InvalidArgument("a write-ahead log append over 1 GiB");
    }
    char header[kHeaderBytes];
    PutLe(header, kFrameMagic);
    PutLe(header + 4, static_cast<uint32_t>(data.size()));
    PutLe(header + 8, log_number_);
    PutLe(header + 16, FrameCrc(header, data));
    rocksdb::IOStatus s;
    if (data.size() <= kCopiedPayloadBytes) {
      frame_.assign(header, kHeaderBytes);
      frame_.append(data.data(), data.size());
      s = target()->Append(rocksdb::Slice(frame_), o, d);
    } else {
      s = target()->Append(rocksdb::Slice(header, kHeaderBytes), o, d);
      if (s.ok()) s = target()->Append(data, o, d);
    }
    if (!s.ok()) return s;
    logical_ += data.size();
    physical_ += kHeaderBytes + data.size();
    return s;
  }

  const uint64_t log_number_;
  uint64_t logical_ = 0;   // payload bytes appended
  uint64_t physical_ = 0;  // frame bytes appended
  std::string frame_;      // scratch for a small frame
};

// A framed log read back: the payloads of its frames.
class FramedWalReader : public rocksdb::FSSequentialFile {
 public:
  FramedWalReader(std::unique_ptr<rocksdb::FSSequentialFile> file, uint64_t log_number)
      : file_(std::move(file)), log_number_(log_number) {}

  rocksdb::IOStatus Read(size_t n, const rocksdb::IOOptions&, rocksdb::Slice* result, char* scratch,
                         rocksdb::IODebugContext* d) override {
    *result = rocksdb::Slice();
    if (!failed_.ok()) return failed_;
    size_t got = 0;
    while (got < n) {
      if (pos_ == frame_.size()) {
        if (ended_) break;
        if (rocksdb::IOStatus s = NextFrame(d); !s.ok()) {
          failed_ = s;
          if (got == 0) return s;
          break;  // the bytes read first; the error with the next read
        }
        continue;
      }
      const size_t take = std::min(n - got, frame_.size() - pos_);
      std::memcpy(scratch + got, frame_.data() + pos_, take);
      pos_ += take;
      got += take;
    }
    *result = rocksdb::Slice(scratch, got);
    return rocksdb::IOStatus::OK();
  }

  rocksdb::IOStatus Skip(uint64_t n) override {
    std::string scratch(std::min<uint64_t>(n, 1 << 16), '\0');
    while (n > 0) {
      rocksdb::Slice skipped;
      rocksdb::IOStatus s = Read(static_cast<size_t>(std::min<uint64_t>(n, scratch.size())),
                                 rocksdb::IOOptions(), &skipped, scratch.data(), nullptr);
      if (!s.ok()) return s;
      if (skipped.empty()) break;
      n -= skipped.size();
    }
    return rocksdb::IOStatus::OK();
  }

 private:
  // Loads the next frame, or sets ended_ where the log's frames end.
  rocksdb::IOStatus NextFrame(rocksdb::IODebugContext* d) {
    frame_.clear();
    pos_ = 0;
    char header[kHeaderBytes];
    size_t got = 0;
    rocksdb::IOStatus s = ReadFully(file_.get(), kHeaderBytes, header, &got, d);
    if (!s.ok()) return s;
    const uint32_t length = got == kHeaderBytes ? GetLe<uint32_t>(header + 4) : 0;
    if (got < kHeaderBytes || GetLe<uint32_t>(header) != kFrameMagic ||
        GetLe<uint64_t>(header + 8) != log_number_ || length > kMaxFrameBytes) {
      ended_ = true;  // the end of the file, zeros, or an older log's bytes
      return rocksdb::IOStatus::OK();
    }
    // Grown as the bytes come, so that a damaged header claiming a large
    // frame costs no more memory than the file has bytes.
    constexpr size_t kChunk = 1 << 20;
    while (frame_.size() < length) {
      const size_t want = std::min<size_t>(length - frame_.size(), kChunk);
      const size_t at = frame_.size();
      frame_.resize(at + want);
      size_t chunk = 0;
      s = ReadFully(file_.get(), want, frame_.data() + at, &chunk, d);
      if (!s.ok()) return s;
      frame_.resize(at + chunk);
      if (chunk < want) break;
    }
    if (frame_.size() < length) {
      frame_.clear();
      ended_ = true;  // cut short at the end of a file that grew
      return rocksdb::IOStatus::OK();
    }
    if (FrameCrc(header, rocksdb::Slice(frame_)) != GetLe<uint32_t>(header + 16)) {
      frame_.clear();
      ended_ = true;
      return rocksdb::IOStatus::Corruption("write-ahead log frame checksum mismatch");
    }
    return rocksdb::IOStatus::OK();
  }

  std::unique_ptr<rocksdb::FSSequentialFile> file_;
  const uint64_t log_number_;
  std::string frame_;  // the current frame's payload
  size_t pos_ = 0;     // read of it
  bool ended_ = false;
  rocksdb::IOStatus failed_;
};

std::string DirOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// The number at the end of a kept file's name (its old log's), for order.
uint64_t KeptNumber(std::string_view name) {
  return ParseDecimal(name.substr(kKeptPrefix.size()))
      .value_or(std::numeric_limits<uint64_t>::max());
}

}  // namespace

RecycledWalFileSystem::RecycledWalFileSystem(const std::shared_ptr<rocksdb::FileSystem>& target,
                                             std::string wal_dir, size_t max_files)
    : rocksdb::FileSystemWrapper(target), wal_dir_(std::move(wal_dir)), max_files_(max_files) {
  std::vector<std::string> children;
  if (!target->GetChildren(wal_dir_, rocksdb::IOOptions(), &children, nullptr).ok()) return;
  std::vector<std::string> kept;
  for (const std::string& name : children) {
    if (name.starts_with(kKeptPrefix)) kept.push_back(name);
    if (name.ends_with(kPlainSuffix)) {
      // A rewrite a crash interrupted: the framed log is still there.
      target->DeleteFile(wal_dir_ + "/" + name, rocksdb::IOOptions(), nullptr)
          .PermitUncheckedError();
    }
  }
  std::sort(kept.begin(), kept.end(), [](const std::string& a, const std::string& b) {
    return KeptNumber(a) < KeptNumber(b);
  });
  for (const std::string& name : kept) {
    const std::string path = wal_dir_ + "/" + name;
    if (kept_.size() < max_files_) {
      kept_.push_back(path);
    } else {
      target->DeleteFile(path, rocksdb::IOOptions(), nullptr).PermitUncheckedError();
    }
  }
}

size_t RecycledWalFileSystem::files_kept() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return kept_.size();
}

rocksdb::IOStatus RecycledWalFileSystem::NewWritableFile(
    const std::string& f, const rocksdb::FileOptions& o,
    std::unique_ptr<rocksdb::FSWritableFile>* r, rocksdb::IODebugContext* d) {
  if (!WalNumber(f) || max_files_ == 0) return target()->NewWritableFile(f, o, r, d);
  std::string old;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!kept_.empty()) {
      old = std::move(kept_.front());
      kept_.pop_front();
    }
  }
  return OpenFramed(f, old, o, r, d);
}

rocksdb::IOStatus RecycledWalFileSystem::OpenFramed(const std::string& f, const std::string& old,
                                                    const rocksdb::FileOptions& o,
                                                    std::unique_ptr<rocksdb::FSWritableFile>* r,
                                                    rocksdb::IODebugContext* d) {
  rocksdb::IOStatus s = old.empty() ? target()->NewWritableFile(f, o, r, d)
                                    : target()->ReuseWritableFile(f, old, o, r, d);
  if (!s.ok()) {
    // Not renamed: kept for the next log.
    if (!old.empty() && target()->FileExists(old, rocksdb::IOOptions(), d).ok()) {
      std::lock_guard<std::mutex> lock(mutex_);
      kept_.push_front(old);
    }
    return s;
  }
  (old.empty() ? logs_new_ : logs_recycled_).fetch_add(1, std::memory_order_relaxed);
  *r = std::make_unique<FramedWalFile>(std::move(*r), *WalNumber(f));
  return s;
}

bool RecycledWalFileSystem::IsFramed(const std::string& f, rocksdb::IODebugContext* d) {
  std::unique_ptr<rocksdb::FSSequentialFile> file;
  if (!target()->NewSequentialFile(f, rocksdb::FileOptions(), &file, d).ok()) return false;
  char magic[4];
  size_t got = 0;
  return ReadFully(file.get(), sizeof magic, magic, &got, d).ok() && got == sizeof magic &&
         GetLe<uint32_t>(magic) == kFrameMagic;
}

rocksdb::IOStatus RecycledWalFileSystem::NewSequentialFile(
    const std::string& f, const rocksdb::FileOptions& o,
    std::unique_ptr<rocksdb::FSSequentialFile>* r, rocksdb::IODebugContext* d) {
  const std::optional<uint64_t> number = WalNumber(f);
  if (!number || !IsFramed(f, d)) return target()->NewSequentialFile(f, o, r, d);
  rocksdb::IOStatus s = target()->NewSequentialFile(f, o, r, d);
  if (s.ok()) *r = std::make_unique<FramedWalReader>(std::move(*r), *number);
  return s;
}

rocksdb::IOStatus RecycledWalFileSystem::NewRandomAccessFile(
    const std::string& f, const rocksdb::FileOptions& o,
    std::unique_ptr<rocksdb::FSRandomAccessFile>* r, rocksdb::IODebugContext* d) {
  if (WalNumber(f) && IsFramed(f, d)) {
    return rocksdb::IOStatus::NotSupported("a framed write-ahead log is read in order only", f);
  }
  return target()->NewRandomAccessFile(f, o, r, d);
}

rocksdb::IOStatus RecycledWalFileSystem::DeleteFile(const std::string& f,
                                                    const rocksdb::IOOptions& o,
                                                    rocksdb::IODebugContext* d) {
  const std::optional<uint64_t> number = WalNumber(f);
  if (!number || !IsFramed(f, d)) return target()->DeleteFile(f, o, d);
  std::lock_guard<std::mutex> lock(mutex_);
  if (kept_.size() >= max_files_) return target()->DeleteFile(f, o, d);
  uint64_t size = 0;
  if (target()->GetFileSize(f, o, &size, d).ok() && size > kMaxRecycledBytes) {
    std::unique_ptr<rocksdb::FSWritableFile> file;
    rocksdb::IOStatus cut = target()->ReopenWritableFile(f, rocksdb::FileOptions(), &file, d);
    if (cut.ok()) cut = file->Truncate(kMaxRecycledBytes, o, d);
    if (file) file->Close(o, d).PermitUncheckedError();
    if (!cut.ok()) return target()->DeleteFile(f, o, d);
  }
  const std::string kept = DirOf(f) + "/" + std::string(kKeptPrefix) + std::to_string(*number);
  if (!target()->RenameFile(f, kept, o, d).ok()) return target()->DeleteFile(f, o, d);
  kept_.push_back(kept);
  return rocksdb::IOStatus::OK();
}

rocksdb::IOStatus RecycledWalFileSystem::WritePlainLogs() {
  std::vector<std::string> children;
  rocksdb::IOStatus s = target()->GetChildren(wal_dir_, rocksdb::IOOptions(), &children, nullptr);
  if (!s.ok()) return s;
  bool rewrote = false;
  std::string buffer(1 << 20, '\0');
  for (const std::string& name : children) {
    const std::string path = wal_dir_ + "/" + name;
    if (!WalNumber(path) || !IsFramed(path, nullptr)) continue;
    const std::string plain = path + std::string(kPlainSuffix);
    std::unique_ptr<rocksdb::FSSequentialFile> in;
    std::unique_ptr<rocksdb::FSWritableFile> out;
    s = NewSequentialFile(path, rocksdb::FileOptions(), &in, nullptr);
    if (s.ok()) s = target()->NewWritableFile(plain, rocksdb::FileOptions(), &out, nullptr);
    while (s.ok()) {
      rocksdb::Slice chunk;
      s = in->Read(buffer.size(), rocksdb::IOOptions(), &chunk, buffer.data(), nullptr);
      if (!s.ok() || chunk.empty()) break;
      s = out->Append(chunk, rocksdb::IOOptions(), nullptr);
    }
    if (s.ok()) s = out->Sync(rocksdb::IOOptions(), nullptr);
    if (out) {
      rocksdb::IOStatus closed = out->Close(rocksdb::IOOptions(), nullptr);
      if (s.ok()) s = closed;
    }
    if (s.ok()) s = target()->RenameFile(plain, path, rocksdb::IOOptions(), nullptr);
    if (!s.ok()) {
      target()->DeleteFile(plain, rocksdb::IOOptions(), nullptr).PermitUncheckedError();
      return s;
    }
    rewrote = true;
  }
  if (!rewrote) return s;
  std::unique_ptr<rocksdb::FSDirectory> dir;
  s = target()->NewDirectory(wal_dir_, rocksdb::IOOptions(), &dir, nullptr);
  if (s.ok())
    s = dir->FsyncWithDirOptions(rocksdb::IOOptions(), nullptr, rocksdb::DirFsyncOptions());
  if (dir) dir->Close(rocksdb::IOOptions(), nullptr).PermitUncheckedError();
  return s;
}

}  // namespace feedd
