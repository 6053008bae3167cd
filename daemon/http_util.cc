#include "daemon/http_util.h"

#include <algorithm>
#include <boost/json/monotonic_resource.hpp>
#include <boost/json/serialize.hpp>
#include <cctype>

#include "util/json_parse.h"
#include "util/logging.h"
#include "util/utf8.h"

namespace feedd {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string_view TrimOws(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

Result<std::string> PercentDecode(std::string_view in, bool plus_is_space) {
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '%') {
      int high = i + 2 < in.size() ? HexValue(in[i + 1]) : -1;
      int low = high >= 0 ? HexValue(in[i + 2]) : -1;
      if (low < 0) {
        return Status(ErrorCode::kInvalidRequest,
                      "bad percent-escape in '" + std::string(in) + "'");
      }
      out += static_cast<char>(high * 16 + low);
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

Result<std::vector<std::string>> SplitPath(std::string_view path) {
  if (path.empty() || path.front() != '/') {
    return Status(ErrorCode::kInvalidRequest, "the request target must start with '/'");
  }
  std::vector<std::string> segments;
  path.remove_prefix(1);
  while (true) {
    size_t slash = path.find('/');
    Result<std::string> segment = PercentDecode(path.substr(0, slash), false);
    if (!segment.ok()) return segment.status();
    segments.push_back(std::move(*segment));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return segments;
}

Result<std::vector<QueryParam>> ParseQueryString(std::string_view query) {
  std::vector<QueryParam> params;
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    size_t eq = pair.find('=');
    Result<std::string> name = PercentDecode(pair.substr(0, eq), true);
    if (!name.ok()) return name.status();
    Result<std::string> value =
        PercentDecode(eq == std::string_view::npos ? "" : pair.substr(eq + 1), true);
    if (!value.ok()) return value.status();
    for (const QueryParam& param : params) {
      if (param.name == *name) {
        return Status(ErrorCode::kInvalidRequest,
                      "query parameter '" + *name + "' is given more than once");
      }
    }
    params.push_back({std::move(*name), std::move(*value)});
  }
  return params;
}

bool ParseUint64(std::string_view text, uint64_t* out) {
  if (text.empty() || text.size() > 20) return false;
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    uint64_t digit = static_cast<uint64_t>(c - '0');
    if (value > (UINT64_MAX - digit) / 10) return false;
    value = value * 10 + digit;
  }
  *out = value;
  return true;
}

bool IsJsonContentType(std::optional<std::string_view> content_type) {
  if (!content_type) return true;
  std::string_view media = TrimOws(content_type->substr(0, content_type->find(';')));
  constexpr std::string_view kJson = "application/json";
  return media.size() == kJson.size() &&
         std::equal(media.begin(), media.end(), kJson.begin(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) == b;
         });
}

bool IsNdjsonContentType(std::optional<std::string_view> content_type) {
  if (IsJsonContentType(content_type)) return true;
  std::string media(TrimOws(content_type->substr(0, content_type->find(';'))));
  for (char& c : media) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return media == "application/x-ndjson" || media == "application/jsonl";
}

Result<boost::json::value> ParseJsonBody(std::string_view body) {
  Result<boost::json::value> value = ParseJson(body);
  if (!value.ok() && value.status().code() == ErrorCode::kInvalidJson) {
    return Status(ErrorCode::kInvalidJson, "the body is " + value.status().message());
  }
  return value;
}

Result<boost::json::value> ParseRequestJson(const HttpRequest& request) {
  if (!IsJsonContentType(request.Header("Content-Type"))) {
    return Status(ErrorCode::kUnsupportedMediaType, "Content-Type must be application/json");
  }
  return ParseJsonBody(request.body);
}

std::string JsonString(std::string_view text) {
  if (IsValidUtf8(text)) return boost::json::serialize(text);
  return boost::json::serialize(ToValidUtf8(text));
}

std::string ErrorJson(const Status& status) {
  std::string out = R"({"error":{"code":")";
  out += ErrorCodeName(status.code());
  out += R"(","message":)";
  out += JsonString(status.message());
  out += "}}";
  return out;
}

HttpResponse ErrorResponse(const Status& status) {
  int http_status = ErrorCodeHttpStatus(status.code());
  if (http_status >= 500) {
    FEEDD_LOG_EVERY_N_SEC(kWarning, "api", 10) << "answering " << status.ToString();
  }
  HttpResponse response = JsonResponse(http_status, ErrorJson(status));
  if (http_status == 503 || http_status == 429) response.headers.push_back({"Retry-After", "1"});
  return response;
}

HttpResponse JsonResponse(int status, std::string body) {
  HttpResponse response;
  response.status = status;
  response.body = std::move(body);
  return response;
}

Result<std::string> NormalizeIfMatch(std::string_view value) {
  value = TrimOws(value);
  if (value == "*") return std::string(value);
  bool quoted = value.size() >= 2 && value.front() == '"' && value.back() == '"';
  std::string_view inner = quoted ? value.substr(1, value.size() - 2) : value;
  if (inner.empty() || inner.find_first_of("\",") != std::string_view::npos ||
      value.starts_with("W/")) {
    return Status(ErrorCode::kInvalidRequest,
                  "If-Match must be one strong ETag or '*', got '" + std::string(value) + "'");
  }
  return "\"" + std::string(inner) + "\"";
}

}  // namespace feedd
