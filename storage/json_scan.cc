#include "storage/json_scan.h"

#include <cstring>

#include "storage/json_pointer.h"
#include "util/json_parse.h"

namespace feedd {
namespace {

// A read position in JSON text. Every method checks bounds; a false return
// means the text is not JSON where the cursor stands.
class Cursor {
 public:
  explicit Cursor(std::string_view text) : s_(text) {}

  size_t pos() const { return pos_; }
  bool AtEnd() const { return pos_ >= s_.size(); }
  char Peek() const { return s_[pos_]; }  // only when !AtEnd()

  void SkipWhitespace() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\r' || s_[pos_] == '\t')) {
      ++pos_;
    }
  }

  // Consumes `c` after optional whitespace.
  bool Expect(char c) {
    SkipWhitespace();
    if (AtEnd() || s_[pos_] != c) return false;
    ++pos_;
    return true;
  }

  // At a '"': moves past the closing quote. *content is the text between
  // the quotes, still escaped; *escaped tells whether it holds a backslash.
  bool String(std::string_view* content, bool* escaped) {
    if (AtEnd() || s_[pos_] != '"') return false;
    const size_t start = ++pos_;
    while (true) {
      const void* q = std::memchr(s_.data() + pos_, '"', s_.size() - pos_);
      if (q == nullptr) return false;
      size_t quote = static_cast<size_t>(static_cast<const char*>(q) - s_.data());
      size_t backslashes = 0;
      while (quote - backslashes > start && s_[quote - backslashes - 1] == '\\') ++backslashes;
      pos_ = quote + 1;
      if (backslashes % 2 == 0) {
        *content = s_.substr(start, quote - start);
        *escaped = content->find('\\') != std::string_view::npos;
        return true;
      }
    }
  }

  // Moves past the value that starts here (after optional whitespace).
  bool SkipValue() {
    SkipWhitespace();
    if (AtEnd()) return false;
    std::string_view content;
    bool escaped;
    switch (s_[pos_]) {
      case '"':
        return String(&content, &escaped);
      case '{':
      case '[': {
        int depth = 0;
        while (!AtEnd()) {
          char c = s_[pos_];
          if (c == '"') {
            if (!String(&content, &escaped)) return false;
            continue;
          }
          ++pos_;
          if (c == '{' || c == '[') {
            ++depth;
          } else if (c == '}' || c == ']') {
            if (--depth == 0) return true;
          }
        }
        return false;
      }
      default: {  // a number, true, false or null: their characters only
        const size_t start = pos_;
        while (!AtEnd()) {
          char c = s_[pos_];
          bool scalar = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '-' || c == '+' ||
                        c == '.' || c == 'E';
          if (!scalar) break;
          ++pos_;
        }
        return pos_ > start;
      }
    }
  }

 private:
  std::string_view s_;
  size_t pos_ = 0;
};

// Whether the member name `content` (as written, between its quotes) is
// `name`.
bool NameEquals(std::string_view content, bool escaped, const std::string& name, bool* ok) {
  *ok = true;
  if (!escaped) return content == name;
  std::string quoted;
  quoted.reserve(content.size() + 2);
  quoted.append(1, '"').append(content).append(1, '"');
  Result<boost::json::value> v = ParseJson(quoted);
  if (!v.ok() || !v->is_string()) {
    *ok = false;
    return false;
  }
  return v->get_string() == name;
}

// Moves past the value here and its ',' to the next member or element:
// kFound when there is one, kMissing at `close` (the object or array ended).
JsonScan SkipToNext(Cursor& c, char close) {
  if (!c.SkipValue()) return JsonScan::kMalformed;
  c.SkipWhitespace();
  if (c.AtEnd()) return JsonScan::kMalformed;
  if (c.Peek() == close) return JsonScan::kMissing;
  return c.Expect(',') ? JsonScan::kFound : JsonScan::kMalformed;
}

// At '{': moves to the value of member `name`.
JsonScan EnterMember(Cursor& c, const std::string& name) {
  if (!c.Expect('{')) return JsonScan::kMalformed;
  c.SkipWhitespace();
  if (!c.AtEnd() && c.Peek() == '}') return JsonScan::kMissing;
  while (true) {
    c.SkipWhitespace();
    std::string_view content;
    bool escaped, ok;
    if (!c.String(&content, &escaped) || !c.Expect(':')) return JsonScan::kMalformed;
    bool match = NameEquals(content, escaped, name, &ok);
    if (!ok) return JsonScan::kMalformed;
    if (match) return JsonScan::kFound;
    if (JsonScan s = SkipToNext(c, '}'); s != JsonScan::kFound) return s;
  }
}

