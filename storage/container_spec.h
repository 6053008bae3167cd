// ContainerSpec: the declaration of one container (name, partition key path,
// secondary-index paths), as read from the configuration.
//
// Thread-safety: plain value.
#pragma once

#include <string>
#include <vector>

#include "util/status.h"

namespace feedd {

struct ContainerSpec {
  std::string name;                      // [a-z][a-z0-9_-]{0,62}
  std::string partition_key_path;        // JSON Pointer, e.g. "/userId"
  std::vector<std::string> index_paths;  // JSON Pointers of secondary indexes
};

// OK when `spec` is usable: a valid name, valid JSON Pointers, no duplicate
// index path, and no index on the partition key path.
Status ValidateContainerSpec(const ContainerSpec& spec);

// The blogging containers of the scenario: users(/userId), posts(/postId,
// index /userId), feed(/type).
std::vector<ContainerSpec> DefaultContainers();

}  // namespace feedd
