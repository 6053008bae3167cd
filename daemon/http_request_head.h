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
#include "util/status.h"

namespace feedd {

using RequestMessage = boost::beast::http::request<boost::beast::http::string_body>;
using RequestParser = boost::beast::http::request_parser<boost::beast::http::string_body>;

// Sets the limits of a fresh parser: a body above `max_request_bytes` fails
// with http::error::body_limit (413 payload_too_large), a head above
// kMaxRequestHeadBytes with http::error::header_limit (400 invalid_request).
inline constexpr size_t kMaxRequestHeadBytes = 8 * 1024;
void ConfigureRequestParser(RequestParser& parser, size_t max_request_bytes);

// The message framing of a request head (RFC 9112 6.1 and 6.3): OK when the
// server can read the body; otherwise the error to answer before closing the
// connection, so that what follows the head is never read as a request:
// kNotImplemented (501) for a transfer coding other than chunked,
// kInvalidRequest (400) for chunked twice, Transfer-Encoding in HTTP/1.0, or
// Transfer-Encoding with Content-Length.
Status CheckFraming(const RequestMessage& request);

// The request the handler gets: method, target, every header in order, and
// the body, which is moved out of `message`.
HttpRequest ToHttpRequest(RequestMessage& message);
// The same without the body (which stays in `message`): the head a
// BodyStream is chosen by.
HttpRequest HeadOf(const RequestMessage& message);

}  // namespace feedd
