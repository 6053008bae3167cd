// Unit tests of ApproximateJsonBytes (util/json_memory.h): what it counts
// grows with what a value holds on the heap, and nothing else.
#include "util/json_memory.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <string>

namespace feedd {
namespace {

using boost::json::array;
using boost::json::object;
using boost::json::value;

TEST(JsonMemoryTest, ScalarsAndShortStringsLiveInTheValue) {
  for (const value& v : {value(nullptr), value(true), value(42), value(1.5), value("short")}) {
    EXPECT_EQ(ApproximateJsonBytes(v), 0u) << boost::json::serialize(v);
  }
}

TEST(JsonMemoryTest, LongStringsCountTheirCharacters) {
  const size_t one = ApproximateJsonBytes(value(std::string(100, 'x')));
  EXPECT_GE(one, 100u);
  EXPECT_EQ(ApproximateJsonBytes(value(std::string(1100, 'x'))), one + 1000);
}

TEST(JsonMemoryTest, ContainersCountTheirMembersKeysAndNestedValues) {
  const object empty;
  const object small{{"id", "u1"}};
  const object larger{{"id", "u1"}, {"username", std::string(200, 'n')}};
  EXPECT_GT(ApproximateJsonBytes(small), ApproximateJsonBytes(empty));
  EXPECT_GE(ApproximateJsonBytes(larger), ApproximateJsonBytes(small) + 200 + 8);
  const value nested{{"user", larger}, {"tags", array{"a", std::string(50, 't')}}};
  EXPECT_GE(ApproximateJsonBytes(nested), ApproximateJsonBytes(larger) + 50 + 2 * sizeof(value));
  EXPECT_EQ(ApproximateJsonBytes(value(larger)), ApproximateJsonBytes(larger));
}

}  // namespace
}  // namespace feedd
