// Fuzzes ParseFeedParams (daemon/feed_params.h), the query string of
// GET /v1/changefeed ("container=posts&from=12&limit=10&waitMs=500").
//
// Invariants: accepted values are in range (a container name is not empty,
// from >= 1, limit 1..10000, waitMs 0..30000); written back as a query
// string they parse to the same values; every failure has a JSON error body.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "daemon/feed_params.h"
#include "tests/fuzz/fuzz_checks.h"

namespace feedd {
namespace {

std::string ToQuery(const FeedParams& params) {
  std::string query =
      "limit=" + std::to_string(params.limit) + "&waitMs=" + std::to_string(params.wait.count());
  if (params.container) query += "&container=" + fuzz::PercentEncodeAll(*params.container);
  switch (params.start) {
    case FeedStart::kBeginning:
      return query + "&from=beginning";
    case FeedStart::kNow:
      return query + "&from=now";
    case FeedStart::kLsn:
      return query + "&from=" + std::to_string(params.from);
  }
  return query;
}

void Check(std::string_view query) {
  Result<FeedParams> params = ParseFeedParams(query);
  if (!params.ok()) return fuzz::CheckClientError(params.status());
  FUZZ_CHECK(!params->container || !params->container->empty(), "an empty container name");
  FUZZ_CHECK(params->from >= 1, "from " + std::to_string(params->from));
  FUZZ_CHECK(params->limit >= 1 && params->limit <= kMaxFeedLimit,
             "limit " + std::to_string(params->limit));
  FUZZ_CHECK(
      params->wait.count() >= 0 && static_cast<uint64_t>(params->wait.count()) <= kMaxFeedWaitMs,
      "waitMs " + std::to_string(params->wait.count()));

  fuzz::CheckQueryReadsBack(query, ToQuery(*params), *params, ParseFeedParams,
                            [](const FeedParams& a, const FeedParams& b) {
                              return a.container == b.container && a.start == b.start &&
                                     a.from == b.from && a.limit == b.limit && a.wait == b.wait;
                            });
}

}  // namespace
}  // namespace feedd

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  feedd::Check(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
