// UTF-8 validity, for text that does not come through the JSON parser
// (percent-decoded path segments) but ends up in JSON (ids, partition keys,
// error messages).
//
// Thread-safety: free functions, no shared state.
#pragma once

#include <string>
#include <string_view>

namespace feedd {

// True when `text` is well-formed UTF-8 (RFC 3629: no overlong forms, no
// surrogates, nothing above U+10FFFF).
bool IsValidUtf8(std::string_view text);

// `text` with every byte that is not part of a well-formed sequence replaced
// by U+FFFD, so it can be serialized as a JSON string.
std::string ToValidUtf8(std::string_view text);

}  // namespace feedd
