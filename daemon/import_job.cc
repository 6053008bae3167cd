#include "daemon/import_job.h"

#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <vector>

namespace feedd {
namespace {

constexpr size_t kPieceBytes = 256u << 10;

// Where the job's thread waits for the run's continuations and report.
struct Rendezvous {
  std::mutex mu;
  std::condition_variable cv;
  std::optional<bool> more;  // GUARDED_BY(mu): the piece's continuation ran
  std::optional<ImportReport> report;
};

}  // namespace

ImportReport RunImportJob(const SpooledBody& body, ImportRun& run, JobControl& job,
                          const std::function<Status()>& stop_error) {
  auto meet = std::make_shared<Rendezvous>();
  std::ifstream in(body.path, std::ios::binary);
  Status cut;
  if (!in) {
    cut = Status(ErrorCode::kStorageError,
                 "cannot open the import spool " + body.path + ": " + std::strerror(errno));
  }
  std::vector<char> piece(kPieceBytes);
  char last = '\n';
  while (cut.ok()) {
    if (job.stop_token().stop_requested()) {
      cut = stop_error();
      break;
    }
    in.read(piece.data(), static_cast<std::streamsize>(piece.size()));
    if (in.bad()) {
      cut = Status(ErrorCode::kStorageError,
                   "cannot read the import spool " + body.path + ": " + std::strerror(errno));
      break;
    }
    const size_t n = static_cast<size_t>(in.gcount());
    if (n == 0) break;
    {
      std::lock_guard<std::mutex> lock(meet->mu);
      meet->more.reset();
    }
    run.Consume(std::string_view(piece.data(), n), [meet](bool more) {
      std::lock_guard<std::mutex> lock(meet->mu);
      meet->more = more;
      meet->cv.notify_all();
    });
    bool more = false;
    {
      std::unique_lock<std::mutex> lock(meet->mu);
      meet->cv.wait(lock, [&] { return meet->more.has_value(); });
      more = *meet->more;
    }
    uint64_t lines = 0;
    for (size_t i = 0; i < n; ++i) lines += piece[i] == '\n';
    last = piece[n - 1];
    job.AddDone(lines);
    job.AddBytesDone(n);
    if (!more) break;  // the run reads no further (onError=stop, a storage error)
  }
  in.close();
  run.Finish(cut, [meet](ImportReport report) {
    std::lock_guard<std::mutex> lock(meet->mu);
    meet->report = std::move(report);
    meet->cv.notify_all();
  });
  ImportReport report;
  {
    std::unique_lock<std::mutex> lock(meet->mu);
    meet->cv.wait(lock, [&] { return meet->report.has_value(); });
    report = std::move(*meet->report);
  }
  if (cut.ok() && last != '\n' && body.bytes > 0) job.AddDone(1);  // a last line without '\n'
  ::unlink(body.path.c_str());
  return report;
}

}  // namespace feedd
