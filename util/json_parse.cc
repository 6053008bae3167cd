#include "util/json_parse.h"

#include <algorithm>
#include <boost/json/basic_parser_impl.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/value_stack.hpp>
#include <charconv>
#include <cmath>
#include <exception>
#include <string>

namespace feedd {
namespace {

namespace json = boost::json;

// Builds the value like Boost.JSON's own parser handler (a value_stack), and
// refuses the numbers that boost::json::parse() would turn into Infinity.
class CheckingHandler {
 public:
  static constexpr size_t max_object_size = json::object::max_size();
  static constexpr size_t max_array_size = json::array::max_size();
  static constexpr size_t max_key_size = json::string::max_size();
  static constexpr size_t max_string_size = json::string::max_size();

  CheckingHandler(unsigned char* buffer, size_t size) : st({}, buffer, size) {}

  json::value_stack st;
  std::string bad_number;  // the literal that failed, when one did

  bool on_document_begin(json::error_code&) { return true; }
  bool on_document_end(json::error_code&) { return true; }
  bool on_object_begin(json::error_code&) { return true; }
  bool on_object_end(size_t n, json::error_code&) {
    st.push_object(n);
    return true;
  }
  bool on_array_begin(json::error_code&) { return true; }
  bool on_array_end(size_t n, json::error_code&) {
    st.push_array(n);
    return true;
  }
  bool on_key_part(json::string_view s, size_t, json::error_code&) {
    st.push_chars(s);
    return true;
  }
  bool on_key(json::string_view s, size_t, json::error_code&) {
    st.push_key(s);
    return true;
  }
  bool on_string_part(json::string_view s, size_t, json::error_code&) {
    st.push_chars(s);
    return true;
  }
  bool on_string(json::string_view s, size_t, json::error_code&) {
    st.push_string(s);
    return true;
  }
  bool on_number_part(json::string_view s, json::error_code&) {
    number_text_.append(s.data(), s.size());
    return true;
  }
  bool on_int64(int64_t i, json::string_view, json::error_code&) {
    number_text_.clear();
    st.push_int64(i);
    return true;
  }
  bool on_uint64(uint64_t u, json::string_view, json::error_code&) {
    number_text_.clear();
    st.push_uint64(u);
    return true;
  }
  bool on_double(double d, json::string_view s, json::error_code& ec) {
    number_text_.append(s.data(), s.size());
    if (!std::isfinite(d)) {
      bad_number = std::move(number_text_);
      ec = json::error::not_exact;
      return false;
    }
    st.push_double(ExactDouble(d));
    number_text_.clear();
    return true;
  }
  bool on_bool(bool b, json::error_code&) {
    st.push_bool(b);
    return true;
  }
  bool on_null(json::error_code&) {
    st.push_null();
    return true;
  }
  bool on_comment_part(json::string_view, json::error_code&) { return true; }
  bool on_comment(json::string_view, json::error_code&) { return true; }

 private:
  // Boost.JSON 1.81 reads some literals 1-2 ULPs off the nearest double,
  // while its serializer writes the shortest text that reads back exactly:
  // with its reading, a stored double could come back as another one (a
  // query for the written literal, or the index entry a delete looks for,
  // would then miss it). The C++ library's conversion is correctly rounded.
  // `boost_value` stays where the library refuses the literal (an underflow
  // such as 1e-400, which Boost reads as 0).
  double ExactDouble(double boost_value) const {
    double exact = 0;
    const char* first = number_text_.data();
    const char* last = first + number_text_.size();
    auto [end, error] = std::from_chars(first, last, exact);
    if (error != std::errc() || end != last || !std::isfinite(exact)) return boost_value;
    return exact;
  }

  std::string number_text_;  // the number's text: parts from on_number_part(), then the last
};

Status BadNumber(std::string literal) {
  constexpr size_t kShown = 40;
  if (literal.size() > kShown) literal = literal.substr(0, kShown) + "...";
  return Status(ErrorCode::kInvalidNumber,
                "the number " + literal + " is out of range: numbers must be finite doubles");
}

}  // namespace

Result<boost::json::value> ParseJson(std::string_view text, boost::json::storage_ptr sp) {
  json::parse_options options;
  options.max_depth = kMaxParseDepth;
  unsigned char stack_buffer[4096];  // the parser's stack; the heap only for large documents
  try {
    json::basic_parser<CheckingHandler> parser(options, stack_buffer, sizeof(stack_buffer));
    parser.handler().st.reset(std::move(sp));
    json::error_code ec;
    const size_t used = parser.write_some(false, text.data(), text.size(), ec);
    if (!ec && used < text.size()) ec = json::error::extra_data;
    if (!parser.handler().bad_number.empty()) return BadNumber(parser.handler().bad_number);
    if (ec) return Status(ErrorCode::kInvalidJson, "not valid JSON: " + ec.message());
    return parser.handler().st.release();
  } catch (const std::exception& e) {  // allocation failures, sizes over Boost's maxima
    return Status(ErrorCode::kInvalidJson, std::string("not valid JSON: ") + e.what());
  }
}

Result<boost::json::value> ParseLegacyJson(std::string_view text) {
  // Boost.JSON 1.81 serialized a non-finite double as Infinity, -Infinity or
  // NaN; it parses 1e999 back to the infinity.
  std::string repaired;
  repaired.reserve(text.size() + 16);
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      repaired += c;
      if (c == '\\' && i + 1 < text.size()) {
        repaired += text[++i];
      } else if (c == '"') {
        in_string = false;
      }
    } else if (text.substr(i, 8) == "Infinity") {
      repaired += "1e999";
      i += 7;
    } else if (text.substr(i, 3) == "NaN") {
      repaired += "null";
      i += 2;
    } else {
      in_string = c == '"';
      repaired += c;
    }
  }
  json::parse_options options;
  options.max_depth = kMaxParseDepth;
  json::error_code ec;
  json::value value = json::parse(repaired, ec, {}, options);
  if (ec) return Status(ErrorCode::kInvalidJson, "not valid JSON: " + ec.message());
  return value;
}

size_t JsonDepth(const boost::json::value& v, size_t limit) {
  if (limit == 0) return v.is_structured() ? 1 : 0;
  size_t deepest = 0;
  if (const auto* o = v.if_object()) {
    for (const auto& member : *o) {
      deepest = std::max(deepest, JsonDepth(member.value(), limit - 1));
      if (deepest >= limit) break;
    }
    return deepest + 1;
  }
  if (const auto* a = v.if_array()) {
    for (const auto& element : *a) {
      deepest = std::max(deepest, JsonDepth(element, limit - 1));
      if (deepest >= limit) break;
    }
    return deepest + 1;
  }
  return 0;
}

Status CheckItemDepth(const boost::json::value& v, std::string_view what) {
  if (JsonDepth(v) <= kMaxItemDepth) return Status::Ok();
  return Status(ErrorCode::kInvalidJson, std::string(what) + " nests deeper than " +
                                             std::to_string(kMaxItemDepth) + " levels");
}

}  // namespace feedd
