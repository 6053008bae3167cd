// ContainerSpec: the declaration of one container (name, partition key path,
// secondary-index paths, who may write it), as read from the configuration.
//
// Thread-safety: plain value.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace feedd {

// Who writes a container's items (storage/derived_items.h).
enum class ContainerWriters {
  kAny,         // clients and processors
  kProcessors,  // processors only: every client write is refused (derived_container)
};

struct ContainerSpec {
  std::string name;                      // [a-z][a-z0-9_-]{0,62}
  std::string partition_key_path;        // JSON Pointer, e.g. "/userId"
  std::vector<std::string> index_paths;  // JSON Pointers of secondary indexes
  ContainerWriters writers = ContainerWriters::kAny;
};

// "any" / "processors" (the configuration's container.<name>.writers).
Result<ContainerWriters> ParseContainerWriters(std::string_view text);

// OK when `spec` is usable: a valid name, valid JSON Pointers, no duplicate
// index path, and no index on the partition key path.
Status ValidateContainerSpec(const ContainerSpec& spec);

}  // namespace feedd
