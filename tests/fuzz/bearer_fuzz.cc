// Fuzzes the Authorization header as AuthHandler reads it (ParseBearer,
// daemon/auth_tokens.h), then looks the secret up in a small TokenSet.
//
// Invariants: an accepted header yields a non-empty secret of token68
// characters that is a part of the header and that "Bearer <secret>"
// parses back to; a refusal is a client error (invalid_request); Find()
// returns the entry of exactly the secret that was hashed into the set and
// nothing for any other.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "daemon/auth_tokens.h"
#include "tests/fuzz/fuzz_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace feedd;
  std::string_view header(reinterpret_cast<const char*>(data), size);
  static const TokenSet tokens({{"app", Role::kWrite, Sha256("s3cret")}});

  Result<std::string_view> secret = ParseBearer(header);
  if (!secret.ok()) {
    FUZZ_CHECK(secret.status().code() == ErrorCode::kInvalidRequest, secret.status().ToString());
    return 0;
  }
  FUZZ_CHECK(!secret->empty(), "an empty secret was accepted");
  FUZZ_CHECK(secret->data() >= header.data() &&
                 secret->data() + secret->size() <= header.data() + header.size(),
             "the secret is not a part of the header");
  for (char c : *secret) {
    bool token68 = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                   c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/' || c == '=';
    FUZZ_CHECK(token68, "a secret with a character outside token68: " + std::string(*secret));
  }
  std::string again = "Bearer " + std::string(*secret);
  Result<std::string_view> reparsed = ParseBearer(again);
  FUZZ_CHECK(reparsed.ok() && *reparsed == *secret, "'" + again + "' does not parse back");

  const TokenEntry* found = tokens.Find(*secret);
  FUZZ_CHECK((found != nullptr) == (*secret == "s3cret"), "Find() of '" + std::string(*secret));
  return 0;
}
