#include "feed/in_flight_window.h"

#include <gtest/gtest.h>

#include <vector>

namespace feedd {
namespace {

std::vector<Lsn> Lsns(const InFlightWindow& w) {
  std::vector<Lsn> out;
  for (const InFlightWindow::Entry& e : w) out.push_back(e.lsn);
  return out;
}

TEST(InFlightWindowTest, FindsEveryLsnOfAContiguousRunAndNothingOutsideIt) {
  InFlightWindow w;
  for (Lsn lsn = 100; lsn < 110; ++lsn) w.Add(lsn).ts_ms = lsn * 10;
  for (Lsn lsn = 100; lsn < 110; ++lsn) {
    InFlightWindow::Entry* e = w.Find(lsn);
    ASSERT_NE(e, nullptr) << lsn;
    EXPECT_EQ(e->lsn, lsn);
    EXPECT_EQ(e->ts_ms, lsn * 10);
  }
  EXPECT_EQ(w.Find(99), nullptr);
  EXPECT_EQ(w.Find(110), nullptr);
  EXPECT_EQ(w.Find(0), nullptr);
}

TEST(InFlightWindowTest, FindsLsnsAcrossGapsLeftByPoppedAndSkippedChanges) {
  InFlightWindow w;
  for (Lsn lsn : {5, 6, 9, 10, 20}) w.Add(lsn).remaining = static_cast<int>(lsn);
  for (Lsn lsn : {5, 6, 9, 10, 20}) {
    ASSERT_NE(w.Find(lsn), nullptr) << lsn;
    EXPECT_EQ(w.Find(lsn)->remaining, static_cast<int>(lsn));
  }
  for (Lsn lsn : {7, 8, 11, 19}) EXPECT_EQ(w.Find(lsn), nullptr) << lsn;
  w.PopFront();
  EXPECT_EQ(w.front().lsn, 6u);
  EXPECT_EQ(w.Find(5), nullptr);
  ASSERT_NE(w.Find(10), nullptr);
  EXPECT_EQ(w.Find(10)->lsn, 10u);
}

TEST(InFlightWindowTest, AnLsnAddedOutOfOrderIsPlacedInOrder) {
  InFlightWindow w;
  w.Add(10);
  w.Add(30);
  w.Add(20).failed = true;
  w.Add(5);
  EXPECT_EQ(Lsns(w), (std::vector<Lsn>{5, 10, 20, 30}));
  ASSERT_NE(w.Find(20), nullptr);
  EXPECT_TRUE(w.Find(20)->failed);
  EXPECT_FALSE(w.Find(30)->failed);
}

TEST(InFlightWindowTest, AddingAnLsnAgainStartsItsEntryAfresh) {
  InFlightWindow w;
  w.Add(1);
  InFlightWindow::Entry& e = w.Add(2);
  e.remaining = 3;
  e.failed = true;
  w.Add(3);
  InFlightWindow::Entry& again = w.Add(2);
  EXPECT_EQ(again.lsn, 2u);
  EXPECT_EQ(again.remaining, 0);
  EXPECT_FALSE(again.failed);
  EXPECT_EQ(w.size(), 3u);
}

TEST(InFlightWindowTest, PopsInLsnOrderUntilEmptyAndClears) {
  InFlightWindow w;
  for (Lsn lsn = 1; lsn <= 3; ++lsn) w.Add(lsn);
  std::vector<Lsn> popped;
  while (!w.empty()) {
    popped.push_back(w.front().lsn);
    w.PopFront();
  }
  EXPECT_EQ(popped, (std::vector<Lsn>{1, 2, 3}));
  w.Add(7);
  w.Clear();
  EXPECT_TRUE(w.empty());
  EXPECT_EQ(w.Find(7), nullptr);
}

}  // namespace
}  // namespace feedd
