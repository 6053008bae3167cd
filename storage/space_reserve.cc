#include "storage/space_reserve.h"

#include "util/logging.h"

namespace feedd {
namespace {

constexpr uint64_t kMiB = 1024 * 1024;

// "12.3 MiB", rounded down.
std::string MiB(uint64_t bytes) {
  return std::to_string(bytes / kMiB) + "." + std::to_string(bytes % kMiB * 10 / kMiB) + " MiB";
}

}  // namespace

SpaceReserve::SpaceReserve(rocksdb::FileSystem* fs, std::string path, uint64_t min_free_bytes,
                           Clock* clock)
    : fs_(fs),
      path_(std::move(path)),
      min_free_bytes_(min_free_bytes),
      resume_free_bytes_(min_free_bytes + min_free_bytes / 8),
      clock_(clock) {}

Status SpaceReserve::Admit() {
  Status s = Check();
  if (!s.ok()) ++refused_;
  return s;
}

Status SpaceReserve::Check() {
  if (min_free_bytes_ == 0) return Status::Ok();
  const uint64_t now_ms = clock_->NowMillis();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!sampled_ || now_ms >= sampled_ms_ + kSampleIntervalMs ||
        written_since_sample_.load() >= min_free_bytes_ / 4) {
      Sample(now_ms);
    }
  }
  const uint64_t written = written_since_sample_.load();
  const uint64_t sampled = free_bytes_.load();
  const uint64_t free = sampled > written ? sampled - written : 0;
  if (!refusing_.load() && known_.load() && free < min_free_bytes_) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!refusing_.exchange(true)) {
      FEEDD_LOG(kError, "storage")
          << "about " << MiB(free) << " free in " << path_ << ", below the reserve of "
          << MiB(min_free_bytes_) << " (storage.min_free_mb): writes answer 507 until "
          << MiB(resume_free_bytes_) << " are free";
    }
  }
  if (!refusing_.load()) return Status::Ok();
  return Status(ErrorCode::kInsufficientStorage,
                "the data directory's file system has about " + MiB(free) +
                    " free, below the reserve of " + MiB(min_free_bytes_) +
                    "; writes resume once " + MiB(resume_free_bytes_) + " are free");
}

void SpaceReserve::Sample(uint64_t now_ms) {
  uint64_t free = 0;
  rocksdb::IOStatus s = fs_->GetFreeSpace(path_, rocksdb::IOOptions(), &free, nullptr);
  sampled_ms_ = now_ms;
  sampled_ = true;
  if (!s.ok()) {
    // Free space unknown: the state stays as it is.
    FEEDD_LOG_EVERY_N_SEC(kWarning, "storage", 60)
        << "cannot read the free space of " << path_ << ": " << s.ToString();
    return;
  }
  known_ = true;
  free_bytes_ = free;
  written_since_sample_ = 0;
  if (refusing_.load() && free >= resume_free_bytes_) {
    refusing_ = false;
    FEEDD_LOG(kInfo, "storage") << MiB(free) << " free in " << path_ << " again: accepting writes";
  }
}

}  // namespace feedd
