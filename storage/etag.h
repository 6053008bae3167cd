// The `_etag` of an item: derived from the LSN of its last write, so it
// changes on every write and costs nothing to compute. Clients treat it as
// opaque (docs/api.md).
//
// Thread-safety: free function.
#pragma once

#include <string>

#include "storage/write_request.h"

namespace feedd {

// "\"<lsn>\"": a strong HTTP entity tag, quotes included.
inline std::string EtagOf(Lsn lsn) { return "\"" + std::to_string(lsn) + "\""; }

}  // namespace feedd
