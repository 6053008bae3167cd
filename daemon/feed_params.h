// FeedParams: the query parameters of GET /v1/changefeed (docs/api.md,
// "Change feed"): container, from, limit and waitMs, parsed from the raw
// query string.
//
// Thread-safety: plain value and a free function.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "storage/change_record.h"
#include "util/status.h"

namespace feedd {

inline constexpr uint64_t kDefaultFeedLimit = 100;
inline constexpr uint64_t kMaxFeedLimit = 10000;
inline constexpr uint64_t kMaxFeedWaitMs = 30000;

enum class FeedStart { kBeginning, kNow, kLsn };

struct FeedParams {
  std::optional<std::string> container;  // not empty when set
  FeedStart start = FeedStart::kBeginning;
  Lsn from = 1;                       // for kLsn; at least 1
  size_t limit = kDefaultFeedLimit;   // 1..kMaxFeedLimit
  std::chrono::milliseconds wait{0};  // 0..kMaxFeedWaitMs
};

// Parses a query string such as "container=posts&from=12&limit=10&waitMs=500"
// (without the '?'). An unknown or repeated parameter, a bad escape or a
// value out of range is invalid_request naming the parameter.
Result<FeedParams> ParseFeedParams(std::string_view query);

}  // namespace feedd
