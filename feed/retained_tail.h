// RetainedTailStart: where the newest part of the retained change feed that
// fits a broker's per-partition window begins. The publisher republishes
// from there into the embedded broker, which starts empty on every start
// and keeps only the newest ~5 MiB per partition (docs/kafka.md, "The
// embedded broker"), so that a consumer reading from the beginning sees
// recent history rather than nothing.
//
// Contract
//   Walks the feed back from the head in chunks of LSNs (each chunk read
//   forward, in pages of bounded bytes) and sums, per topic partition, the
//   uncompressed size of the messages the publisher would send for each
//   change (value after the size policy, key, headers, a tombstone). Returns
//   the lowest LSN L such that every partition's sum over [L, head] is at
//   most `per_partition_bytes`; head + 1 when even the head's change does
//   not fit; the oldest retained LSN when everything fits. Reads at most the
//   tail it returns plus one chunk.
//
// Thread-safety: free function; reads the store through its thread-safe API.
#pragma once

#include <cstdint>

#include "feed/kafka_options.h"
#include "storage/document_store.h"

namespace feedd {

// REQUIRES: partitions > 0 (every topic has this many partitions).
Result<Lsn> RetainedTailStart(const DocumentStore& store, const KafkaOptions& options,
                              int partitions, uint64_t per_partition_bytes);

}  // namespace feedd
