// feedctl import: streams an NDJSON file (or standard input) into
// POST /v1/containers/{c}/import with chunked transfer coding
// (HttpClient::SendStream, over HTTP or HTTPS), so that a file of any size
// is sent without being read into memory, and shows progress on stderr
// (bytes and lines sent, rate) once a second. The daemon's report (counts,
// per-line errors) goes to stdout as JSON, a summary to stderr.
//
// Thread-safety: one call at a time (it ignores SIGPIPE for the process).
#pragma once

#include <string>

namespace feedd {

class HttpClient;

struct ImportCommand {
  std::string container;
  std::string file;       // "-" or "": standard input
  std::string if_exists;  // "" (the daemon's default), skip, replace, fail
  std::string on_error;   // "" (the daemon's default), continue, stop
  bool progress = true;   // progress lines on stderr
};

// Exit codes as feedctl's: 0 every line imported (created or skipped),
// 1 some lines failed or the import did not complete (or was refused), 2 the
// file cannot be read, 3 the daemon cannot be reached or did not answer.
int RunImport(HttpClient& client, const ImportCommand& command);

}  // namespace feedd
