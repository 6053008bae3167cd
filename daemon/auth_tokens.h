// Bearer tokens and roles (docs/security.md): the tokens file, the
// Authorization header, and which role may use which class of route.
//
// The tokens file (auth.tokens_file) holds one token per line,
//   NAME ROLE sha256:HEX
// NAME a label for logs and metrics ([A-Za-z0-9._-]{1,64}, unique), ROLE
// `read`, `write` or `admin`, HEX the lowercase SHA-256 of the secret (64
// hex digits, unique). Blank lines and everything from `#` to the end of a
// line are ignored; fields are separated by spaces or tabs. The secret
// itself is never in the file. LoadTokensFile() refuses a file that others
// than its owner and group may read or write (mode & 0006).
//
// Clients send `Authorization: Bearer <secret>` (RFC 6750 2.1: the scheme
// in any case, one or more spaces, a token68 secret); a Prometheus scrape
// sends `Authorization: Basic ...` with a token's NAME and secret. TokenSet::Find()
// hashes the presented secret and compares it with every digest in
// constant time (CRYPTO_memcmp), so the time taken tells nothing about how
// much of a secret matched.
//
// Thread-safety: free functions are pure (LoadTokensFile reads one file); a
// TokenSet is immutable after construction and may be shared by threads.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace feedd {

// Each role may do what the one before it may, and more.
enum class Role { kRead = 0, kWrite = 1, kAdmin = 2 };

// What a route needs (the role table of docs/security.md, ApiRouter::Match).
enum class Access {
  kOpen,   // /healthz, /readyz: no token needed
  kRead,   // every GET, queries, the change feed, processor status
  kWrite,  // items, batches, patches: anything that changes data
  kAdmin,  // processor operations: rebuild, verify, replay, pause, resume
};

std::string_view RoleName(Role role);
// "read", "write" or "admin".
std::optional<Role> ParseRole(std::string_view text);
// Whether a token of `role` may use a route needing `access`.
bool RoleAllows(Role role, Access access);

using Sha256Digest = std::array<uint8_t, 32>;
Sha256Digest Sha256(std::string_view data);

struct TokenEntry {
  std::string name;
  Role role = Role::kRead;
  Sha256Digest digest{};
};

// Parses the text of a tokens file. Errors (invalid_request) name the line:
// "line 3: expected NAME ROLE sha256:HEX".
Result<std::vector<TokenEntry>> ParseTokensFile(std::string_view text);

// The secret of an Authorization header value, or invalid_request when it
// is not `Bearer <token68>`. The view points into `header`.
Result<std::string_view> ParseBearer(std::string_view header);

// HTTP basic authentication (RFC 7617), the metrics port's: `Basic` (any
// case), blanks, then canonical padded base64 of USER:PASSWORD; the user ends
// at the first ':'. invalid_request when the header is not that.
struct BasicCredentials {
  std::string user;
  std::string password;
};
Result<BasicCredentials> ParseBasic(std::string_view header);

class TokenSet {
 public:
  explicit TokenSet(std::vector<TokenEntry> entries) : entries_(std::move(entries)) {}

  // The entry whose digest is SHA-256(secret), or nullptr. Takes the same
  // time whichever entry matches, or none.
  const TokenEntry* Find(std::string_view secret) const;
  size_t size() const { return entries_.size(); }

 private:
  std::vector<TokenEntry> entries_;
};

// Reads and parses `path`: unavailable when it cannot be read,
// invalid_request when others may read or write it or it does not parse
// (the message names the path).
Result<TokenSet> LoadTokensFile(const std::string& path);

}  // namespace feedd
