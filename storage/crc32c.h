// CRC-32C (Castagnoli, RFC 3720), the checksum of the write-ahead logs'
// frames (storage/recycled_wal_file_system.h). Computed with the CPU's
// crc32 instruction where it has one (x86-64 with SSE 4.2), a table
// otherwise: Debian's RocksDB is built portable and computes its own
// CRC-32C a table lookup at a time, several times slower.
//
// The values are those of RocksDB's crc32c::Value() and of its
// FileChecksumGenCrc32c (unmasked), so frames written before read the same.
//
// Thread-safety: pure functions.
// Internal to storage/.
#pragma once

#include <cstddef>
#include <cstdint>

namespace feedd {

// The CRC-32C of the bytes whose CRC-32C is `crc` followed by data[0, n):
// Crc32cExtend(Crc32cExtend(0, a), b) is the CRC-32C of a then b.
uint32_t Crc32cExtend(uint32_t crc, const char* data, size_t n);

// The table-driven computation Crc32cExtend() falls back on, for the tests
// that check both give the same values.
uint32_t Crc32cExtendPortable(uint32_t crc, const char* data, size_t n);

}  // namespace feedd
