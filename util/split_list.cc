#include "util/split_list.h"

namespace feedd {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::vector<std::string_view> SplitList(std::string_view text, char separator) {
  std::vector<std::string_view> items;
  if (text.empty()) return items;
  for (;;) {
    const size_t at = text.find(separator);
    items.push_back(Trim(text.substr(0, at)));
    if (at == std::string_view::npos) return items;
    text.remove_prefix(at + 1);
  }
}

}  // namespace feedd
