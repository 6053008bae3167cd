// WriteFileAtomically: replaces a file so that a reader (or the next start
// after a crash) sees either the old content or the new one, never a partial
// file: a temporary file in the same directory, fsynced, then renamed.
//
// Thread-safety: callers serialize writes to one path (the temporary file is
// named after the process).
#pragma once

#include <string>

#include "util/status.h"

namespace feedd {

// Atomically replaces `path` with `content`. Fails with `internal`.
Status WriteFileAtomically(const std::string& path, const std::string& content);

}  // namespace feedd
