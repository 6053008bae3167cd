// Helpers of the HTTP API (docs/api.md): percent-decoding, query strings,
// header values, JSON bodies, and the error body every failure answers.
//
// Thread-safety: free functions, no shared state.
#pragma once

#include <boost/json/value.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/http_handler.h"
#include "util/status.h"

namespace feedd {

// `text` without leading and trailing spaces and tabs (a header value's
// optional whitespace, RFC 9110 5.6.3).
std::string_view TrimOws(std::string_view text);

// Percent-decodes `in` (once). With `plus_is_space` ('+' in a query string)
// a '+' becomes ' '. A bad escape ("%zz", "%4") is invalid_request.
Result<std::string> PercentDecode(std::string_view in, bool plus_is_space);

// Splits an origin-form path ("/v1/containers/users") into percent-decoded
// segments ({"v1", "containers", "users"}).
Result<std::vector<std::string>> SplitPath(std::string_view path);

struct QueryParam {
  std::string name;
  std::string value;
};
// Parses "a=1&b=x%20y". A repeated name or a bad escape is invalid_request.
Result<std::vector<QueryParam>> ParseQueryString(std::string_view query);

// A decimal unsigned integer without sign or spaces; false on overflow.
bool ParseUint64(std::string_view text, uint64_t* out);

// True for a missing Content-Type and for application/json with any
// parameters (docs/api.md); false for every other media type.
bool IsJsonContentType(std::optional<std::string_view> content_type);
// The body of an import: true for a missing Content-Type, application/json,
// application/x-ndjson and application/jsonl (any parameters).
bool IsNdjsonContentType(std::optional<std::string_view> content_type);

// Parses a request body with ParseJson() (util/json_parse.h): invalid JSON
// (including invalid UTF-8 and nesting deeper than kMaxParseDepth) is
// invalid_json with the parser's message; an out-of-range number is
// invalid_number.
Result<boost::json::value> ParseJsonBody(std::string_view body);
// ParseJsonBody(request.body), after checking the Content-Type (415
// unsupported_media_type unless IsJsonContentType).
Result<boost::json::value> ParseRequestJson(const HttpRequest& request);

// `text` as a JSON string literal, quoted and escaped; bytes that are not
// valid UTF-8 (a percent-decoded path echoed in a message) become U+FFFD.
std::string JsonString(std::string_view text);

// {"error":{"code":"<ErrorCodeName>","message":"..."}}. REQUIRES: !status.ok().
std::string ErrorJson(const Status& status);
// ErrorCodeHttpStatus(code) with ErrorJson(status); a 503 or 429 has
// `Retry-After: 1`. A 5xx is logged (at most one line per 10 s).
HttpResponse ErrorResponse(const Status& status);
HttpResponse JsonResponse(int status, std::string body);

// An If-Match value as storage compares it: "*" stays "*", a quoted ETag
// stays as is, an unquoted one is quoted. A list, a weak ETag or an empty
// value is invalid_request.
Result<std::string> NormalizeIfMatch(std::string_view value);

}  // namespace feedd
