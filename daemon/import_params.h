// ImportParams: the query string of POST /v1/containers/{c}/import
// (docs/api.md, "Bulk import"): ifExists, onError and job.
//
// Thread-safety: plain value and a free function.
#pragma once

#include <string_view>

#include "util/status.h"

namespace feedd {

enum class ImportIfExists { kSkip, kReplace, kFail };

struct ImportParams {
  ImportIfExists if_exists = ImportIfExists::kSkip;
  bool stop_on_error = false;
  bool as_job = false;  // job=true: spool the body, answer 202 with an import job
};

// Parses "ifExists=skip|replace|fail&onError=continue|stop&job=true|false";
// anything else is invalid_request.
Result<ImportParams> ParseImportParams(std::string_view query);

}  // namespace feedd
