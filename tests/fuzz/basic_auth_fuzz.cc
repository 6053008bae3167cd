// Fuzzes the Authorization header as the metrics port reads it (ParseBasic,
// daemon/auth_tokens.h: `Basic <base64 of USER:PASSWORD>`).
//
// Invariants: a refusal is a client error (invalid_request); accepted
// credentials are in the header as their canonical base64, "Basic " and
// that base64 parse back to the same user and password, and the user holds
// no ':'.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "daemon/auth_tokens.h"
#include "tests/fuzz/fuzz_checks.h"

namespace {

std::string EncodeBase64(std::string_view data) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 3 <= data.size(); i += 3) {
    uint32_t group = (static_cast<uint8_t>(data[i]) << 16) |
                     (static_cast<uint8_t>(data[i + 1]) << 8) | static_cast<uint8_t>(data[i + 2]);
    for (int shift = 18; shift >= 0; shift -= 6) out.push_back(kAlphabet[(group >> shift) & 63]);
  }
  size_t rest = data.size() - i;
  if (rest > 0) {
    uint32_t group = static_cast<uint8_t>(data[i]) << 16;
    if (rest == 2) group |= static_cast<uint8_t>(data[i + 1]) << 8;
    out.push_back(kAlphabet[(group >> 18) & 63]);
    out.push_back(kAlphabet[(group >> 12) & 63]);
    out.push_back(rest == 2 ? kAlphabet[(group >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace feedd;
  std::string_view header(reinterpret_cast<const char*>(data), size);

  Result<BasicCredentials> credentials = ParseBasic(header);
  if (!credentials.ok()) {
    FUZZ_CHECK(credentials.status().code() == ErrorCode::kInvalidRequest,
               credentials.status().ToString());
    return 0;
  }
  FUZZ_CHECK(credentials->user.find(':') == std::string::npos, "a user with ':'");
  std::string encoded = EncodeBase64(credentials->user + ":" + credentials->password);
  FUZZ_CHECK(header.find(encoded) != std::string_view::npos,
             "the credentials are not in canonical base64: " + encoded);
  std::string again = "Basic " + encoded;
  Result<BasicCredentials> reparsed = ParseBasic(again);
  FUZZ_CHECK(reparsed.ok() && reparsed->user == credentials->user &&
                 reparsed->password == credentials->password,
             "'" + again + "' does not parse back");
  return 0;
}
