#include "storage/key_format.h"

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

void PutLengthPrefixed(std::string* out, std::string_view s) {
  uint64_t n = s.size();
  while (n >= 0x80) {
    out->push_back(static_cast<char>((n & 0x7f) | 0x80));
    n >>= 7;
  }
  out->push_back(static_cast<char>(n));
  out->append(s);
}

bool GetLengthPrefixed(std::string_view* in, std::string_view* s) {
  uint64_t n = 0;
  size_t i = 0;
  for (int shift = 0; shift <= 63; shift += 7) {
    if (i >= in->size()) return false;
    uint8_t byte = static_cast<uint8_t>((*in)[i++]);
    n |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      if (in->size() - i < n) return false;
      *s = in->substr(i, n);
      in->remove_prefix(i + n);
      return true;
    }
  }
  return false;
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

std::string FeedValue(uint64_t ts_ms, ChangeOp op, std::string_view container,
                      std::string_view partition_key, std::string_view id,
                      std::string_view envelope_json) {
  std::string out;
  out.reserve(16 + container.size() + partition_key.size() + id.size() + envelope_json.size());
  PutU64(&out, ts_ms);
  out.push_back(static_cast<char>(op));
  PutLengthPrefixed(&out, container);
  PutLengthPrefixed(&out, partition_key);
  PutLengthPrefixed(&out, id);
  out.append(envelope_json);
  return out;
}

bool DecodeFeedValue(std::string_view value, ChangeRecord* record) {
  std::string_view container, pk, id;
  if (!GetU64(&value, &record->ts_ms) || value.empty()) return false;
  uint8_t op = static_cast<uint8_t>(value[0]);
  if (op < 1 || op > 3) return false;
  value.remove_prefix(1);
  if (!GetLengthPrefixed(&value, &container) || !GetLengthPrefixed(&value, &pk) ||
      !GetLengthPrefixed(&value, &id)) {
    return false;
  }
  record->op = static_cast<ChangeOp>(op);
  record->container.assign(container);
  record->partition_key.assign(pk);
  record->id.assign(id);
  record->envelope_json.assign(value);
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
