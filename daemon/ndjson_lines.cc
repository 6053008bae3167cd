#include "daemon/ndjson_lines.h"

namespace feedd {

void NdjsonLines::Append(std::string_view piece) {
  bytes_ += piece.size();
  buffer_.erase(0, pos_);
  pos_ = 0;
  buffer_.append(piece);
}

bool NdjsonLines::IsBlank(std::string_view text) {
  for (char c : text) {
    if (c != ' ' && c != '\t' && c != '\r') return false;
  }
  return true;
}

std::optional<NdjsonLines::Line> NdjsonLines::Next() {
  for (;;) {
    size_t end = buffer_.find('\n', pos_ + scanned_);
    if (end == std::string::npos) {
      scanned_ = buffer_.size() - pos_;
      if (skipping_) {  // drop what arrived of the long line
        buffer_.clear();
        pos_ = 0;
        scanned_ = 0;
        return std::nullopt;
      }
      if (scanned_ > max_line_bytes_) {
        skipping_ = true;
        buffer_.clear();
        pos_ = 0;
        scanned_ = 0;
        Line line;
        line.number = line_number_ + 1;
        line.too_long = true;
        return line;
      }
      return std::nullopt;
    }
    ++line_number_;
    std::string_view text(buffer_.data() + pos_, end - pos_);
    pos_ = end + 1;
    scanned_ = 0;
    if (skipping_) {
      skipping_ = false;  // the long line ends here; it was reported
      continue;
    }
    if (text.size() > max_line_bytes_) {
      Line line;
      line.number = line_number_;
      line.too_long = true;
      return line;
    }
    if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
    if (IsBlank(text)) continue;
    return Line{line_number_, text, false};
  }
}

std::optional<NdjsonLines::Line> NdjsonLines::Finish() {
  if (skipping_ || pos_ >= buffer_.size()) return std::nullopt;
  ++line_number_;
  std::string_view text(buffer_.data() + pos_, buffer_.size() - pos_);
  pos_ = buffer_.size();
  if (text.size() > max_line_bytes_) return Line{line_number_, {}, true};
  if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
  if (IsBlank(text)) return std::nullopt;
  return Line{line_number_, text, false};
}

}  // namespace feedd
