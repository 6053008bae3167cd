// The change feed's stored value (storage/key_format.h, FeedValue and
// DecodeFeedValue): what is decoded is the envelope that was encoded, byte
// for byte, whether the before-image was stored whole or as its difference
// from the after-image.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <string_view>

#include "storage/change_record.h"
#include "storage/key_format.h"

namespace feedd {
namespace {

namespace kf = key_format;

constexpr uint64_t kTs = 1763700000123;

// An envelope shaped as the commit path writes it, and where its
// before-image is.
struct Envelope {
  std::string json;
  kf::ImageSpan before;
};

Envelope MakeEnvelope(std::string_view before, std::string_view after) {
  Envelope e;
  e.json = R"({"lsn":7,"op":"replace","container":"posts","partitionKey":"p1","id":"p1",)";
  e.json += R"("ts":1763700000123,"before":)";
  e.before.offset = e.json.size();
  e.json += before;
  e.before.size = before.size();
  e.json += R"(,"after":)";
  e.json += after;
  e.json += '}';
  return e;
}

std::string Encode(const Envelope& e, ChangeOp op = ChangeOp::kReplace) {
  return kf::FeedValue(kTs, op, "posts", "p1", "p1", e.json, e.before);
}

std::string Decoded(std::string_view value) {
  ChangeRecord record;
  EXPECT_TRUE(kf::DecodeFeedValue(value, &record));
  EXPECT_EQ(record.ts_ms, kTs);
  EXPECT_EQ(record.container, "posts");
  EXPECT_EQ(record.partition_key, "p1");
  EXPECT_EQ(record.id, "p1");
  return record.envelope_json;
}

const std::string kContent(600, 'x');

std::string Post(int comments, int lsn) {
  return R"({"id":"p1","postId":"p1","type":"post","content":")" + kContent +
         R"(","commentCount":)" + std::to_string(comments) + R"(,"_etag":"\")" +
         std::to_string(lsn) + R"(\"","_lsn":)" + std::to_string(lsn) + "}";
}

TEST(FeedValueTest, AReplaceSharingMostOfItsImagesStoresTheBeforeImageAsADifference) {
  const Envelope e = MakeEnvelope(Post(2, 5), Post(3, 7));
  const std::string value = Encode(e);
  EXPECT_EQ(Decoded(value), e.json);
  // The 600 bytes of content are stored once, not twice.
  EXPECT_LT(value.size(), e.json.size() - kContent.size());
  EXPECT_EQ(value.find(Post(2, 5)), std::string::npos);
}

TEST(FeedValueTest, ARecordReadsTheSameWhicheverWayItsBeforeImageWasStored) {
  const Envelope e = MakeEnvelope(Post(2, 5), Post(3, 7));
  const std::string whole = kf::FeedValue(kTs, ChangeOp::kReplace, "posts", "p1", "p1", e.json);
  EXPECT_NE(whole, Encode(e));
  EXPECT_EQ(Decoded(whole), Decoded(Encode(e)));
  EXPECT_NE(whole.find(e.json), std::string::npos);
}

TEST(FeedValueTest, ImagesSharingLittleAreStoredWhole) {
  const Envelope e = MakeEnvelope(R"({"id":"a","n":1})", R"({"id":"b","n":2})");
  const std::string value = Encode(e);
  EXPECT_NE(value.find(e.json), std::string::npos);
  EXPECT_EQ(Decoded(value), e.json);
}

TEST(FeedValueTest, OnlyAReplaceStoresADifference) {
  // A create or delete has one image; a span given for it is ignored.
  const Envelope e = MakeEnvelope(Post(2, 5), Post(3, 7));
  for (ChangeOp op : {ChangeOp::kCreate, ChangeOp::kDelete}) {
    const std::string value = Encode(e, op);
    EXPECT_NE(value.find(e.json), std::string::npos) << ChangeOpName(op);
    EXPECT_EQ(Decoded(value), e.json);
  }
}

TEST(FeedValueTest, ASpanThatDoesNotEndBeforeTheAfterImageIsStoredWhole) {
  Envelope e = MakeEnvelope(Post(2, 5), Post(3, 7));
  e.before.size -= 1;  // no longer followed by ,"after":
  EXPECT_NE(Encode(e).find(e.json), std::string::npos);
  e.before.offset = e.json.size() + 1;  // outside the envelope
  EXPECT_NE(Encode(e).find(e.json), std::string::npos);
}

