// The reading of one HTTP request as HttpServer does it with Boost.Beast:
// how the parser is limited, and how a parsed message becomes the
// HttpRequest handed to the HttpHandler. Kept apart from the server's
// sockets so that tests/fuzz/http_request_fuzz.cc can drive exactly this
// with raw bytes.
//
// Thread-safety: free functions, no shared state.
#pragma once

#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cstddef>

#include "daemon/http_handler.h"

namespace feedd {

using RequestMessage = boost::beast::http::request<boost::beast::http::string_body>;
using RequestParser = boost::beast::http::request_parser<boost::beast::http::string_body>;

// Sets the limits of a fresh parser: a body above `max_request_bytes` fails
// with http::error::body_limit (413 payload_too_large), a head above
// kMaxRequestHeadBytes with http::error::header_limit (400 invalid_request).
inline constexpr size_t kMaxRequestHeadBytes = 8 * 1024;
void ConfigureRequestParser(RequestParser& parser, size_t max_request_bytes);

// The request the handler gets: method, target, every header in order, and
// the body, which is moved out of `message`.
HttpRequest ToHttpRequest(RequestMessage& message);

}  // namespace feedd
