#include "storage/json_pointer.h"

#include <boost/json.hpp>
#include <span>

namespace feedd {

bool ParseArrayIndex(std::string_view token, size_t* index) {
  if (token.empty() || token.size() > 9) return false;
  if (token.size() > 1 && token[0] == '0') return false;
  size_t n = 0;
  for (char c : token) {
    if (c < '0' || c > '9') return false;
    n = n * 10 + static_cast<size_t>(c - '0');
  }
  *index = n;
  return true;
}

namespace {

// One step of a lookup: the member `token` of an object, or the element it
// names of an array; nullptr when there is none.
template <typename V>
V* Step(V* current, std::string_view token) {
  if (current->is_object()) {
    auto& obj = current->as_object();
    auto it = obj.find(token);
    return it == obj.end() ? nullptr : &it->value();
  }
  if (current->is_array()) {
    auto& arr = current->as_array();
    size_t index;
    if (!ParseArrayIndex(token, &index) || index >= arr.size()) return nullptr;
    return &arr[index];
  }
  return nullptr;
}

template <typename V>
V* FindIn(V* current, std::span<const std::string> tokens) {
  for (const auto& token : tokens) {
    current = Step(current, token);
    if (current == nullptr) return nullptr;
  }
  return current;
}

// Calls `each(token)` for every token of the pointer `text` ("/a~1b/c":
// "a/b", "c"), in order, while it returns true. A token without escapes is
// a view into `text`; one with escapes is decoded into a scratch string.
// Returns false when `text` is not "" and does not start with '/', or has a
// '~' not followed by '0' or '1' (in which case `each` may have run for
// the tokens before it).
template <typename Each>
bool ForEachToken(std::string_view text, Each each) {
  if (text.empty()) return true;
  if (text[0] != '/') return false;
  std::string decoded;
  size_t begin = 1;
  while (true) {
    size_t end = text.find('/', begin);
    if (end == std::string_view::npos) end = text.size();
    std::string_view token = text.substr(begin, end - begin);
    if (token.find('~') != std::string_view::npos) {
      decoded.clear();
      for (size_t i = 0; i < token.size(); ++i) {
        if (token[i] != '~') {
          decoded.push_back(token[i]);
          continue;
        }
        const char next = i + 1 < token.size() ? token[i + 1] : '\0';
        if (next != '0' && next != '1') return false;
        decoded.push_back(next == '0' ? '~' : '/');
        ++i;
      }
      token = decoded;
    }
    if (!each(token)) return true;
    if (end == text.size()) return true;
    begin = end + 1;
  }
}

}  // namespace

Result<JsonPointer> JsonPointer::Parse(std::string_view text) {
  JsonPointer p;
  p.text_.assign(text);
  const bool valid = ForEachToken(text, [&](std::string_view token) {
    p.tokens_.emplace_back(token);
    return true;
  });
  if (valid) return p;
  if (text[0] != '/') {
    return Status(ErrorCode::kInvalidRequest,
                  "JSON Pointer '" + std::string(text) + "' must start with '/'");
  }
  return Status(ErrorCode::kInvalidRequest,
                "JSON Pointer '" + std::string(text) + "' has a bad '~' escape");
}

const boost::json::value* JsonPointer::Find(std::string_view text, const boost::json::value& root) {
  const boost::json::value* current = &root;
  const bool valid = ForEachToken(text, [&](std::string_view token) {
    current = Step(current, token);
    return current != nullptr;
  });
  return valid ? current : nullptr;
}

bool JsonPointer::IsSameOrUnder(const JsonPointer& other) const {
  if (tokens_.size() < other.tokens_.size()) return false;
  for (size_t i = 0; i < other.tokens_.size(); ++i) {
    if (tokens_[i] != other.tokens_[i]) return false;
  }
  return true;
}

const boost::json::value* JsonPointer::Find(const boost::json::value& root) const {
  return FindIn(&root, tokens_);
}

const boost::json::value* JsonPointer::Find(const boost::json::object& root) const {
  if (tokens_.empty()) return nullptr;
  const boost::json::value* first = root.if_contains(tokens_[0]);
  if (first == nullptr) return nullptr;
  return FindIn(first, std::span<const std::string>(tokens_).subspan(1));
}

boost::json::value* JsonPointer::Find(boost::json::value& root) const {
  return FindIn(&root, tokens_);
}

}  // namespace feedd
