// ParseResetLsn: the query string of POST /v1/processors/{name}/reset
// (docs/api.md, "Processors"): "lsn=N" or "lsn=oldest".
//
// Thread-safety: a free function.
#pragma once

#include <string_view>

#include "storage/change_record.h"
#include "util/status.h"

namespace feedd {

// The LSN a reset moves the processor's watermark back to: N, or for
// `oldest` the LSN before `oldest_retained` (the oldest change the feed
// still holds), so that every retained change is applied again. A missing,
// repeated or unknown parameter, a bad escape or a value that is not a
// non-negative integer is invalid_request naming what is wrong.
Result<Lsn> ParseResetLsn(std::string_view query, Lsn oldest_retained);

}  // namespace feedd
