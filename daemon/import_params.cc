#include "daemon/import_params.h"

#include <string>
#include <vector>

#include "daemon/http_util.h"

namespace feedd {

Result<ImportParams> ParseImportParams(std::string_view query) {
  Result<std::vector<QueryParam>> params = ParseQueryString(query);
  if (!params.ok()) return params.status();
  ImportParams out;
  for (const QueryParam& p : *params) {
    if (p.name == "ifExists") {
      if (p.value == "skip") {
        out.if_exists = ImportIfExists::kSkip;
      } else if (p.value == "replace") {
        out.if_exists = ImportIfExists::kReplace;
      } else if (p.value == "fail") {
        out.if_exists = ImportIfExists::kFail;
      } else {
        return Status(ErrorCode::kInvalidRequest, "ifExists must be skip, replace or fail");
      }
    } else if (p.name == "onError") {
      if (p.value != "continue" && p.value != "stop") {
        return Status(ErrorCode::kInvalidRequest, "onError must be continue or stop");
      }
      out.stop_on_error = p.value == "stop";
    } else if (p.name == "job") {
      if (p.value != "true" && p.value != "false") {
        return Status(ErrorCode::kInvalidRequest, "job must be true or false");
      }
      out.as_job = p.value == "true";
    } else {
      return Status(ErrorCode::kInvalidRequest,
                    "unknown import parameter '" + p.name + "' (ifExists, onError, job)");
    }
  }
  return out;
}

}  // namespace feedd