// Shared beginnings and ends that overlap (an image inside the other, equal
// images, repeated bytes) must still be rebuilt exactly: a mismatched
// prefix/suffix split would duplicate or drop bytes.
TEST(FeedValueTest, EveryPairOfImagesIsRebuiltExactly) {
  std::mt19937 random(42);
  const std::string alphabet = "ab{}";
  auto text = [&](size_t size) {
    std::string s;
    for (size_t i = 0; i < size; ++i) s += alphabet[random() % alphabet.size()];
    return s;
  };
  const std::string shared = text(40);
  size_t as_difference = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string before = text(random() % 8) + shared + text(random() % 8);
    std::string after = round % 3 == 0   ? before
                        : round % 3 == 1 ? before + text(random() % 50)
                                         : text(random() % 8) + shared + text(random() % 8);
    if (round % 2 == 0) std::swap(before, after);
    const Envelope e = MakeEnvelope(before, after);
    const std::string value = Encode(e);
    ASSERT_EQ(Decoded(value), e.json) << "before " << before << " after " << after;
    if (value.find(e.json) == std::string::npos) ++as_difference;
  }
  EXPECT_GT(as_difference, 1000u);  // the difference form was exercised
}

// A value in the difference layout of docs/storage-format.md, built field by
// field, for values the encoder would never write.
std::string DifferenceValue(ChangeOp op, uint64_t before_offset, uint64_t prefix, uint64_t suffix,
                            std::string_view middle, std::string_view rest) {
  std::string out;
  kf::PutU64(&out, kTs);
  out.push_back(static_cast<char>(0x80 | static_cast<uint8_t>(op)));
  kf::PutLengthPrefixed(&out, "posts");
  kf::PutLengthPrefixed(&out, "p1");
  kf::PutLengthPrefixed(&out, "p1");
  kf::PutVarint(&out, before_offset);
  kf::PutVarint(&out, prefix);
  kf::PutVarint(&out, suffix);
  kf::PutLengthPrefixed(&out, middle);
  kf::PutLengthPrefixed(&out, rest);
  return out;
}

TEST(FeedValueTest, TheDifferenceLayoutIsTheSpecifiedOne) {
  const std::string head = R"({"op":"replace","before":)";
  const std::string rest = head + R"(,"after":{"n":12345}})";
  // before = after's first 5 bytes + "9" + its last byte.
  EXPECT_EQ(Decoded(DifferenceValue(ChangeOp::kReplace, head.size(), 5, 1, "9", rest)),
            head + R"({"n":9},"after":{"n":12345}})");
}

TEST(FeedValueTest, ADamagedDifferenceIsRefused) {
  const Envelope e = MakeEnvelope(Post(2, 5), Post(3, 7));
  const std::string value = Encode(e);
  ChangeRecord record;
  // Cut anywhere: the header, the varints, the middle or the envelope.
  for (size_t size = 0; size < value.size(); ++size) {
    EXPECT_FALSE(kf::DecodeFeedValue(std::string_view(value).substr(0, size), &record)) << size;
  }
  EXPECT_FALSE(kf::DecodeFeedValue(value + "}", &record));  // bytes after the envelope

  const std::string head = R"({"before":)";
  const std::string rest = head + R"(,"after":{"n":1}})";  // the after-image has 7 bytes
  auto refused = [&](ChangeOp op, uint64_t offset, uint64_t prefix, uint64_t suffix,
                     std::string_view rest_json) {
    return !kf::DecodeFeedValue(DifferenceValue(op, offset, prefix, suffix, "", rest_json),
                                &record);
  };
  EXPECT_FALSE(refused(ChangeOp::kReplace, head.size(), 3, 4, rest));       // the control
  EXPECT_TRUE(refused(ChangeOp::kCreate, head.size(), 3, 4, rest));         // not a replace
  EXPECT_TRUE(refused(ChangeOp::kReplace, head.size(), 8, 0, rest));        // prefix > after
  EXPECT_TRUE(refused(ChangeOp::kReplace, head.size(), 4, 4, rest));        // overlapping ends
  EXPECT_TRUE(refused(ChangeOp::kReplace, head.size() + 1, 3, 4, rest));    // not at ,"after":
  EXPECT_TRUE(refused(ChangeOp::kReplace, rest.size() + 1, 0, 0, rest));    // outside
  EXPECT_TRUE(refused(ChangeOp::kReplace, head.size(), 0, 0, rest + " "));  // not ending in }
}

}  // namespace
}  // namespace feedd
