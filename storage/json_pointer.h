// JsonPointer: an RFC 6901 JSON Pointer ("/a/b~1c") parsed into tokens, and
// lookups of it in Boost.JSON values.
//
// Thread-safety: immutable after construction; safe to share.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace feedd {

class JsonPointer {
 public:
  JsonPointer() = default;  // the root ""

  // Parses `text`; it must be "" or start with '/'. Bad escapes are errors.
  static Result<JsonPointer> Parse(std::string_view text);

  const std::vector<std::string>& tokens() const { return tokens_; }
  const std::string& text() const { return text_; }
  bool is_root() const { return tokens_.empty(); }
  // True when this pointer equals `other` or lies below it ("/a/b" is under "/a").
  bool IsSameOrUnder(const JsonPointer& other) const;

  // The value at this pointer inside `root`, or nullptr when it is absent.
  // Array tokens must be canonical decimal indexes.
  const boost::json::value* Find(const boost::json::value& root) const;
  boost::json::value* Find(boost::json::value& root) const;
  // The same inside an object (nullptr for the root pointer).
  const boost::json::value* Find(const boost::json::object& root) const;

  // The value at the pointer `text` inside `root`, as Parse(text)->Find(root)
  // finds it, without building a JsonPointer: no allocation unless a token
  // has a '~' escape. For the paths a write looks up in every item (a
  // container's partition key and indexes, validated at start-up). nullptr
  // when absent, or when `text` does not parse.
  static const boost::json::value* Find(std::string_view text, const boost::json::value& root);

 private:
  std::string text_;
  std::vector<std::string> tokens_;
};

// A pointer token as an array index: "0" or decimal digits without a leading
// zero (at most 9), as Find accepts them. False for anything else.
bool ParseArrayIndex(std::string_view token, size_t* index);

}  // namespace feedd
