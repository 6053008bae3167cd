// The --ready-file of the contract: once the daemon serves, a JSON object
// with the bound addresses, written with WriteFileAtomically()
// (util/atomic_file.h), so a reader never sees a partial file.
//
// Thread-safety: free functions; callers serialize writes to one path.
#pragma once

#include <optional>
#include <string>

namespace feedd {

// {"api":"HOST:PORT","metrics":"HOST:PORT"|null,"kafka":"BOOTSTRAP"|null}
std::string ReadyFileJson(const std::string& api, const std::optional<std::string>& metrics,
                          const std::optional<std::string>& kafka);

}  // namespace feedd
