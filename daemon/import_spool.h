// ImportSpool: the body of an import started as a job
// (POST /v1/containers/{c}/import?job=true, docs/api.md "Bulk import"),
// written to a file of the spool directory as it arrives, so that the job
// reads it at its own pace, after the client has gone.
//
// Operation
//   Each piece is appended to the file (a POSIX write on the connection's
//   strand: page cache, no fsync; the file does not outlive a restart) and
//   its lines counted as NdjsonLines numbers them ('\n', and a last line
//   without one). The request is answered with an error, the file removed
//   and `on_refused` told the reason (for the metric) when
//     - the body passes max_bytes (import.spool_max_mb): reading stops,
//       413 payload_too_large, reason "spool_limit";
//     - a write fails for want of space (ENOSPC, EDQUOT): reading stops,
//       507 insufficient_storage, reason "no_space"; any other failed write
//       or open is 500 storage_error, reason "spool_error";
//     - the body is cut short (the client went away): reason
//       "upload_failed" (the answer, if it can still be sent, is the error).
//   A body received whole is handed, in a closed file, to `on_received`,
//   which owns the file from then on and answers the request (202 with the
//   job).
//
// Concurrency: a BodyStream (Consume and Finish on the connection's strand).
// Ownership: owns the file until it hands it over; the stream destroyed
// before (the connection dropped) removes it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "daemon/http_handler.h"
#include "util/status.h"

namespace feedd {

// The spool directory, under the data directory.
inline constexpr const char* kImportSpoolDir = "import-spool";

struct SpooledBody {
  std::string path;
  uint64_t bytes = 0;
  uint64_t lines = 0;  // as NdjsonLines counts them, blank ones included
};

class ImportSpool {
 public:
  using OnReceived = std::function<void(SpooledBody body, Responder responder)>;
  using OnRefused = std::function<void(std::string_view reason)>;

  // A stream into a new file `path` (created exclusively; an open that fails
  // answers 500 storage_error after the body is refused).
  static std::unique_ptr<BodyStream> Create(std::string path, uint64_t max_bytes,
                                            OnReceived on_received, OnRefused on_refused);
};

// Creates the spool directory `dir` when it is missing and removes the
// files in it: the spools of jobs that a restart failed. *removed counts
// them.
Status ResetSpoolDirectory(const std::string& dir, size_t* removed);

}  // namespace feedd
