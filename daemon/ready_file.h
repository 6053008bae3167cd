// The --ready-file of the contract: once the daemon serves, a JSON object
// with the bound addresses, written atomically (a temporary file in the same
// directory, fsynced, then renamed), so a reader never sees a partial file.
//
// Thread-safety: free functions; callers serialize writes to one path.
#pragma once

#include <optional>
#include <string>

#include "util/status.h"

namespace feedd {

// {"api":"HOST:PORT","metrics":"HOST:PORT"|null,"kafka":"BOOTSTRAP"|null}
std::string ReadyFileJson(const std::string& api, const std::optional<std::string>& metrics,
                          const std::optional<std::string>& kafka);

// Atomically replaces `path` with `content`. Fails with `internal`.
Status WriteFileAtomically(const std::string& path, const std::string& content);

}  // namespace feedd
