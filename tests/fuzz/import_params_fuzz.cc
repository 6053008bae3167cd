// Fuzzes ParseImportParams (daemon/import_params.h), the query string of
// POST /v1/containers/{c}/import ("ifExists=replace&onError=stop&job=true").
//
// Invariants: written back as a query string, accepted parameters parse to
// the same values; every failure has a JSON error body.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "daemon/import_params.h"
#include "tests/fuzz/fuzz_checks.h"

namespace feedd {
namespace {

std::string ToQuery(const ImportParams& params) {
  std::string query = "ifExists=";
  switch (params.if_exists) {
    case ImportIfExists::kSkip:
      query += "skip";
      break;
    case ImportIfExists::kReplace:
      query += "replace";
      break;
    case ImportIfExists::kFail:
      query += "fail";
      break;
  }
  query += params.stop_on_error ? "&onError=stop" : "&onError=continue";
  return query + (params.as_job ? "&job=true" : "&job=false");
}

void Check(std::string_view query) {
  Result<ImportParams> params = ParseImportParams(query);
  if (!params.ok()) return fuzz::CheckClientError(params.status());
  fuzz::CheckQueryReadsBack(query, ToQuery(*params), *params, ParseImportParams,
                            [](const ImportParams& a, const ImportParams& b) {
                              return a.if_exists == b.if_exists &&
                                     a.stop_on_error == b.stop_on_error && a.as_job == b.as_job;
                            });
}

}  // namespace
}  // namespace feedd

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  feedd::Check(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
