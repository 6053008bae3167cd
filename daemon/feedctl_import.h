// feedctl import: uploads an NDJSON file (or standard input) as an import
// job, POST /v1/containers/{c}/import?job=true with chunked transfer coding
// (HttpClient::SendStream, over HTTP or HTTPS), so that a file of any size
// is sent without being read into memory, with progress on stderr (bytes
// and lines sent, rate) once a second; feedctl then follows the job
// (feedctl.cc) and ends with SummarizeImport.
//
// Thread-safety: one call at a time (it ignores SIGPIPE for the process).
#pragma once

#include <boost/json/object.hpp>
#include <string>

#include "util/http_client.h"

namespace feedd {

struct ImportCommand {
  std::string container;
  std::string file;       // "-" or "": standard input
  std::string if_exists;  // "" (the daemon's default), skip, replace, fail
  std::string on_error;   // "" (the daemon's default), continue, stop
  bool progress = true;   // progress lines on stderr
};

// The upload's outcome: the daemon's reply (202 with the job, or an
// error), or the exit code when there is none: 2 the file cannot be read,
// 3 the daemon cannot be reached or did not answer (the error on stderr).
struct ImportUpload {
  int exit_code = 0;
  HttpReply reply;
};
ImportUpload UploadImport(HttpClient& client, const ImportCommand& command);

// Prints the report of a finished import (the job's result) as JSON on
// stdout and a summary on stderr; the exit code as feedctl's: 0 every line
// imported (created or skipped), 1 some lines failed or the import did not
// complete.
int SummarizeImport(const ImportCommand& command, const boost::json::object& report);

}  // namespace feedd
