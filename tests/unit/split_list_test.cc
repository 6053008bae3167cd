// Unit tests of SplitList (util/split_list.h).
#include "util/split_list.h"

#include <gtest/gtest.h>

#include <string_view>
#include <vector>

namespace feedd {
namespace {

using Items = std::vector<std::string_view>;

TEST(SplitListTest, SplitsAtTheSeparatorAndTrimsSpacesAndTabs) {
  EXPECT_EQ(SplitList("a,b,c"), (Items{"a", "b", "c"}));
  EXPECT_EQ(SplitList(" a ,\tb\t, c d "), (Items{"a", "b", "c d"}));
  EXPECT_EQ(SplitList("only"), (Items{"only"}));
  EXPECT_EQ(SplitList("a;b,c", ';'), (Items{"a", "b,c"}));
}

TEST(SplitListTest, KeepsEmptyItemsForTheCallerToJudge) {
  EXPECT_EQ(SplitList(""), Items{});
  EXPECT_EQ(SplitList(" "), (Items{""}));
  EXPECT_EQ(SplitList("a,"), (Items{"a", ""}));
  EXPECT_EQ(SplitList(",a"), (Items{"", "a"}));
  EXPECT_EQ(SplitList("a,, b"), (Items{"a", "", "b"}));
  EXPECT_EQ(SplitList(","), (Items{"", ""}));
}

}  // namespace
}  // namespace feedd
