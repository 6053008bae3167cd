// WAL file names: how the storage layer's FileSystem decorators tell
// RocksDB's write-ahead logs (`<dir>/<number>.log`) from its other files.
//
// Thread-safety: pure functions.
// Internal to storage/.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace feedd {

inline constexpr std::string_view kWalSuffix = ".log";

// True when `path` names a write-ahead log.
inline bool IsWalFile(std::string_view path) {
  return path.size() > kWalSuffix.size() &&
         path.substr(path.size() - kWalSuffix.size()) == kWalSuffix;
}

// The log number of a write-ahead log's path ("data/000123.log": 123);
// nullopt when the name is not digits then ".log".
inline std::optional<uint64_t> WalNumber(std::string_view path) {
  if (!IsWalFile(path)) return std::nullopt;
  std::string_view name = path.substr(0, path.size() - kWalSuffix.size());
  if (size_t slash = name.rfind('/'); slash != std::string_view::npos)
    name.remove_prefix(slash + 1);
  if (name.empty() || name.size() > 19) return std::nullopt;
  uint64_t number = 0;
  for (char c : name) {
    if (c < '0' || c > '9') return std::nullopt;
    number = number * 10 + static_cast<uint64_t>(c - '0');
  }
  return number;
}

}  // namespace feedd
