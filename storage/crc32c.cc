#include "storage/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace feedd {
namespace {

constexpr uint32_t kReflectedPolynomial = 0x82F63B78;

constexpr std::array<uint32_t, 256> MakeTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t crc = i;
    for (int bit = 0; bit < 8; ++bit)
      crc = (crc >> 1) ^ ((crc & 1) != 0 ? kReflectedPolynomial : 0);
    table[i] = crc;
  }
  return table;
}

constexpr std::array<uint32_t, 256> kTable = MakeTable();

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t Crc32cExtendHardware(uint32_t crc, const char* data,
                                                                size_t n) {
  uint64_t state = ~crc;
  for (; n >= 8; data += 8, n -= 8) {
    uint64_t word;
    std::memcpy(&word, data, sizeof(word));
    state = _mm_crc32_u64(state, word);
  }
  auto state32 = static_cast<uint32_t>(state);
  for (; n > 0; ++data, --n) state32 = _mm_crc32_u8(state32, static_cast<unsigned char>(*data));
  return ~state32;
}

bool CpuHasCrc32Instruction() {
  __builtin_cpu_init();  // in case the first checksum comes before main()
  return __builtin_cpu_supports("sse4.2") != 0;
}
#endif

}  // namespace

uint32_t Crc32cExtendPortable(uint32_t crc, const char* data, size_t n) {
  uint32_t state = ~crc;
  for (size_t i = 0; i < n; ++i) {
    state = kTable[(state ^ static_cast<unsigned char>(data[i])) & 0xff] ^ (state >> 8);
  }
  return ~state;
}

uint32_t Crc32cExtend(uint32_t crc, const char* data, size_t n) {
#if defined(__x86_64__)
  static const bool hardware = CpuHasCrc32Instruction();
  if (hardware) return Crc32cExtendHardware(crc, data, n);
#endif
  return Crc32cExtendPortable(crc, data, n);
}

}  // namespace feedd
