#include "storage/item_generations.h"

#include <functional>

namespace feedd {

ItemGenerations::ItemGenerations(size_t containers)
    : counters_(new std::atomic<uint64_t>[containers * kSlots]) {
  for (size_t i = 0; i < containers * kSlots; ++i) counters_[i].store(0, std::memory_order_relaxed);
}

size_t ItemGenerations::SlotOf(size_t container_index, std::string_view partition_key,
                               std::string_view id) {
  const std::hash<std::string_view> hash;
  const size_t h = hash(partition_key) * 0x9e3779b97f4a7c15ull ^ hash(id);
  return container_index * kSlots + h % kSlots;
}

uint64_t ItemGenerations::Get(size_t container_index, std::string_view partition_key,
                              std::string_view id) const {
  return counters_[SlotOf(container_index, partition_key, id)].load(std::memory_order_acquire);
}

uint64_t ItemGenerations::Bump(size_t container_index, std::string_view partition_key,
                               std::string_view id) {
  return counters_[SlotOf(container_index, partition_key, id)].fetch_add(
             1, std::memory_order_acq_rel) +
         1;
}

}  // namespace feedd
