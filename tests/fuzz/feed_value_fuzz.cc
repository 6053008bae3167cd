// Fuzzes the change feed's stored value (storage/key_format.h): DecodeFeedValue
// on any bytes, and FeedValue then DecodeFeedValue on any pair of images.
// The feed is read back by every reader of /v1/changefeed, Kafka's publisher
// and the processors' catch-up, so a value the decoder misreads is a change
// misreported to all of them.
//
// Input: a first byte choosing the check, then the bytes it works on.
// Invariants: decoding never reads outside its input, and a decoded value
// encodes again (whole) to one that decodes the same; any two images, the
// before-image stored whole or as a difference, decode to the envelope that
// was encoded, byte for byte, and the difference is never the larger value.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "storage/change_record.h"
#include "storage/key_format.h"
#include "tests/fuzz/fuzz_checks.h"

namespace feedd {
namespace {

namespace kf = key_format;

void CheckDecode(std::string_view value) {
  ChangeRecord record;
  if (!kf::DecodeFeedValue(value, &record)) return;
  const std::string again = kf::FeedValue(record.ts_ms, record.op, record.container,
                                          record.partition_key, record.id, record.envelope_json);
  ChangeRecord reread;
  FUZZ_CHECK(kf::DecodeFeedValue(again, &reread), "a decoded record does not encode again");
  FUZZ_CHECK(reread.envelope_json == record.envelope_json, record.envelope_json);
}

// `images` is split at its first NUL into the before- and after-image.
void CheckRoundTrip(std::string_view images) {
  const size_t split = images.find('\0');
  const std::string_view before = images.substr(0, split);
  const std::string_view after =
      split == std::string_view::npos ? std::string_view() : images.substr(split + 1);
  std::string envelope = R"({"lsn":1,"op":"replace","ts":2,"before":)";
  const kf::ImageSpan span{envelope.size(), before.size()};
  envelope += before;
  envelope += R"(,"after":)";
  envelope += after;
  envelope += '}';
  const std::string whole = kf::FeedValue(3, ChangeOp::kReplace, "posts", "p1", "i1", envelope);
  const std::string value =
      kf::FeedValue(3, ChangeOp::kReplace, "posts", "p1", "i1", envelope, span);
  FUZZ_CHECK(value.size() <= whole.size(), "a difference larger than the images it replaces");
  ChangeRecord record;
  FUZZ_CHECK(kf::DecodeFeedValue(value, &record), "an encoded value does not decode");
  FUZZ_CHECK(record.envelope_json == envelope,
             "rebuilt '" + record.envelope_json + "' from '" + envelope + "'");
}

}  // namespace
}  // namespace feedd

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] % 2 == 0) {
    feedd::CheckDecode(rest);
  } else {
    feedd::CheckRoundTrip(rest);
  }
  return 0;
}
