// MemTableSkipList: the ordered index of RocksDB's memtables in feedd's
// column families, a skip list with one writer at a time and lock-free
// readers.
//
// Why not RocksDB's own (SkipListFactory): Debian's librocksdb is built
// without NDEBUG, and its InlineSkipList checks every step of every search
// with two more key comparisons, and every insert with a walk of its whole
// splice (RocksDB 7.8.3, memtable/inlineskiplist.h). Every item read that
// reaches a memtable and every key written pays about three comparisons
// where one is needed: a callgrind count of an import put 15 % of all the
// daemon's instructions in InlineSkipList::Insert and 12 % in the key
// comparator, 23 comparisons per sorted insert (docs/benchmarks.md). This
// list is the same structure without the checks, plus a finger for the
// writer: an insert just after the previous one (an import's batch is
// sorted by key) starts from where that one went in, not from the top.
//
// Contract (RocksDB's MemTableRep):
//  - Entries are the memtable's encoded keys (varint32 length, internal
//    key, value), ordered by the KeyComparator RocksDB gives. Each entry
//    lives in memory from the memtable's arena, as RocksDB's list does.
//  - One insert at a time: the factory does not support concurrent
//    inserts, so RocksDB refuses to open unless
//    DBOptions::allow_concurrent_memtable_write is false, and then only the
//    write group's leader inserts.
//  - Readers (Get, Contains, iterators) run concurrently with the writer
//    and with each other, without locks: a new entry is linked bottom-up
//    with release stores, and a reader that sees it sees its key.
//  - ApproximateNumEntries() is 0 (an estimate RocksDB uses only for
//    GetApproximateSizes with memtables, which feedd does not call).
//
// Thread-safety: as above. The factory is immutable and shareable.
// Internal to storage/.
#pragma once

#include <rocksdb/memtablerep.h>

#include <memory>

namespace feedd {

// The factory to set as ColumnFamilyOptions::memtable_factory.
std::shared_ptr<rocksdb::MemTableRepFactory> NewMemTableSkipListFactory();

}  // namespace feedd
