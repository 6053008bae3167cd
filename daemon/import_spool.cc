#include "daemon/import_spool.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include "daemon/http_util.h"

namespace feedd {
namespace {

class SpoolStream : public BodyStream {
 public:
  SpoolStream(std::string path, uint64_t max_bytes, ImportSpool::OnReceived on_received,
              ImportSpool::OnRefused on_refused)
      : path_(std::move(path)),
        max_bytes_(max_bytes),
        on_received_(std::move(on_received)),
        on_refused_(std::move(on_refused)) {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd_ < 0) Refuse(WriteError("cannot create", errno));
  }

  ~SpoolStream() override { Discard(); }

  void Consume(std::string_view piece, std::function<void(bool)> next) override {
    if (!error_.ok()) return next(false);
    if (piece.size() > max_bytes_ - body_.bytes) {
      Refuse(Status(ErrorCode::kPayloadTooLarge,
                    "the import body is larger than import.spool_max_mb (" +
                        std::to_string(max_bytes_ >> 20) + " MiB)"),
             "spool_limit");
      return next(false);
    }
    for (size_t done = 0; done < piece.size();) {
      ssize_t n = ::write(fd_, piece.data() + done, piece.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        Refuse(WriteError("cannot write", errno));
        return next(false);
      }
      done += static_cast<size_t>(n);
    }
    body_.bytes += piece.size();
    for (char c : piece) body_.lines += c == '\n';
    if (!piece.empty()) last_ = piece.back();
    next(true);
  }

  void Finish(Status error, Responder responder) override {
    if (!error_.ok()) {
      Discard();
      return responder.Send(ErrorResponse(error_));
    }
    if (!error.ok()) {
      Refuse(error, "upload_failed");
      Discard();
      return responder.Send(ErrorResponse(error));
    }
    if (last_ != '\n' && body_.bytes > 0) ++body_.lines;  // a last line without '\n'
    if (::close(fd_) != 0) {
      fd_ = -1;
      Refuse(WriteError("cannot close", errno));
      Discard();
      return responder.Send(ErrorResponse(error_));
    }
    fd_ = -1;
    body_.path = path_;
    handed_over_ = true;
    on_received_(std::move(body_), std::move(responder));
  }

 private:
  // A failed write, open or close: no space (507) or another storage error.
  std::pair<Status, const char*> WriteError(const char* what, int error) const {
    const std::string message =
        std::string(what) + " the import spool " + path_ + ": " + std::strerror(error);
    if (error == ENOSPC || error == EDQUOT) {
      return {Status(ErrorCode::kInsufficientStorage, message), "no_space"};
    }
    return {Status(ErrorCode::kStorageError, message), "spool_error"};
  }

  void Refuse(std::pair<Status, const char*> refusal) {
    Refuse(std::move(refusal.first), refusal.second);
  }
  void Refuse(Status status, const char* reason) {
    if (!error_.ok()) return;
    error_ = std::move(status);
    if (on_refused_) on_refused_(reason);
  }

  // Closes and removes the file unless it was handed over.
  void Discard() {
    if (handed_over_) return;
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    if (!removed_) ::unlink(path_.c_str());
    removed_ = true;
  }

  const std::string path_;
  const uint64_t max_bytes_;
  ImportSpool::OnReceived on_received_;
  ImportSpool::OnRefused on_refused_;
  int fd_ = -1;
  SpooledBody body_;
  char last_ = '\n';
  Status error_;  // why the body is refused
  bool handed_over_ = false;
  bool removed_ = false;
};

}  // namespace

std::unique_ptr<BodyStream> ImportSpool::Create(std::string path, uint64_t max_bytes,
                                                OnReceived on_received, OnRefused on_refused) {
  return std::make_unique<SpoolStream>(std::move(path), max_bytes, std::move(on_received),
                                       std::move(on_refused));
}

Status ResetSpoolDirectory(const std::string& dir, size_t* removed) {
  *removed = 0;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return Status(ErrorCode::kStorageError, "cannot create " + dir + ": " + ec.message());
  }
  std::filesystem::directory_iterator it(dir, ec);
  for (; !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    std::error_code remove_ec;
    std::filesystem::remove_all(it->path(), remove_ec);
    if (remove_ec) {
      return Status(ErrorCode::kStorageError,
                    "cannot remove " + it->path().string() + ": " + remove_ec.message());
    }
    ++*removed;
  }
  if (ec) return Status(ErrorCode::kStorageError, "cannot list " + dir + ": " + ec.message());
  return Status::Ok();
}

}  // namespace feedd
