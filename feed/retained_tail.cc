#include "feed/retained_tail.h"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "feed/kafka_message.h"

namespace feedd {
namespace {

constexpr Lsn kChunk = 1000;                       // LSNs read per step back
constexpr uint64_t kPageBytes = 16 * 1024 * 1024;  // envelope bytes per read
// feedd-lsn/-op/-container/-id/-partition-key names and the record's framing.
constexpr uint64_t kHeaderOverhead = 128;

struct Sized {
  Lsn lsn;
  std::pair<std::string, int32_t> partition;  // topic, partition
  uint64_t bytes;
};

uint64_t MessageBytes(const KafkaOptions& options, const ChangeRecord& r) {
  const uint64_t key = MessageKeyFor(options, r).size();
  const uint64_t headers =
      kHeaderOverhead + r.container.size() + r.id.size() + r.partition_key.size() + 20;
  const uint64_t value =
      std::min<uint64_t>(r.envelope_json.size(), options.max_envelope_bytes + 1024);
  uint64_t bytes = key + headers + value;
  if (r.op == ChangeOp::kDelete && options.tombstones) bytes += key + headers;
  return bytes;
}

}  // namespace

Result<Lsn> RetainedTailStart(const DocumentStore& store, const KafkaOptions& options,
                              int partitions, uint64_t per_partition_bytes) {
  const Lsn head = store.HeadLsn();
  const Lsn oldest = std::max<Lsn>(store.OldestRetainedLsn(), 1);
  std::map<std::pair<std::string, int32_t>, uint64_t> used;
  Lsn chunk_end = head;
  while (chunk_end >= oldest) {
    const Lsn chunk_begin = chunk_end - oldest + 1 > kChunk ? chunk_end - kChunk + 1 : oldest;
    std::vector<Sized> chunk;
    for (Lsn from = chunk_begin; from <= chunk_end;) {
      FeedReadSpec spec;
      spec.from = from;
      spec.limit = chunk_end - from + 1;
      spec.max_scanned = spec.limit;
      spec.max_bytes = kPageBytes;
      FeedPage page;
      if (Status s = store.ReadFeed(spec, &page); !s.ok()) return s;
      for (const ChangeRecord& r : page.records) {
        if (r.lsn > chunk_end) break;
        chunk.push_back(
            {r.lsn,
             {TopicFor(options, r.container), KafkaPartitionOf(r.partition_key, partitions)},
             MessageBytes(options, r)});
      }
      if (page.records.empty() || page.next <= from) break;
      from = page.next;
    }
    for (auto it = chunk.rbegin(); it != chunk.rend(); ++it) {
      uint64_t& sum = used[it->partition];
      if (sum + it->bytes > per_partition_bytes) return it->lsn + 1;
      sum += it->bytes;
    }
    if (chunk_begin == oldest) break;
    chunk_end = chunk_begin - 1;
  }
  return oldest;
}

}  // namespace feedd
