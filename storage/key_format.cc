#include "storage/key_format.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

namespace feedd::key_format {

std::string ItemsColumnFamily(std::string_view container) {
  return "items." + std::string(container);
}

std::string IndexColumnFamily(std::string_view container, std::string_view path) {
  std::string name = "index.";
  name += container;
  name += '.';
  name += path;
  return name;
}

std::string MetaContainerKey(std::string_view container) {
  return "container/" + std::string(container);
}

std::string MetaParkedPrefix(std::string_view consumer) {
  std::string key = "parked/";
  PutLengthPrefixed(&key, consumer);
  return key;
}

std::string MetaParkedKey(std::string_view consumer, uint64_t lsn) {
  std::string key = MetaParkedPrefix(consumer);
  PutU64(&key, lsn);
  return key;
}

std::string MetaIndexBuiltKey(std::string_view container, std::string_view path) {
  std::string key = "index_built/";
  key += container;
  key += '/';
  key += path;
  return key;
}

void PutVarint(std::string* out, uint64_t n) {
  while (n >= 0x80) {
    out->push_back(static_cast<char>((n & 0x7f) | 0x80));
    n >>= 7;
  }
  out->push_back(static_cast<char>(n));
}

bool GetVarint(std::string_view* in, uint64_t* n) {
  uint64_t r = 0;
  size_t i = 0;
  for (int shift = 0; shift <= 63; shift += 7) {
    if (i >= in->size()) return false;
    uint8_t byte = static_cast<uint8_t>((*in)[i++]);
    r |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      *n = r;
      in->remove_prefix(i);
      return true;
    }
  }
  return false;
}

void PutLengthPrefixed(std::string* out, std::string_view s) {
  PutVarint(out, s.size());
  out->append(s);
}

bool GetLengthPrefixed(std::string_view* in, std::string_view* s) {
  std::string_view rest = *in;
  uint64_t n = 0;
  if (!GetVarint(&rest, &n) || rest.size() < n) return false;
  *s = rest.substr(0, n);
  *in = rest.substr(n);
  return true;
}

void PutU64(std::string* out, uint64_t v) {
  char buf[8];
  for (int i = 7; i >= 0; --i) {
    buf[i] = static_cast<char>(v & 0xff);
    v >>= 8;
  }
  out->append(buf, 8);
}

bool GetU64(std::string_view* in, uint64_t* v) {
  if (in->size() < 8) return false;
  uint64_t r = 0;
  for (int i = 0; i < 8; ++i) r = (r << 8) | static_cast<uint8_t>((*in)[i]);
  *v = r;
  in->remove_prefix(8);
  return true;
}

std::string EncodeU64(uint64_t v) {
  std::string out;
  PutU64(&out, v);
  return out;
}

std::string ItemPartitionPrefix(std::string_view partition_key) {
  std::string out;
  PutLengthPrefixed(&out, partition_key);
  return out;
}

std::string ItemKey(std::string_view partition_key, std::string_view id) {
  std::string out;
  out.reserve(partition_key.size() + id.size() + 2);
  PutLengthPrefixed(&out, partition_key);
  out.append(id);
  return out;
}

bool DecodeItemKey(std::string_view key, std::string_view* partition_key, std::string_view* id) {
  if (!GetLengthPrefixed(&key, partition_key)) return false;
  *id = key;
  return true;
}

std::string ItemValue(uint64_t lsn, std::string_view item_json) {
  std::string out;
  out.reserve(8 + item_json.size());
  PutU64(&out, lsn);
  out.append(item_json);
  return out;
}

bool DecodeItemValue(std::string_view value, uint64_t* lsn, std::string_view* item_json) {
  if (!GetU64(&value, lsn)) return false;
  *item_json = value;
  return true;
}

