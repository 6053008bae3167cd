#include "util/json_memory.h"

namespace feedd {
namespace {

// Heap bytes of a string: none while it fits in the value itself.
size_t StringBytes(size_t size) {
  constexpr size_t kInPlace = 14;  // boost::json::string's short-string buffer
  constexpr size_t kHeader = 16;   // its heap block's size and capacity
  return size <= kInPlace ? 0 : kHeader + size + 1;
}

}  // namespace

size_t ApproximateJsonBytes(const boost::json::object& o) {
  constexpr size_t kTable = 32;  // the table's header
  constexpr size_t kPair = sizeof(boost::json::key_value_pair);
  size_t bytes = kTable;
  for (const boost::json::key_value_pair& member : o) {
    bytes += kPair + member.key().size() + 1 + ApproximateJsonBytes(member.value());
  }
  return bytes;
}

size_t ApproximateJsonBytes(const boost::json::value& v) {
  switch (v.kind()) {
    case boost::json::kind::object:
      return ApproximateJsonBytes(v.get_object());
    case boost::json::kind::array: {
      constexpr size_t kTable = 16;
      size_t bytes = kTable;
      for (const boost::json::value& element : v.get_array()) {
        bytes += sizeof(boost::json::value) + ApproximateJsonBytes(element);
      }
      return bytes;
    }
    case boost::json::kind::string:
      return StringBytes(v.get_string().size());
    default:  // numbers, booleans and null live in the value itself
      return 0;
  }
}

}  // namespace feedd
