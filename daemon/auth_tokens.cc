#include "daemon/auth_tokens.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace feedd {
namespace {

constexpr size_t kMaxNameBytes = 64;
constexpr size_t kMaxTokensFileBytes = 1024 * 1024;
constexpr std::string_view kDigestPrefix = "sha256:";

bool IsBlank(char c) { return c == ' ' || c == '\t'; }

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

// RFC 7235 token68: 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
bool IsToken68(std::string_view text) {
  size_t end = text.size();
  while (end > 0 && text[end - 1] == '=') --end;
  if (end == 0) return false;
  for (size_t i = 0; i < end; ++i) {
    char c = text[i];
    if (!IsNameChar(c) && c != '~' && c != '+' && c != '/') return false;
  }
  return true;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;  // upper case is refused: the file format says lowercase
}

std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && IsBlank(line[i])) ++i;
    size_t start = i;
    while (i < line.size() && !IsBlank(line[i])) ++i;
    if (i > start) fields.push_back(line.substr(start, i - start));
  }
  return fields;
}

Status LineError(size_t number, std::string_view what) {
  return Status(ErrorCode::kInvalidRequest,
                "line " + std::to_string(number) + ": " + std::string(what));
}

}  // namespace

std::string_view RoleName(Role role) {
  switch (role) {
    case Role::kRead:
      return "read";
    case Role::kWrite:
      return "write";
    case Role::kAdmin:
      return "admin";
  }
  return "read";
}

std::optional<Role> ParseRole(std::string_view text) {
  if (text == "read") return Role::kRead;
  if (text == "write") return Role::kWrite;
  if (text == "admin") return Role::kAdmin;
  return std::nullopt;
}

bool RoleAllows(Role role, Access access) {
  switch (access) {
    case Access::kOpen:
    case Access::kRead:
      return true;
    case Access::kWrite:
      return role == Role::kWrite || role == Role::kAdmin;
    case Access::kAdmin:
      return role == Role::kAdmin;
  }
  return false;
}

Sha256Digest Sha256(std::string_view data) {
  Sha256Digest digest{};
  unsigned int length = 0;
  // EVP_Digest fails only when OpenSSL cannot allocate; a zero digest then
  // matches no token (a file holds no all-zero digest of a real secret).
  if (EVP_Digest(data.data(), data.size(), digest.data(), &length, EVP_sha256(), nullptr) != 1 ||
      length != digest.size()) {
    digest.fill(0);
  }
  return digest;
}

