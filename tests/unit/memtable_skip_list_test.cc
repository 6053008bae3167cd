// NewMemTableSkipListFactory (storage/memtable_skip_list.h), exercised
// through a real RocksDB on disk: point reads, iteration both ways, seeks
// and snapshots against an ordered model, for ascending inserts (the
// writer's finger), descending and random ones; readers concurrent with the
// writer; and RocksDB refusing concurrent inserts with it.
#include "storage/memtable_skip_list.h"

#include <gtest/gtest.h>
#include <rocksdb/db.h>
#include <rocksdb/options.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "test_util.h"

namespace feedd {
namespace {

using testutil::TempDir;

// A database whose memtables use the list. A write buffer of 64 MiB keeps
// these tests' data in the memtable, where the list is the only index.
std::unique_ptr<rocksdb::DB> OpenWithList(const std::string& dir, size_t write_buffer = 64 << 20) {
  rocksdb::Options options;
  options.create_if_missing = true;
  options.allow_concurrent_memtable_write = false;
  options.memtable_factory = NewMemTableSkipListFactory();
  options.write_buffer_size = write_buffer;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(options, dir, &raw);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return std::unique_ptr<rocksdb::DB>(raw);
}

std::string Key(uint32_t n) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "k%08u", n);
  return buffer;
}

std::optional<std::string> Read(rocksdb::DB* db, const std::string& key,
                                const rocksdb::Snapshot* snapshot = nullptr) {
  rocksdb::ReadOptions ro;
  ro.snapshot = snapshot;
  std::string value;
  rocksdb::Status s = db->Get(ro, key, &value);
  if (s.IsNotFound()) return std::nullopt;
  EXPECT_TRUE(s.ok()) << s.ToString();
  return value;
}

// Every way of reading the database agrees with `model`.
void ExpectMatches(rocksdb::DB* db, const std::map<std::string, std::string>& model,
                   uint32_t key_space, const rocksdb::Snapshot* snapshot = nullptr) {
  for (uint32_t n = 0; n < key_space; ++n) {
    auto it = model.find(Key(n));
    std::optional<std::string> want;
    if (it != model.end()) want = it->second;
    ASSERT_EQ(Read(db, Key(n), snapshot), want) << Key(n);
  }
  rocksdb::ReadOptions ro;
  ro.snapshot = snapshot;
  std::unique_ptr<rocksdb::Iterator> iter(db->NewIterator(ro));
  auto m = model.begin();
  for (iter->SeekToFirst(); iter->Valid(); iter->Next(), ++m) {
    ASSERT_NE(m, model.end());
    ASSERT_EQ(iter->key().ToString(), m->first);
    ASSERT_EQ(iter->value().ToString(), m->second);
  }
  ASSERT_TRUE(iter->status().ok());
  ASSERT_EQ(m, model.end());
  auto r = model.rbegin();
  for (iter->SeekToLast(); iter->Valid(); iter->Prev(), ++r) {
    ASSERT_NE(r, model.rend());
    ASSERT_EQ(iter->key().ToString(), r->first);
  }
  ASSERT_EQ(r, model.rend());
  // Seeks to every key, present or not, both ways.
  for (uint32_t n = 0; n <= key_space; ++n) {
    const std::string target = Key(n);
    iter->Seek(target);
    auto ge = model.lower_bound(target);
    ASSERT_EQ(iter->Valid(), ge != model.end()) << target;
    if (iter->Valid()) {
      ASSERT_EQ(iter->key().ToString(), ge->first);
    }
    iter->SeekForPrev(target);
    auto le = model.upper_bound(target);
    ASSERT_EQ(iter->Valid(), le != model.begin()) << target;
    if (iter->Valid()) {
      ASSERT_EQ(iter->key().ToString(), std::prev(le)->first);
    }
  }
}

enum class Order { kAscending, kDescending, kRandom };

class MemTableSkipListOrderTest : public ::testing::TestWithParam<Order> {};

TEST_P(MemTableSkipListOrderTest, ReadsBackWhatWasWrittenEveryWay) {
  TempDir dir;
  auto db = OpenWithList(dir.path());
  constexpr uint32_t kKeys = 3000;
  std::vector<uint32_t> order(kKeys);
  for (uint32_t i = 0; i < kKeys; ++i) order[i] = i;
  std::mt19937 rng(7);
  if (GetParam() == Order::kDescending) std::reverse(order.begin(), order.end());
  if (GetParam() == Order::kRandom) std::shuffle(order.begin(), order.end(), rng);

  std::map<std::string, std::string> model;
  // Every other key, then the rest, so that the second pass inserts
  // between nodes already linked (an import's second batch).
  for (int pass = 0; pass < 2; ++pass) {
    rocksdb::WriteBatch batch;
    for (uint32_t n : order) {
      if (n % 2 != static_cast<uint32_t>(pass)) continue;
      std::string value = "v" + std::to_string(n) + std::string(n % 50, 'x');
      batch.Put(Key(n), value);
      model[Key(n)] = value;
    }
    ASSERT_TRUE(db->Write(rocksdb::WriteOptions(), &batch).ok());
  }
  ExpectMatches(db.get(), model, kKeys + 10);

  // Overwrites and deletes are newer versions in the same list; a snapshot
  // still reads the older ones.
  const rocksdb::Snapshot* before = db->GetSnapshot();
  auto model_before = model;
  rocksdb::WriteBatch changes;
  for (uint32_t n = 0; n < kKeys; n += 3) {
    if (n % 2 == 0) {
      changes.Delete(Key(n));
      model.erase(Key(n));
    } else {
      changes.Put(Key(n), "new" + std::to_string(n));
      model[Key(n)] = "new" + std::to_string(n);
    }
  }
  ASSERT_TRUE(db->Write(rocksdb::WriteOptions(), &changes).ok());
  ExpectMatches(db.get(), model, kKeys + 10);
  ExpectMatches(db.get(), model_before, kKeys + 10, before);
  db->ReleaseSnapshot(before);

  // And the same once flushed to a table and reopened.
  ASSERT_TRUE(db->Flush(rocksdb::FlushOptions()).ok());
  db.reset();
  db = OpenWithList(dir.path());
  ExpectMatches(db.get(), model, kKeys + 10);
}

