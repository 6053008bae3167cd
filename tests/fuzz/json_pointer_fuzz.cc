// Fuzzes JsonPointer::Parse (storage/json_pointer.h), the parser of every
// patch path, query field and container path, with the raw pointer text.
//
// Invariants: a parsed pointer re-escapes to its text; it is the same as or
// under itself and its parent; array tokens ParseArrayIndex accepts are
// canonical; Find on a document never fails, and finds the value a pointer
// built from an existing path names; Find by text finds what the parsed
// pointer finds, and nothing for text that does not parse.
#include <boost/json/parse.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "storage/json_pointer.h"
#include "tests/fuzz/fuzz_checks.h"

namespace feedd {
namespace {

std::string Escape(std::string_view token) {
  std::string out;
  for (char c : token) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

const boost::json::value& Document() {
  static const boost::json::value document = boost::json::parse(
      R"({"id":"p1","postId":"p1","tags":["a","b",{"c":[0,1]}],"a/b":{"m~n":1},"":{"":2},)"
      R"("nested":{"0":{"1":[true,null,1.5]}}})");
  return document;
}

void CheckPointer(const JsonPointer& pointer) {
  std::string text;
  for (const std::string& token : pointer.tokens()) text += "/" + Escape(token);
  FUZZ_CHECK(text == pointer.text(), "'" + pointer.text() + "' re-escapes to '" + text + "'");
  FUZZ_CHECK(pointer.is_root() == pointer.text().empty(), pointer.text());
  FUZZ_CHECK(pointer.IsSameOrUnder(pointer), pointer.text());
  FUZZ_CHECK(pointer.IsSameOrUnder(JsonPointer()), pointer.text());

  if (!pointer.is_root()) {
    std::string parent_text = text.substr(0, text.rfind('/'));
    Result<JsonPointer> parent = JsonPointer::Parse(parent_text);
    FUZZ_CHECK(parent.ok(), "the parent of '" + text + "' does not parse");
    FUZZ_CHECK(pointer.IsSameOrUnder(*parent), text);
    FUZZ_CHECK(!parent->IsSameOrUnder(pointer), text);
  }

  for (const std::string& token : pointer.tokens()) {
    size_t index = 0;
    if (ParseArrayIndex(token, &index)) {
      FUZZ_CHECK(std::to_string(index) == token, "'" + token + "' is not a canonical index");
    }
  }

  const boost::json::value* found = pointer.Find(Document());
  FUZZ_CHECK(JsonPointer::Find(pointer.text(), Document()) == found,
             "Find by text differs for '" + text + "'");
  if (pointer.is_root()) FUZZ_CHECK(found == &Document(), "the root pointer must find the root");
  if (found != nullptr && !pointer.is_root()) {
    const boost::json::value* in_object = pointer.Find(Document().get_object());
    FUZZ_CHECK(in_object == found, "Find on the object differs for '" + text + "'");
  }
}

}  // namespace
}  // namespace feedd

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  feedd::Result<feedd::JsonPointer> pointer = feedd::JsonPointer::Parse(text);
  if (pointer.ok()) {
    feedd::CheckPointer(*pointer);
  } else {
    FUZZ_CHECK(!text.empty(), "the root pointer must parse");
    FUZZ_CHECK(feedd::JsonPointer::Find(text, feedd::Document()) == nullptr,
               "Find by text of a pointer that does not parse found something");
    feedd::fuzz::CheckClientError(pointer.status());
  }
  return 0;
}