Result<std::vector<TokenEntry>> ParseTokensFile(std::string_view text) {
  std::vector<TokenEntry> entries;
  size_t number = 0;
  while (!text.empty()) {
    ++number;
    size_t newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text = newline == std::string_view::npos ? std::string_view() : text.substr(newline + 1);
    if (size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    std::vector<std::string_view> fields = Fields(line);
    if (fields.empty()) continue;
    if (fields.size() != 3) return LineError(number, "expected NAME ROLE sha256:HEX");

    TokenEntry entry;
    std::string_view name = fields[0];
    if (name.size() > kMaxNameBytes ||
        !std::all_of(name.begin(), name.end(), [](char c) { return IsNameChar(c); })) {
      return LineError(number, "the name must be 1 to 64 characters of [A-Za-z0-9._-]");
    }
    entry.name = std::string(name);
    std::optional<Role> role = ParseRole(fields[1]);
    if (!role) return LineError(number, "the role must be read, write or admin");
    entry.role = *role;
    std::string_view digest = fields[2];
    if (!digest.starts_with(kDigestPrefix) ||
        digest.size() != kDigestPrefix.size() + 2 * entry.digest.size()) {
      return LineError(number, "the secret must be sha256: and 64 lowercase hex digits");
    }
    digest.remove_prefix(kDigestPrefix.size());
    for (size_t i = 0; i < entry.digest.size(); ++i) {
      int high = HexValue(digest[2 * i]);
      int low = HexValue(digest[2 * i + 1]);
      if (high < 0 || low < 0) {
        return LineError(number, "the secret must be sha256: and 64 lowercase hex digits");
      }
      entry.digest[i] = static_cast<uint8_t>(high * 16 + low);
    }
    for (const TokenEntry& other : entries) {
      if (other.name == entry.name) {
        return LineError(number, "the name '" + entry.name + "' is used twice");
      }
      if (other.digest == entry.digest) {
        return LineError(
            number, "the same secret is given to '" + other.name + "' and '" + entry.name + "'");
      }
    }
    entries.push_back(std::move(entry));
  }
  return entries;
}

namespace {

// The token68 credentials of an Authorization header value `<scheme>
// <token68>` (the scheme in any case, one or more blanks), or nullopt.
std::optional<std::string_view> Credentials(std::string_view header, std::string_view scheme) {
  while (!header.empty() && IsBlank(header.front())) header.remove_prefix(1);
  while (!header.empty() && IsBlank(header.back())) header.remove_suffix(1);
  if (header.size() <= scheme.size() || !IsBlank(header[scheme.size()])) return std::nullopt;
  for (size_t i = 0; i < scheme.size(); ++i) {
    char c = header[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != scheme[i]) return std::nullopt;
  }
  std::string_view credentials = header.substr(scheme.size());
  while (!credentials.empty() && IsBlank(credentials.front())) credentials.remove_prefix(1);
  if (!IsToken68(credentials)) return std::nullopt;
  return credentials;
}

int Base64Value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

// Standard base64 with padding (RFC 4648 4), canonical: unused bits of the
// last group must be zero, so that one text decodes from one encoding only.
std::optional<std::string> DecodeBase64(std::string_view text) {
  if (text.empty() || text.size() % 4 != 0) return std::nullopt;
  size_t padding = 0;
  while (padding < 2 && text[text.size() - 1 - padding] == '=') ++padding;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  uint32_t bits = 0;
  int held = 0;
  for (char c : text.substr(0, text.size() - padding)) {
    int value = Base64Value(c);
    if (value < 0) return std::nullopt;
    bits = (bits << 6) | static_cast<uint32_t>(value);
    held += 6;
    if (held >= 8) {
      held -= 8;
      out.push_back(static_cast<char>((bits >> held) & 0xff));
    }
  }
  if ((bits & ((1u << held) - 1)) != 0) return std::nullopt;
  return out;
}

}  // namespace

Result<std::string_view> ParseBearer(std::string_view header) {
  std::optional<std::string_view> secret = Credentials(header, "bearer");
  if (!secret) {
    return Status(ErrorCode::kInvalidRequest, "the Authorization header must be 'Bearer <token>'");
  }
  return *secret;
}

Result<BasicCredentials> ParseBasic(std::string_view header) {
  auto malformed = [] {
    return Status(ErrorCode::kInvalidRequest,
                  "the Authorization header must be 'Basic <base64 of NAME:SECRET>'");
  };
  std::optional<std::string_view> encoded = Credentials(header, "basic");
  if (!encoded) return malformed();
  std::optional<std::string> decoded = DecodeBase64(*encoded);
  if (!decoded) return malformed();
  size_t colon = decoded->find(':');
  if (colon == std::string::npos) return malformed();
  return BasicCredentials{decoded->substr(0, colon), decoded->substr(colon + 1)};
}

const TokenEntry* TokenSet::Find(std::string_view secret) const {
  const Sha256Digest presented = Sha256(secret);
  const TokenEntry* found = nullptr;
  // Every entry is compared, match or not: the time depends only on the
  // number of entries.
  for (const TokenEntry& entry : entries_) {
    bool same = CRYPTO_memcmp(entry.digest.data(), presented.data(), presented.size()) == 0;
    if (same) found = &entry;
  }
  return found;
}

Result<TokenSet> LoadTokensFile(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return Status(ErrorCode::kUnavailable, "cannot open " + path + ": " + std::strerror(errno));
  }
  struct stat info {};
  if (fstat(fd, &info) != 0) {
    Status status(ErrorCode::kUnavailable, "cannot stat " + path + ": " + std::strerror(errno));
    close(fd);
    return status;
  }
  if (!S_ISREG(info.st_mode)) {
    close(fd);
    return Status(ErrorCode::kInvalidRequest, path + " is not a regular file");
  }
  if ((info.st_mode & (S_IROTH | S_IWOTH)) != 0) {
    close(fd);
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(info.st_mode & 07777));
    return Status(ErrorCode::kInvalidRequest, path + " may be read or written by others (mode " +
                                                  mode +
                                                  "); allow only its owner and group (chmod 640)");
  }
  if (static_cast<uint64_t>(info.st_size) > kMaxTokensFileBytes) {
    close(fd);
    return Status(ErrorCode::kInvalidRequest, path + " is larger than 1 MiB");
  }
  std::string text;
  char buffer[8192];
  while (true) {
    ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      Status status(ErrorCode::kUnavailable, "cannot read " + path + ": " + std::strerror(errno));
      close(fd);
      return status;
    }
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
    if (text.size() > kMaxTokensFileBytes) {
      close(fd);
      return Status(ErrorCode::kInvalidRequest, path + " is larger than 1 MiB");
    }
  }
  close(fd);
  Result<std::vector<TokenEntry>> entries = ParseTokensFile(text);
  if (!entries.ok()) {
    return Status(ErrorCode::kInvalidRequest, path + ", " + entries.status().message());
  }
  return TokenSet(std::move(*entries));
}

}  // namespace feedd
