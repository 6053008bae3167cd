// WAL file names: how the storage layer's FileSystem decorators tell
// RocksDB's write-ahead logs (`<dir>/<number>.log`) from its other files.
//
// Thread-safety: pure functions.
// Internal to storage/.
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string_view>

namespace feedd {

inline constexpr std::string_view kWalSuffix = ".log";

// True when `path` names a write-ahead log.
inline bool IsWalFile(std::string_view path) {
  return path.size() > kWalSuffix.size() && path.ends_with(kWalSuffix);
}

// `text` as a decimal number: digits only, all of them; nullopt otherwise
// (empty, a sign, another character, or more than uint64_t holds).
inline std::optional<uint64_t> ParseDecimal(std::string_view text) {
  uint64_t number = 0;
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, number);
  if (text.empty() || error != std::errc() || stop != end) return std::nullopt;
  return number;
}

// The log number of a write-ahead log's path ("data/000123.log": 123);
// nullopt when the name is not digits then ".log".
inline std::optional<uint64_t> WalNumber(std::string_view path) {
  if (!IsWalFile(path)) return std::nullopt;
  std::string_view name = path.substr(0, path.size() - kWalSuffix.size());
  if (size_t slash = name.rfind('/'); slash != std::string_view::npos)
    name.remove_prefix(slash + 1);
  return ParseDecimal(name);
}

}  // namespace feedd
