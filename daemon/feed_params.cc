#include "daemon/feed_params.h"

#include <algorithm>
#include <vector>

#include "daemon/http_util.h"

namespace feedd {
namespace {

Status BadParam(const std::string& name, std::string_view expected, const std::string& value) {
  return Status(ErrorCode::kInvalidRequest, "query parameter '" + name + "' must be " +
                                                std::string(expected) + ", got '" + value + "'");
}

}  // namespace

Result<FeedParams> ParseFeedParams(std::string_view query) {
  Result<std::vector<QueryParam>> params = ParseQueryString(query);
  if (!params.ok()) return params.status();
  FeedParams out;
  for (const QueryParam& param : *params) {
    uint64_t number = 0;
    if (param.name == "container") {
      if (param.value.empty()) return BadParam(param.name, "a container name", param.value);
      out.container = param.value;
    } else if (param.name == "from") {
      if (param.value == "beginning") {
        out.start = FeedStart::kBeginning;
      } else if (param.value == "now") {
        out.start = FeedStart::kNow;
      } else if (ParseUint64(param.value, &number)) {
        out.start = FeedStart::kLsn;
        out.from = std::max<Lsn>(number, 1);  // LSNs start at 1
      } else {
        return BadParam(param.name, "'beginning', 'now' or an LSN", param.value);
      }
    } else if (param.name == "limit") {
      if (!ParseUint64(param.value, &number) || number < 1 || number > kMaxFeedLimit) {
        return BadParam(param.name, "an integer in 1..10000", param.value);
      }
      out.limit = number;
    } else if (param.name == "waitMs") {
      if (!ParseUint64(param.value, &number) || number > kMaxFeedWaitMs) {
        return BadParam(param.name, "an integer in 0..30000", param.value);
      }
      out.wait = std::chrono::milliseconds(number);
    } else {
      return Status(ErrorCode::kInvalidRequest, "unknown query parameter '" + param.name + "'");
    }
  }
  return out;
}

}  // namespace feedd
