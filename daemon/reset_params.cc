#include "daemon/reset_params.h"

#include <optional>
#include <string>
#include <vector>

#include "daemon/http_util.h"

namespace feedd {

Result<Lsn> ParseResetLsn(std::string_view query, Lsn oldest_retained) {
  Result<std::vector<QueryParam>> params = ParseQueryString(query);
  if (!params.ok()) return params.status();
  std::optional<std::string> text;
  for (const QueryParam& p : *params) {
    if (p.name != "lsn") {
      return Status(ErrorCode::kInvalidRequest, "unknown parameter '" + p.name + "'");
    }
    if (text) return Status(ErrorCode::kInvalidRequest, "lsn is given more than once");
    text = p.value;
  }
  if (!text) return Status(ErrorCode::kInvalidRequest, "lsn is required: ?lsn=N or ?lsn=oldest");
  if (*text == "oldest") return oldest_retained == 0 ? 0 : oldest_retained - 1;
  Lsn lsn = 0;
  if (!ParseUint64(*text, &lsn)) {
    return Status(ErrorCode::kInvalidRequest,
                  "lsn must be a non-negative integer or 'oldest', not '" + *text + "'");
  }
  return lsn;
}

}  // namespace feedd
