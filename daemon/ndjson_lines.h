// NdjsonLines: splits a byte stream into the lines of an NDJSON document
// (one JSON value per line) as it arrives, in pieces of any size, holding at
// most one line in memory. The import route reads its body through it.
//
//   - A line ends at '\n'; a '\r' before it is dropped. The last line needs
//     no '\n' (Finish() returns it).
//   - Lines are numbered from 1, counting every line, blank ones too, so a
//     number in a report is the line an editor shows. Blank lines (only
//     spaces, tabs or '\r') are passed over.
//   - A line longer than max_line_bytes is not kept: it is returned once,
//     with too_long set and no text, as soon as it passes the limit, and the
//     rest of it (up to its '\n') is dropped as it arrives.
//
// Thread-safety: none; one stream per object.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace feedd {

class NdjsonLines {
 public:
  struct Line {
    uint64_t number = 0;    // 1-based
    std::string_view text;  // without its end of line; valid until the next call
    bool too_long = false;  // text is empty then
  };

  explicit NdjsonLines(size_t max_line_bytes) : max_line_bytes_(max_line_bytes) {}

  // Adds the next piece of the stream. REQUIRES: Next() returned nullopt
  // since the last Append() (every complete line was taken).
  void Append(std::string_view piece);
  // The next complete non-blank line, or nullopt when more input is needed.
  std::optional<Line> Next();
  // At the end of the stream: the last line when it had no '\n' (and is not
  // blank), else nullopt. Call once, after Next() returned nullopt.
  std::optional<Line> Finish();

  // Lines seen so far (complete ones, blank ones included).
  uint64_t lines() const { return line_number_; }
  // Bytes appended so far.
  uint64_t bytes() const { return bytes_; }

 private:
  static bool IsBlank(std::string_view text);

  const size_t max_line_bytes_;
  std::string buffer_;     // the unread part of the stream starts at pos_
  size_t pos_ = 0;         // start of the current line in buffer_
  size_t scanned_ = 0;     // bytes of the current line known to hold no '\n'
  bool skipping_ = false;  // dropping the rest of a line that is too long
  uint64_t line_number_ = 0;
  uint64_t bytes_ = 0;
};

}  // namespace feedd
