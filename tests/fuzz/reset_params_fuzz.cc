// Fuzzes ParseResetLsn (daemon/reset_params.h), the query string of
// POST /v1/processors/{name}/reset ("lsn=12", "lsn=oldest").
//
// Invariants: an accepted query names one LSN; written back as "lsn=N" it
// parses to the same LSN; `oldest` is the LSN before the oldest retained
// one; every failure has a JSON error body.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "daemon/reset_params.h"
#include "tests/fuzz/fuzz_checks.h"

namespace feedd {
namespace {

constexpr Lsn kOldestRetained = 1000;

void Check(std::string_view query) {
  Result<Lsn> lsn = ParseResetLsn(query, kOldestRetained);
  if (!lsn.ok()) return fuzz::CheckClientError(lsn.status());
  fuzz::CheckQueryReadsBack(
      query, "lsn=" + std::to_string(*lsn), *lsn,
      [](std::string_view q) { return ParseResetLsn(q, kOldestRetained); },
      [](Lsn a, Lsn b) { return a == b; });
  Result<Lsn> oldest = ParseResetLsn("lsn=oldest", kOldestRetained);
  FUZZ_CHECK(oldest.ok() && *oldest == kOldestRetained - 1, "lsn=oldest");
}

}  // namespace
}  // namespace feedd

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  feedd::Check(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
