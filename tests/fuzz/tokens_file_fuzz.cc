// Fuzzes the tokens file parser (ParseTokensFile, daemon/auth_tokens.h).
//
// Invariants: a refusal is invalid_request naming a line that exists; an
// accepted file has names of 1 to 64 [A-Za-z0-9._-] characters, each name
// and each digest once; written back as "NAME ROLE sha256:HEX" lines it
// parses to the same entries.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "daemon/auth_tokens.h"
#include "tests/fuzz/fuzz_checks.h"

namespace {

std::string Hex(const feedd::Sha256Digest& digest) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (uint8_t byte : digest) {
    out += kDigits[byte >> 4];
    out += kDigits[byte & 15];
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace feedd;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  Result<std::vector<TokenEntry>> entries = ParseTokensFile(text);
  if (!entries.ok()) {
    FUZZ_CHECK(entries.status().code() == ErrorCode::kInvalidRequest, entries.status().ToString());
    const std::string& message = entries.status().message();
    FUZZ_CHECK(message.starts_with("line "), message);
    size_t line = std::stoul(message.substr(5));
    size_t lines = 1;
    for (char c : text) lines += c == '\n' ? 1 : 0;
    FUZZ_CHECK(line >= 1 && line <= lines, message);
    return 0;
  }
  std::string written;
  for (size_t i = 0; i < entries->size(); ++i) {
    const TokenEntry& entry = (*entries)[i];
    FUZZ_CHECK(!entry.name.empty() && entry.name.size() <= 64, entry.name);
    for (size_t j = 0; j < i; ++j) {
      FUZZ_CHECK((*entries)[j].name != entry.name, "name twice: " + entry.name);
      FUZZ_CHECK((*entries)[j].digest != entry.digest, "digest twice: " + entry.name);
    }
    written += entry.name + " " + std::string(RoleName(entry.role)) +
               " sha256:" + Hex(entry.digest) + "\n";
  }
  Result<std::vector<TokenEntry>> again = ParseTokensFile(written);
  FUZZ_CHECK(again.ok() && again->size() == entries->size(), "written back, it does not parse");
  for (size_t i = 0; i < entries->size(); ++i) {
    FUZZ_CHECK((*again)[i].name == (*entries)[i].name && (*again)[i].role == (*entries)[i].role &&
                   (*again)[i].digest == (*entries)[i].digest,
               "entry " + std::to_string(i) + " changes when written back");
  }
  return 0;
}