INSTANTIATE_TEST_SUITE_P(Orders, MemTableSkipListOrderTest,
                         ::testing::Values(Order::kAscending, Order::kDescending, Order::kRandom));

TEST(MemTableSkipListTest, WalReplayAfterACrashRebuildsTheList) {
  TempDir dir;
  std::map<std::string, std::string> model;
  {
    auto db = OpenWithList(dir.path());
    std::mt19937 rng(11);
    for (int i = 0; i < 2000; ++i) {
      std::string key = Key(rng() % 5000);
      ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), key, std::to_string(i)).ok());
      model[key] = std::to_string(i);
    }
    // Closed without a flush: the reopen replays the log into a new list.
  }
  auto db = OpenWithList(dir.path());
  ExpectMatches(db.get(), model, 5000);
}

TEST(MemTableSkipListTest, ReadersRunConcurrentlyWithTheWriter) {
  TempDir dir;
  auto db = OpenWithList(dir.path());
  constexpr uint32_t kKeys = 20000;
  std::atomic<uint32_t> written{0};  // keys [0, written) are all in
  std::atomic<bool> done{false};
  std::atomic<int> failures{0};

  // The writer inserts keys in a scrambled order, in small batches, and
  // publishes how many of the scrambled sequence are in.
  std::vector<uint32_t> order(kKeys);
  for (uint32_t i = 0; i < kKeys; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), std::mt19937(3));
  std::thread writer([&] {
    for (uint32_t i = 0; i < kKeys; i += 10) {
      rocksdb::WriteBatch batch;
      for (uint32_t j = i; j < i + 10; ++j) batch.Put(Key(order[j]), Key(order[j]));
      if (!db->Write(rocksdb::WriteOptions(), &batch).ok()) failures++;
      written.store(i + 10, std::memory_order_release);
    }
    done = true;
  });
  auto reader = [&](unsigned seed) {
    std::mt19937 rng(seed);
    while (!done) {
      uint32_t in = written.load(std::memory_order_acquire);
      // A key written before this read started is there.
      if (in > 0) {
        uint32_t n = order[rng() % in];
        if (Read(db.get(), Key(n)) != Key(n)) failures++;
      }
      // A scan sees strictly ascending keys, at least as many as were in.
      std::unique_ptr<rocksdb::Iterator> iter(db->NewIterator(rocksdb::ReadOptions()));
      std::string last;
      uint32_t seen = 0;
      for (iter->SeekToFirst(); iter->Valid(); iter->Next(), ++seen) {
        if (!last.empty() && iter->key().ToString() <= last) failures++;
        last = iter->key().ToString();
      }
      if (seen < in) failures++;
      // Backwards, and from a seek, the same.
      last.clear();
      seen = 0;
      for (iter->SeekToLast(); iter->Valid(); iter->Prev(), ++seen) {
        if (!last.empty() && iter->key().ToString() >= last) failures++;
        last = iter->key().ToString();
      }
      if (seen < in) failures++;
      if (in > 0) {
        std::string target = Key(order[rng() % in]);
        iter->Seek(target);
        if (!iter->Valid() || iter->key().ToString() != target) failures++;
        iter->Prev();
        if (iter->Valid() && iter->key().ToString() >= target) failures++;
      }
    }
  };
  std::thread r1(reader, 1), r2(reader, 2);
  writer.join();
  r1.join();
  r2.join();
  EXPECT_EQ(failures.load(), 0);
  std::map<std::string, std::string> model;
  for (uint32_t n = 0; n < kKeys; ++n) model[Key(n)] = Key(n);
  ExpectMatches(db.get(), model, kKeys);
}

TEST(MemTableSkipListTest, FlushesWhenTheArenaFillsAndKeepsReading) {
  TempDir dir;
  auto db = OpenWithList(dir.path(), 256 << 10);  // flushes every ~256 KiB
  std::map<std::string, std::string> model;
  for (uint32_t n = 0; n < 6000; ++n) {
    std::string value(100, static_cast<char>('a' + n % 26));
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), Key(n * 7919 % 6000), value).ok());
    model[Key(n * 7919 % 6000)] = value;
  }
  // Some of the data is in tables, the rest in the memtable.
  std::vector<rocksdb::LiveFileMetaData> tables;
  db->GetLiveFilesMetaData(&tables);
  EXPECT_FALSE(tables.empty());
  ExpectMatches(db.get(), model, 6000);
}

TEST(MemTableSkipListTest, RocksDbRefusesConcurrentInsertsWithIt) {
  TempDir dir;
  rocksdb::Options options;
  options.create_if_missing = true;
  options.allow_concurrent_memtable_write = true;
  options.memtable_factory = NewMemTableSkipListFactory();
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(options, dir.path(), &raw);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  delete raw;
}

}  // namespace
}  // namespace feedd
