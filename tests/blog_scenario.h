// The blog scenario as the tests use it: the containers and processor
// settings of configs/feedd.conf, spelled out for tests that run the
// engine without the daemon's configuration. options_test checks that they
// are what the built-in configs/feedd.conf declares.
//
// Thread-safety: pure functions.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "storage/container_spec.h"

namespace feedd {

// users(/userId), posts(/postId, index /userId), feed(/type, written by
// processors only).
inline std::vector<ContainerSpec> BlogContainers() {
  return {
      {"users", "/userId", {}},
      {"posts", "/postId", {"/userId"}},
      {"feed", "/type", {}, ContainerWriters::kProcessors},
  };
}

// The three views, as processor.<name>.<key> settings keyed by
// "<name>.<key>" (docs/processors.md).
inline std::map<std::string, std::string> BlogProcessorSettings() {
  return {
      {"usernames.kind", "field_copy"},
      {"usernames.source_container", "users"},
      {"usernames.source_filter", "type=user"},
      {"usernames.key_field", "/userId"},
      {"usernames.value_field", "/username"},
      {"usernames.target_container", "posts"},
      {"usernames.target_key_field", "/userId"},
      {"usernames.target_field", "/userUsername"},
      {"user_posts.kind", "projection"},
      {"user_posts.source_container", "posts"},
      {"user_posts.source_filter", "type=post"},
      {"user_posts.target_container", "users"},
      {"user_posts.truncate_field", "/content"},
      {"user_posts.truncate_chars", "200"},
      {"feed.kind", "top_n"},
      {"feed.source_container", "posts"},
      {"feed.source_filter", "type=post"},
      {"feed.target_container", "feed"},
      {"feed.order_by", "/creationDate"},
      {"feed.cap", "100"},
      {"feed.truncate_field", "/content"},
      {"feed.truncate_chars", "200"},
  };
}

}  // namespace feedd
