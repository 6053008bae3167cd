// storage/derived_items.h: what the store reads of a derived item's text.
#include "storage/derived_items.h"

#include <gtest/gtest.h>

namespace feedd {
namespace {

// The commit thread compares a conditional upsert with the stored copy's
// _sourceLsn read from its text, as a parse of the item would read it.
TEST(DerivedItemsTest, TheSourceLsnOfAStoredItemIsReadFromItsText) {
  EXPECT_EQ(SourceLsnOf(R"({"id":"p1","_sourceLsn":42,"title":"t"})"), 42u);
  EXPECT_EQ(SourceLsnOf(R"({"_sourceLsn":18446744073709551615})"), 18446744073709551615u);
  EXPECT_EQ(SourceLsnOf(R"({"id":"p1"})"), 0u);
  // Only a top-level member counts, and the first of a name.
  EXPECT_EQ(SourceLsnOf(R"({"_source":{"_sourceLsn":9},"id":"p1"})"), 0u);
  EXPECT_EQ(SourceLsnOf(R"({"_sourceLsn":7,"_sourceLsn":9})"), 7u);
  // What is not a non-negative integer counts as none, as in a parsed item
  // (where these are negative, double or out of range).
  for (const char* item : {R"({"_sourceLsn":-3})", R"({"_sourceLsn":5.0})", R"({"_sourceLsn":5e2})",
                           R"({"_sourceLsn":18446744073709551616})", R"({"_sourceLsn":"42"})",
                           R"({"_sourceLsn":null})", "not json"}) {
    EXPECT_EQ(SourceLsnOf(item), 0u) << item;
  }
}

}  // namespace
}  // namespace feedd
