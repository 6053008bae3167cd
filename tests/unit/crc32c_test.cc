// Crc32cExtend (storage/crc32c.h): the published check values, extension
// in pieces, the portable table against the CPU instruction, and RocksDB's
// own CRC-32C, which wrote the frames of earlier versions.
#include "storage/crc32c.h"

#include <gtest/gtest.h>
#include <rocksdb/file_checksum.h>

#include <memory>
#include <random>
#include <string>

namespace feedd {
namespace {

uint32_t RocksDbCrc32c(const std::string& data) {
  std::unique_ptr<rocksdb::FileChecksumGenerator> crc =
      rocksdb::GetFileChecksumGenCrc32cFactory()->CreateFileChecksumGenerator(
          rocksdb::FileChecksumGenContext());
  crc->Update(data.data(), data.size());
  crc->Finalize();
  uint32_t v = 0;
  for (char c : crc->GetChecksum()) v = (v << 8) | static_cast<unsigned char>(c);  // big-endian
  return v;
}

std::string RandomBytes(std::mt19937* rng, size_t n) {
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>((*rng)() & 0xff);
  return s;
}

TEST(Crc32cTest, GivesThePublishedCheckValues) {
  const std::string digits = "123456789";
  EXPECT_EQ(Crc32cExtend(0, digits.data(), digits.size()), 0xE3069283u);
  // RFC 3720, B.4: 32 bytes of zeros, and of 0xff.
  const std::string zeros(32, '\0'), ones(32, '\xff');
  EXPECT_EQ(Crc32cExtend(0, zeros.data(), zeros.size()), 0x8A9136AAu);
  EXPECT_EQ(Crc32cExtend(0, ones.data(), ones.size()), 0x62A8AB43u);
  EXPECT_EQ(Crc32cExtend(0, nullptr, 0), 0u);
}

TEST(Crc32cTest, ThePortableTableAndTheInstructionAgreeWithRocksDb) {
  std::mt19937 rng(7);
  for (size_t n : {0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 1000, 4096, 65537}) {
    // Every alignment of the start, since the instruction reads 8 bytes at a time.
    const std::string padded = RandomBytes(&rng, n + 8);
    for (size_t start = 0; start < 8; ++start) {
      const std::string data = padded.substr(start, n);
      const uint32_t expected = RocksDbCrc32c(data);
      EXPECT_EQ(Crc32cExtend(0, data.data(), data.size()), expected) << n << " @" << start;
      EXPECT_EQ(Crc32cExtendPortable(0, data.data(), data.size()), expected) << n << " @" << start;
    }
  }
}

TEST(Crc32cTest, ExtendingPieceByPieceGivesTheCrcOfTheWhole) {
  std::mt19937 rng(11);
  const std::string data = RandomBytes(&rng, 5000);
  const uint32_t whole = Crc32cExtend(0, data.data(), data.size());
  for (size_t cut : {0, 1, 8, 13, 2500, 4999, 5000}) {
    const uint32_t first = Crc32cExtend(0, data.data(), cut);
    EXPECT_EQ(Crc32cExtend(first, data.data() + cut, data.size() - cut), whole) << cut;
    EXPECT_EQ(Crc32cExtendPortable(Crc32cExtendPortable(0, data.data(), cut), data.data() + cut,
                                   data.size() - cut),
              whole)
        << cut;
  }
}

}  // namespace
}  // namespace feedd