// At '[': moves to element `index`.
JsonScan EnterElement(Cursor& c, size_t index) {
  if (!c.Expect('[')) return JsonScan::kMalformed;
  c.SkipWhitespace();
  if (!c.AtEnd() && c.Peek() == ']') return JsonScan::kMissing;
  for (size_t i = 0;; ++i) {
    if (i == index) return JsonScan::kFound;
    if (JsonScan s = SkipToNext(c, ']'); s != JsonScan::kFound) return s;
  }
}

// Follows `tokens` from the value at the cursor to the value they name
// (FindJsonValue).
JsonScan Walk(Cursor& c, const std::vector<std::string>& tokens) {
  for (const auto& token : tokens) {
    c.SkipWhitespace();
    if (c.AtEnd()) return JsonScan::kMalformed;
    JsonScan step;
    if (c.Peek() == '{') {
      step = EnterMember(c, token);
    } else if (c.Peek() == '[') {
      size_t index;
      if (!ParseArrayIndex(token, &index)) return JsonScan::kMissing;
      step = EnterElement(c, index);
    } else {
      step = c.SkipValue() ? JsonScan::kMissing : JsonScan::kMalformed;
    }
    if (step != JsonScan::kFound) return step;
  }
  return JsonScan::kFound;
}

}  // namespace

JsonScan FindJsonMembers(std::string_view json, const std::vector<std::string>& names,
                         std::vector<std::optional<std::string_view>>* values) {
  return FindJsonMembers(json, {}, names, values);
}

JsonScan FindJsonMembers(std::string_view json, const std::vector<std::string>& path,
                         const std::vector<std::string>& names,
                         std::vector<std::optional<std::string_view>>* values) {
  values->assign(names.size(), std::nullopt);
  Cursor c(json);
  if (JsonScan s = Walk(c, path); s != JsonScan::kFound) return s;
  c.SkipWhitespace();
  if (c.AtEnd()) return JsonScan::kMalformed;
  if (c.Peek() != '{') return c.SkipValue() ? JsonScan::kMissing : JsonScan::kMalformed;
  c.Expect('{');
  c.SkipWhitespace();
  if (!c.AtEnd() && c.Peek() == '}') return JsonScan::kFound;
  for (size_t left = names.size(); left > 0;) {
    c.SkipWhitespace();
    std::string_view content;
    bool escaped;
    if (!c.String(&content, &escaped) || !c.Expect(':')) return JsonScan::kMalformed;
    size_t wanted = names.size();  // the index of this member's name, if any
    for (size_t i = 0; i < names.size() && wanted == names.size(); ++i) {
      bool ok = true;
      if (!(*values)[i] && NameEquals(content, escaped, names[i], &ok)) wanted = i;
      if (!ok) return JsonScan::kMalformed;
    }
    c.SkipWhitespace();
    const size_t start = c.pos();
    JsonScan next = SkipToNext(c, '}');
    if (next == JsonScan::kMalformed) return next;
    if (wanted != names.size()) {
      std::string_view value = json.substr(start, c.pos() - start);
      // SkipToNext stopped at '}' or after ','; the value's text ends before
      // the whitespace and that character.
      if (next == JsonScan::kFound) value.remove_suffix(1);  // the ','
      while (!value.empty() && (value.back() == ' ' || value.back() == '\n' ||
                                value.back() == '\r' || value.back() == '\t')) {
        value.remove_suffix(1);
      }
      (*values)[wanted] = value;
      --left;
    }
    if (next == JsonScan::kMissing) break;  // the object ended
  }
  return JsonScan::kFound;
}

JsonScan FindJsonValue(std::string_view json, const std::vector<std::string>& tokens,
                       std::string_view* value) {
  Cursor c(json);
  if (JsonScan s = Walk(c, tokens); s != JsonScan::kFound) return s;
  c.SkipWhitespace();
  const size_t start = c.pos();
  if (!c.SkipValue()) return JsonScan::kMalformed;
  *value = json.substr(start, c.pos() - start);
  return JsonScan::kFound;
}

}  // namespace feedd