std::optional<std::string> EncodeIndexValue(const boost::json::value& v) {
  char buf[64];
  switch (v.kind()) {
    case boost::json::kind::null:
      return std::string("n");
    case boost::json::kind::bool_:
      return std::string(v.get_bool() ? "t" : "f");
    case boost::json::kind::int64: {
      auto r = std::to_chars(buf, buf + sizeof(buf), v.get_int64());
      return "i" + std::string(buf, r.ptr);
    }
    case boost::json::kind::uint64: {
      uint64_t u = v.get_uint64();
      auto r = std::to_chars(buf, buf + sizeof(buf), u);
      // Values above int64 max cannot collide with int64 ones: same text, same tag.
      return "i" + std::string(buf, r.ptr);
    }
    case boost::json::kind::double_: {
      double d = v.get_double();
      if (std::isfinite(d) && std::trunc(d) == d && d >= -9.2233720368547758e18 &&
          d < 9.2233720368547758e18) {
        auto r = std::to_chars(buf, buf + sizeof(buf), static_cast<int64_t>(d));
        return "i" + std::string(buf, r.ptr);
      }
      auto r = std::to_chars(buf, buf + sizeof(buf), d);
      return "d" + std::string(buf, r.ptr);
    }
    case boost::json::kind::string: {
      const auto& s = v.get_string();
      std::string out = "s";
      out.append(s.data(), s.size());
      return out;
    }
    default:
      return std::nullopt;
  }
}

std::string IndexValuePrefix(std::string_view encoded_value) {
  std::string out;
  PutLengthPrefixed(&out, encoded_value);
  return out;
}

std::string IndexKey(std::string_view encoded_value, std::string_view partition_key,
                     std::string_view id) {
  std::string out;
  out.reserve(encoded_value.size() + partition_key.size() + id.size() + 4);
  PutLengthPrefixed(&out, encoded_value);
  PutLengthPrefixed(&out, partition_key);
  out.append(id);
  return out;
}

bool DecodeIndexKey(std::string_view key, std::string_view* encoded_value,
                    std::string_view* partition_key, std::string_view* id) {
  if (!GetLengthPrefixed(&key, encoded_value)) return false;
  if (!GetLengthPrefixed(&key, partition_key)) return false;
  *id = key;
  return true;
}

std::string FeedKey(uint64_t lsn) { return EncodeU64(lsn); }

bool DecodeFeedKey(std::string_view key, uint64_t* lsn) {
  return key.size() == 8 && GetU64(&key, lsn);
}

namespace {

// The op byte's flag for a before-image stored as its difference from the
// after-image (docs/storage-format.md, "Before-images as differences").
constexpr uint8_t kBeforeAsDifference = 0x80;
constexpr std::string_view kAfterMember = ",\"after\":";
// A difference is stored only when it saves at least this many bytes.
constexpr size_t kMinDifferenceSaving = 32;

// The parts of an envelope around its before-image B, when the after-image A
// follows B as the envelope's last member: head + B + `,"after":` + A + `}`.
struct EnvelopeParts {
  std::string_view head;    // up to B
  std::string_view before;  // B
  std::string_view tail;    // `,"after":` + A + `}`
  std::string_view after;   // A
};

bool SplitAtBefore(std::string_view envelope, size_t before_offset, size_t before_size,
                   EnvelopeParts* parts) {
  if (before_offset > envelope.size() || envelope.size() - before_offset < before_size) {
    return false;
  }
  std::string_view tail = envelope.substr(before_offset + before_size);
  if (tail.size() < kAfterMember.size() + 1 || !tail.starts_with(kAfterMember) ||
      tail.back() != '}') {
    return false;
  }
  parts->head = envelope.substr(0, before_offset);
  parts->before = envelope.substr(before_offset, before_size);
  parts->tail = tail;
  parts->after = tail.substr(kAfterMember.size(), tail.size() - kAfterMember.size() - 1);
  return true;
}

void PutFeedHeader(std::string* out, uint64_t ts_ms, uint8_t op, std::string_view container,
                   std::string_view partition_key, std::string_view id) {
  PutU64(out, ts_ms);
  out->push_back(static_cast<char>(op));
  PutLengthPrefixed(out, container);
  PutLengthPrefixed(out, partition_key);
  PutLengthPrefixed(out, id);
}

// Rebuilds the envelope from `in` = varint(before_offset) + varint(prefix)
// + varint(suffix) + lp(middle) + lp(the envelope without its before-image).
bool RebuildEnvelope(std::string_view in, std::string* envelope) {
  uint64_t before_offset = 0, prefix = 0, suffix = 0;
  std::string_view middle, rest;
  if (!GetVarint(&in, &before_offset) || !GetVarint(&in, &prefix) || !GetVarint(&in, &suffix) ||
      !GetLengthPrefixed(&in, &middle) || !GetLengthPrefixed(&in, &rest) || !in.empty()) {
    return false;
  }
  EnvelopeParts parts;
  if (!SplitAtBefore(rest, before_offset, 0, &parts)) return false;
  if (prefix > parts.after.size() || suffix > parts.after.size() - prefix) return false;
  envelope->clear();
  envelope->reserve(rest.size() + prefix + middle.size() + suffix);
  envelope->append(parts.head);
  envelope->append(parts.after.substr(0, prefix));
  envelope->append(middle);
  envelope->append(parts.after.substr(parts.after.size() - suffix));
  envelope->append(parts.tail);
  return true;
}

}  // namespace

