#include "storage/json_pointer.h"

#include <boost/json.hpp>

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

template <typename V>
V* FindIn(V* current, const std::vector<std::string>& tokens) {
  for (const auto& token : tokens) {
    if (current->is_object()) {
      auto& obj = current->as_object();
      auto it = obj.find(token);
      if (it == obj.end()) return nullptr;
      current = &it->value();
    } else if (current->is_array()) {
      auto& arr = current->as_array();
      size_t index;
      if (!ParseArrayIndex(token, &index) || index >= arr.size()) return nullptr;
      current = &arr[index];
    } else {
      return nullptr;
    }
  }
  return current;
}

}  // namespace

Result<JsonPointer> JsonPointer::Parse(std::string_view text) {
  JsonPointer p;
  p.text_.assign(text);
  if (text.empty()) return p;
  if (text[0] != '/') {
    return Status(ErrorCode::kInvalidRequest,
                  "JSON Pointer '" + std::string(text) + "' must start with '/'");
  }
  std::string token;
  for (size_t i = 1; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == '/') {
      p.tokens_.push_back(std::move(token));
      token.clear();
    } else if (text[i] == '~') {
      char next = i + 1 < text.size() ? text[i + 1] : '\0';
      if (next == '0')
        token.push_back('~');
      else if (next == '1')
        token.push_back('/');
      else
        return Status(ErrorCode::kInvalidRequest,
                      "JSON Pointer '" + std::string(text) + "' has a bad '~' escape");
      ++i;
    } else {
      token.push_back(text[i]);
    }
  }
  return p;
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
  std::vector<std::string> rest(tokens_.begin() + 1, tokens_.end());
  return FindIn(first, rest);
}

boost::json::value* JsonPointer::Find(boost::json::value& root) const {
  return FindIn(&root, tokens_);
}

}  // namespace feedd
