// ApproximateJsonBytes: an estimate of the heap memory a boost::json value
// holds, for caches that bound what they keep by bytes (the view read memo).
// It counts Boost.JSON's layout (16-byte values, key/value pairs, strings
// longer than the in-place ones) without asking the allocator; close enough
// to bound memory, not an exact figure.
//
// Thread-safety: a free function on a value the caller does not change
// meanwhile. Cost: one walk of the value.
#pragma once

#include <boost/json/value.hpp>
#include <cstddef>

namespace feedd {

size_t ApproximateJsonBytes(const boost::json::value& v);
size_t ApproximateJsonBytes(const boost::json::object& o);

}  // namespace feedd
