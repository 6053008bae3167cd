#include "storage/query_continuation.h"

#include <boost/json.hpp>

#include "util/json_parse.h"

namespace feedd {
namespace {

std::string HexEncode(std::string_view in) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  out.reserve(in.size() * 2);
  for (unsigned char c : in) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

bool HexDecode(std::string_view in, std::string* out) {
  if (in.size() % 2 != 0) return false;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  out->clear();
  for (size_t i = 0; i < in.size(); i += 2) {
    int hi = nibble(in[i]), lo = nibble(in[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out->push_back(static_cast<char>(hi << 4 | lo));
  }
  return true;
}

Status BadContinuation() {
  return Status(ErrorCode::kInvalidQuery, "'continuation' is not one this query returned");
}

}  // namespace

Result<QueryContinuation> DecodeQueryContinuation(const std::string& token) {
  QueryContinuation c;
  if (token.empty()) return c;
  std::string json;
  if (!HexDecode(token, &json)) return BadContinuation();
  Result<boost::json::value> v = ParseJson(json);
  const auto* obj = v.ok() ? v->if_object() : nullptr;
  if (obj == nullptr) return BadContinuation();
  const auto* key = obj->if_contains("k");
  if (key == nullptr || !key->is_string() || !HexDecode(key->get_string(), &c.row_key)) {
    return BadContinuation();
  }
  if (const auto* sv = obj->if_contains("v")) c.sort_value = *sv;
  c.present = true;
  return c;
}

std::string EncodeQueryContinuation(std::string_view row_key, const boost::json::value* sort_value,
                                    bool ordered) {
  boost::json::object obj;
  obj["k"] = HexEncode(row_key);
  if (ordered && sort_value != nullptr) obj["v"] = *sort_value;
  return HexEncode(boost::json::serialize(obj));
}

}  // namespace feedd
