#include "storage/container_spec.h"

#include <algorithm>

#include "storage/json_pointer.h"

namespace feedd {
namespace {

bool ValidName(const std::string& name) {
  if (name.empty() || name.size() > 63) return false;
  if (name[0] < 'a' || name[0] > 'z') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

Status InvalidSpec(const ContainerSpec& spec, const std::string& what) {
  return Status(ErrorCode::kInvalidRequest, "container '" + spec.name + "': " + what);
}

}  // namespace

Status ValidateContainerSpec(const ContainerSpec& spec) {
  if (!ValidName(spec.name)) return InvalidSpec(spec, "name must match [a-z][a-z0-9_-]{0,62}");
  auto pk = JsonPointer::Parse(spec.partition_key_path);
  if (!pk.ok() || pk->is_root()) {
    return InvalidSpec(spec, "partition key path '" + spec.partition_key_path +
                                 "' is not a JSON Pointer to a field");
  }
  if (pk->tokens().size() == 1 && pk->tokens()[0] == "id") {
    return InvalidSpec(spec, "the partition key path cannot be /id");
  }
  std::vector<std::string> seen;
  for (const auto& path : spec.index_paths) {
    auto p = JsonPointer::Parse(path);
    if (!p.ok() || p->is_root()) {
      return InvalidSpec(spec, "index path '" + path + "' is not a JSON Pointer to a field");
    }
    if (path == spec.partition_key_path) {
      return InvalidSpec(spec, "index path '" + path + "' is the partition key path");
    }
    if (std::find(seen.begin(), seen.end(), path) != seen.end()) {
      return InvalidSpec(spec, "index path '" + path + "' is declared twice");
    }
    seen.push_back(path);
  }
  return Status::Ok();
}

Result<ContainerWriters> ParseContainerWriters(std::string_view text) {
  if (text == "any") return ContainerWriters::kAny;
  if (text == "processors") return ContainerWriters::kProcessors;
  return Status(ErrorCode::kInvalidRequest,
                "writers must be 'any' or 'processors', not '" + std::string(text) + "'");
}

}  // namespace feedd
