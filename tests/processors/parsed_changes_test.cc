// Unit tests of ParsedChanges (processors/parsed_changes.h): a record is
// parsed once for every instance that asks, an LSN's slot taken by another
// record is parsed again, and a record that does not parse is an error each
// time, never kept.
#include "processors/parsed_changes.h"

#include <gtest/gtest.h>

#include <string>

namespace feedd {
namespace {

ChangeRecord Record(Lsn lsn, const std::string& id) {
  ChangeRecord r;
  r.lsn = lsn;
  r.container = "users";
  r.partition_key = id;
  r.id = id;
  r.envelope_json = R"({"lsn":)" + std::to_string(lsn) +
                    R"(,"op":"create","container":"users","partitionKey":")" + id + R"(","id":")" +
                    id + R"(","ts":5,"before":null,"after":{"id":")" + id + R"(","name":"x"}})";
  return r;
}

TEST(ParsedChangesTest, EachRecordIsParsedOnceForEveryoneWhoAsks) {
  ParsedChanges parsed;
  auto first = parsed.Parse(Record(7, "u7"));
  auto second = parsed.Parse(Record(7, "u7"));
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(second->id, "u7");
  EXPECT_EQ(second->lsn, 7u);
  EXPECT_EQ(first->after, second->after) << "the very same image, not a copy";
  EXPECT_EQ(second->after->at("name").as_string(), "x");
  EXPECT_EQ(parsed.parsed(), 1u);
  EXPECT_EQ(parsed.reused(), 1u);
}

TEST(ParsedChangesTest, ASlotTakenByAnotherLsnIsParsedAgain) {
  ParsedChanges parsed;
  ASSERT_TRUE(parsed.Parse(Record(3, "a")).ok());
  const Lsn same_slot = 3 + ParsedChanges::kSlots;
  auto later = parsed.Parse(Record(same_slot, "b"));
  ASSERT_TRUE(later.ok());
  EXPECT_EQ(later->id, "b");
  auto again = parsed.Parse(Record(3, "a"));  // evicted by the later one
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->id, "a");
  EXPECT_EQ(parsed.parsed(), 3u);
  EXPECT_EQ(parsed.reused(), 0u);
}

TEST(ParsedChangesTest, ARecordThatDoesNotParseIsAnErrorEveryTime) {
  ParsedChanges parsed;
  ChangeRecord bad = Record(9, "u9");
  bad.envelope_json = "[1]";
  EXPECT_FALSE(parsed.Parse(bad).ok());
  EXPECT_FALSE(parsed.Parse(bad).ok());
  EXPECT_EQ(parsed.reused(), 0u);
}

}  // namespace
}  // namespace feedd
