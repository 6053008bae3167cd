#include "daemon/http_request_head.h"

#include <string>
#include <utility>

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

void ConfigureRequestParser(RequestParser& parser, size_t max_request_bytes) {
  parser.header_limit(kMaxRequestHeadBytes);
  parser.body_limit(max_request_bytes);
}

HttpRequest ToHttpRequest(RequestMessage& message) {
  HttpRequest request;
  request.method = ToMethod(message.method());
  request.target = std::string(message.target());
  for (const auto& field : message) {
    request.headers.push_back({std::string(field.name_string()), std::string(field.value())});
  }
  request.body = std::move(message.body());
  return request;
}

}  // namespace feedd
