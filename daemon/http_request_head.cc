#include "daemon/http_request_head.h"

#include <boost/beast/core/string.hpp>
#include <string>
#include <utility>

#include "daemon/http_util.h"
#include "util/split_list.h"

namespace feedd {
namespace {

namespace http = boost::beast::http;

HttpMethod ToMethod(http::verb verb) {
  switch (verb) {
    case http::verb::get:
      return HttpMethod::kGet;
    case http::verb::head:
      return HttpMethod::kHead;
    case http::verb::post:
      return HttpMethod::kPost;
    case http::verb::put:
      return HttpMethod::kPut;
    case http::verb::patch:
      return HttpMethod::kPatch;
    case http::verb::delete_:
      return HttpMethod::kDelete;
    case http::verb::options:
      return HttpMethod::kOptions;
    default:
      return HttpMethod::kOther;
  }
}

}  // namespace

Status CheckFraming(const RequestMessage& request) {
  size_t codings = 0;
  bool only_chunked = true;
  bool present = false;
  auto [first, last] = request.equal_range(http::field::transfer_encoding);
  for (auto field = first; field != last; ++field) {
    present = true;
    for (std::string_view coding : SplitList(field->value())) {
      if (coding.empty()) continue;
      ++codings;
      if (!boost::beast::iequals(coding, "chunked")) only_chunked = false;
    }
  }
  if (!present) return Status::Ok();
  if (!only_chunked) {
    return Status(ErrorCode::kNotImplemented,
                  "only the chunked transfer coding is implemented (RFC 9112 6.1)");
  }
  if (codings != 1) {
    return Status(ErrorCode::kInvalidRequest, "chunked must be the only transfer coding, once");
  }
  if (request.version() < 11) {
    return Status(ErrorCode::kInvalidRequest, "Transfer-Encoding in an HTTP/1.0 request");
  }
  if (request.count(http::field::content_length) > 0) {
    return Status(ErrorCode::kInvalidRequest,
                  "a request must not have both Transfer-Encoding and Content-Length");
  }
  return Status::Ok();
}

void ConfigureRequestParser(RequestParser& parser, size_t max_request_bytes) {
  parser.header_limit(kMaxRequestHeadBytes);
  parser.body_limit(max_request_bytes);
}

HttpRequest HeadOf(const RequestMessage& message) {
  HttpRequest request;
  request.method = ToMethod(message.method());
  request.target = std::string(message.target());
  for (const auto& field : message) {
    request.headers.push_back({std::string(field.name_string()), std::string(field.value())});
  }
  return request;
}

HttpRequest ToHttpRequest(RequestMessage& message) {
  HttpRequest request = HeadOf(message);
  request.body = std::move(message.body());
  return request;
}

}  // namespace feedd