std::string FeedValue(uint64_t ts_ms, ChangeOp op, std::string_view container,
                      std::string_view partition_key, std::string_view id,
                      std::string_view envelope_json, std::optional<ImageSpan> before) {
  std::string out;
  EnvelopeParts parts;
  if (before && op == ChangeOp::kReplace &&
      SplitAtBefore(envelope_json, before->offset, before->size, &parts)) {
    const size_t limit = std::min(parts.before.size(), parts.after.size());
    const size_t prefix =
        std::mismatch(parts.before.begin(), parts.before.begin() + limit, parts.after.begin())
            .first -
        parts.before.begin();
    size_t suffix = 0;
    while (suffix < limit - prefix && parts.before[parts.before.size() - 1 - suffix] ==
                                          parts.after[parts.after.size() - 1 - suffix]) {
      ++suffix;
    }
    if (prefix + suffix >= kMinDifferenceSaving) {
      const std::string_view middle =
          parts.before.substr(prefix, parts.before.size() - prefix - suffix);
      out.reserve(48 + container.size() + partition_key.size() + id.size() + middle.size() +
                  parts.head.size() + parts.tail.size());
      PutFeedHeader(&out, ts_ms, static_cast<uint8_t>(op) | kBeforeAsDifference, container,
                    partition_key, id);
      PutVarint(&out, parts.head.size());
      PutVarint(&out, prefix);
      PutVarint(&out, suffix);
      PutLengthPrefixed(&out, middle);
      PutVarint(&out, parts.head.size() + parts.tail.size());
      out.append(parts.head);
      out.append(parts.tail);
      return out;
    }
  }
  out.reserve(16 + container.size() + partition_key.size() + id.size() + envelope_json.size());
  PutFeedHeader(&out, ts_ms, static_cast<uint8_t>(op), container, partition_key, id);
  out.append(envelope_json);
  return out;
}

bool DecodeFeedValue(std::string_view value, ChangeRecord* record) {
  std::string_view container, pk, id;
  if (!GetU64(&value, &record->ts_ms) || value.empty()) return false;
  const uint8_t op_byte = static_cast<uint8_t>(value[0]);
  const uint8_t op = op_byte & ~kBeforeAsDifference;
  if (op < 1 || op > 3) return false;
  const bool as_difference = (op_byte & kBeforeAsDifference) != 0;
  if (as_difference && static_cast<ChangeOp>(op) != ChangeOp::kReplace) return false;
  value.remove_prefix(1);
  if (!GetLengthPrefixed(&value, &container) || !GetLengthPrefixed(&value, &pk) ||
      !GetLengthPrefixed(&value, &id)) {
    return false;
  }
  if (as_difference) {
    if (!RebuildEnvelope(value, &record->envelope_json)) return false;
  } else {
    record->envelope_json.assign(value);
  }
  record->op = static_cast<ChangeOp>(op);
  record->after_offset = 0;  // not kept in the feed: a reader scans for it
  record->container.assign(container);
  record->partition_key.assign(pk);
  record->id.assign(id);
  return true;
}

std::string ParkedValue(std::string_view error, const ChangeRecord& record) {
  std::string out;
  PutLengthPrefixed(&out, error);
  out += FeedValue(record.ts_ms, record.op, record.container, record.partition_key, record.id,
                   record.envelope_json);
  return out;
}

bool DecodeParked(std::string_view key, std::string_view value, std::string* error,
                  ChangeRecord* record) {
  std::string_view text;
  if (key.size() < 8 || !GetLengthPrefixed(&value, &text)) return false;
  key.remove_prefix(key.size() - 8);
  if (!GetU64(&key, &record->lsn)) return false;
  error->assign(text);
  return DecodeFeedValue(value, record);
}

bool PeekFeedContainer(std::string_view value, std::string_view* container) {
  if (value.size() < 9) return false;
  value.remove_prefix(9);
  return GetLengthPrefixed(&value, container);
}

}  // namespace feedd::key_format
