#include "util/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace feedd {
namespace {

Status FileError(const std::string& what, const std::string& path) {
  return Status(ErrorCode::kInternal, what + " " + path + ": " + std::strerror(errno));
}

}  // namespace

Status WriteFileAtomically(const std::string& path, const std::string& content) {
  std::string temp = path + ".tmp." + std::to_string(getpid());
  int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return FileError("cannot create", temp);
  size_t written = 0;
  while (written < content.size()) {
    ssize_t n = write(fd, content.data() + written, content.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      Status status = FileError("cannot write", temp);
      close(fd);
      unlink(temp.c_str());
      return status;
    }
    written += static_cast<size_t>(n);
  }
  if (fsync(fd) != 0) {
    Status status = FileError("cannot fsync", temp);
    close(fd);
    unlink(temp.c_str());
    return status;
  }
  close(fd);
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    Status status = FileError("cannot rename to", path);
    unlink(temp.c_str());
    return status;
  }
  return Status::Ok();
}

}  // namespace feedd
