// ItemGenerations (storage/item_generations.h): what moves an item's
// generation, and what does not.
#include "storage/item_generations.h"

#include <gtest/gtest.h>

#include <string>

namespace feedd {
namespace {

TEST(ItemGenerationsTest, ABumpMovesItsItemByOne) {
  ItemGenerations generations(2);
  const uint64_t before = generations.Get(1, "p1", "a");
  EXPECT_EQ(generations.Bump(1, "p1", "a"), before + 1);
  EXPECT_EQ(generations.Get(1, "p1", "a"), before + 1);
  EXPECT_EQ(generations.Bump(1, "p1", "a"), before + 2);
}

// A bulk write into one container (four times as many items as a
// container has counters, so that every counter of a shared array would
// move) leaves the generations of another container's items alone: the
// memo of a processor that reads them (`usernames` reads users while
// posts, comments and likes are imported) keeps hitting.
TEST(ItemGenerationsTest, ChangesInOneContainerLeaveAnothersItemsAlone) {
  ItemGenerations generations(2);
  for (int i = 0; i < 1'000'000; ++i) {
    generations.Bump(1, "post" + std::to_string(i % 1000), "item" + std::to_string(i));
  }
  for (int user = 0; user < 100; ++user) {
    const std::string id = "u" + std::to_string(user);
    EXPECT_EQ(generations.Get(0, id, id), 0u) << id;
  }
}

}  // namespace
}  // namespace feedd
