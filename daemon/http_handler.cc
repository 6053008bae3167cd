#include "daemon/http_handler.h"

#include <algorithm>
#include <cctype>

#include "util/logging.h"

namespace feedd {
namespace {

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

std::string_view HttpMethodName(HttpMethod method) {
  switch (method) {
    case HttpMethod::kGet:
      return "GET";
    case HttpMethod::kHead:
      return "HEAD";
    case HttpMethod::kPost:
      return "POST";
    case HttpMethod::kPut:
      return "PUT";
    case HttpMethod::kPatch:
      return "PATCH";
    case HttpMethod::kDelete:
      return "DELETE";
    case HttpMethod::kOptions:
      return "OPTIONS";
    case HttpMethod::kOther:
      break;
  }
  return "OTHER";
}

std::optional<std::string_view> HttpRequest::Header(std::string_view name) const {
  for (const HttpHeader& header : headers) {
    if (EqualsIgnoreCase(header.name, name)) return std::string_view(header.value);
  }
  return std::nullopt;
}

Responder& Responder::operator=(Responder&& other) noexcept {
  if (this != &other) {
    if (sink_ != nullptr) sink_->Abandon();
    sink_ = std::move(other.sink_);
  }
  return *this;
}

Responder::~Responder() {
  if (sink_ != nullptr) sink_->Abandon();
}

void Responder::Send(HttpResponse response) {
  if (sink_ == nullptr) {
    FEEDD_LOG(kError, "http") << "bug: a response was sent twice for one request";
    return;
  }
  std::shared_ptr<ResponseSink> sink = std::move(sink_);
  sink->Deliver(std::move(response));
}

void Responder::Post(std::function<void()> work) {
  if (sink_ == nullptr) {
    FEEDD_LOG(kError, "http") << "bug: work posted for a request answered already";
    return;
  }
  sink_->Post(std::move(work));
}

}  // namespace feedd
