#include "storage/memtable_skip_list.h"

#include <rocksdb/slice.h>
#include <rocksdb/version.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <new>
#include <vector>

namespace feedd {
namespace {

constexpr int kMaxHeight = 12;
constexpr uint64_t kBranching = 4;  // a node reaches level i+1 with p = 1/4

// A node, followed in the same allocation by its `height` links and then by
// its entry. The entry's address is the KeyHandle RocksDB encodes into.
struct Node {
  const char* entry;
  int height;

  std::atomic<Node*>* Links() { return reinterpret_cast<std::atomic<Node*>*>(this + 1); }
  // Acquire: a reader that sees a node sees the entry written before it was
  // linked.
  Node* Next(int level) { return Links()[level].load(std::memory_order_acquire); }
  void SetNext(int level, Node* node) { Links()[level].store(node, std::memory_order_release); }
  Node* NextRelaxed(int level) { return Links()[level].load(std::memory_order_relaxed); }
  void SetNextRelaxed(int level, Node* node) {
    Links()[level].store(node, std::memory_order_relaxed);
  }
};
static_assert(sizeof(Node) % alignof(std::atomic<Node*>) == 0);

// The internal key of a memtable entry (a varint32 length, then the key),
// decoded as RocksDB's KeyComparator::decode_key() does.
rocksdb::Slice InternalKey(const char* entry) { return rocksdb::GetLengthPrefixedSlice(entry); }

// rocksdb::LookupKey, the key of a memtable Get(), is declared in a header
// RocksDB does not install (db/lookup_key.h). It starts with three pointers:
// the memtable key (varint32 length, internal key), the internal key, and
// their end. MemTableRep's own Get() cannot stand in: in 7.8 it never
// deletes the iterator it makes.
static_assert(ROCKSDB_MAJOR == 7 && ROCKSDB_MINOR == 8,
              "check rocksdb::LookupKey's layout (db/lookup_key.h) against LookupKeyView");
struct LookupKeyView {
  const char* memtable_key;
  const char* internal_key;
  const char* end;
};

rocksdb::Slice InternalKey(const rocksdb::LookupKey& key) {
  LookupKeyView view;
  std::memcpy(&view, &key, sizeof view);
  return {view.internal_key, static_cast<size_t>(view.end - view.internal_key)};
}

// Storage for iterators RocksDB creates "in an arena" and destroys by
// calling the destructor alone. The destroyed iterator's block goes back to
// the destroying thread's free list, so a block is reused only once its
// destructor has returned; each list keeps at most kKept blocks. An
// iterator destroyed on a thread whose list is gone already (thread-local
// destructors have run) leaves its block to the process's exit.
class IteratorBlocks {
 public:
  static constexpr size_t kKept = 32;

  ~IteratorBlocks() {
    for (void* block : free_) ::operator delete(block);
    gone_ = true;
  }

  static void* Take(size_t size) {
    if (gone_ || list().free_.empty()) return ::operator new(size);
    std::vector<void*>& free = list().free_;
    void* block = free.back();
    free.pop_back();
    return block;
  }
  // Called from the destructor of the object in `block`: older blocks on
  // this list are no longer in any destructor, the new one may still be.
  static void Give(void* block) {
    if (gone_) return;
    std::vector<void*>& free = list().free_;
    if (free.size() == kKept) {
      ::operator delete(free.front());
      free.erase(free.begin());
    }
    free.push_back(block);
  }

 private:
  static IteratorBlocks& list() {
    thread_local IteratorBlocks blocks;
    return blocks;
  }
  static thread_local bool gone_;

  std::vector<void*> free_;
};
thread_local bool IteratorBlocks::gone_ = false;

class SkipList final : public rocksdb::MemTableRep {
 public:
  SkipList(const KeyComparator& compare, rocksdb::Allocator* allocator)
      : MemTableRep(allocator), compare_(compare) {
    head_ = NewNode(kMaxHeight, 0);
    for (int i = 0; i < kMaxHeight; ++i) finger_[i] = head_;
  }

  rocksdb::KeyHandle Allocate(const size_t len, char** buf) override {
    Node* node = NewNode(RandomHeight(), len);
    *buf = const_cast<char*>(node->entry);
    return node;
  }

  void Insert(rocksdb::KeyHandle handle) override { InsertKey(handle); }
  // With memtable_insert_with_hint_prefix_extractor set: the finger is the
  // hint, and a duplicate is refused as InsertKey() refuses it.
  void InsertWithHint(rocksdb::KeyHandle handle, void** /*hint*/) override { InsertKey(handle); }
  bool InsertKeyWithHint(rocksdb::KeyHandle handle, void** /*hint*/) override {
    return InsertKey(handle);
  }

  bool InsertKey(rocksdb::KeyHandle handle) override {
    auto* node = static_cast<Node*>(handle);
    const rocksdb::Slice key = InternalKey(node->entry);
    const int height = node->height;
    int max_height = max_height_.load(std::memory_order_relaxed);

    Node* prev[kMaxHeight];
    FindSplice(key, max_height, prev);
    Node* next = prev[0]->NextRelaxed(0);
    if (next != nullptr && compare_(next->entry, key) == 0) return false;

    if (height > max_height) {
      for (int i = max_height; i < height; ++i) prev[i] = head_;
      // Relaxed, as a reader that sees the new height before the links
      // finds head_'s null links there and goes down a level.
      max_height_.store(height, std::memory_order_relaxed);
      max_height = height;
    }
    for (int i = 0; i < height; ++i) {
      node->SetNextRelaxed(i, prev[i]->NextRelaxed(i));
      prev[i]->SetNext(i, node);
    }
    for (int i = 0; i < height; ++i) finger_[i] = node;
    for (int i = height; i < max_height; ++i) finger_[i] = prev[i];
    return true;
  }

  bool Contains(const char* entry) const override {
    const rocksdb::Slice key = InternalKey(entry);
    Node* node = FindGreaterOrEqual(key);
    return node != nullptr && compare_(node->entry, key) == 0;
  }

  void Get(const rocksdb::LookupKey& lookup, void* arg,
           bool (*callback)(void* arg, const char* entry)) override {
    for (Node* node = FindGreaterOrEqual(InternalKey(lookup));
         node != nullptr && callback(arg, node->entry); node = node->Next(0)) {
    }
  }

  size_t ApproximateMemoryUsage() override { return 0; }  // all in the arena

  class Iterator;
  MemTableRep::Iterator* GetIterator(rocksdb::Arena* arena) override;

  // Readers' searches; they run concurrently with InsertKey().
  Node* FindGreaterOrEqual(const rocksdb::Slice& key) const {
    Node* x = head_;
    Node* last_bigger = nullptr;  // compared at the level above already
    for (int level = max_height_.load(std::memory_order_relaxed) - 1;;) {
      Node* next = x->Next(level);
      if (next != nullptr) __builtin_prefetch(next->Links() + level);
      int cmp = (next == nullptr || next == last_bigger) ? 1 : compare_(next->entry, key);
      if (cmp < 0) {
        x = next;
      } else if (cmp == 0 || level == 0) {
        return next;
      } else {
        last_bigger = next;
        --level;
      }
    }
  }
  // The last node before `key`, or head_.
  Node* FindLessThan(const rocksdb::Slice& key) const {
    Node* x = head_;
    Node* last_bigger = nullptr;
    for (int level = max_height_.load(std::memory_order_relaxed) - 1;;) {
      Node* next = x->Next(level);
      if (next != nullptr && next != last_bigger && compare_(next->entry, key) < 0) {
        x = next;
      } else if (level == 0) {
        return x;
      } else {
        last_bigger = next;
        --level;
      }
    }
  }
  Node* FindLast() const {
    Node* x = head_;
    for (int level = max_height_.load(std::memory_order_relaxed) - 1;;) {
      Node* next = x->Next(level);
      if (next != nullptr) {
        x = next;
      } else if (level == 0) {
        return x;
      } else {
        --level;
      }
    }
  }
  Node* head() const { return head_; }
  const KeyComparator& compare() const { return compare_; }

 private:
  Node* NewNode(int height, size_t entry_bytes) {
    size_t bytes = sizeof(Node) + height * sizeof(std::atomic<Node*>) + entry_bytes;
    // The arena's Allocate() is unaligned; links need pointer alignment.
    constexpr size_t kAlign = alignof(Node);
    char* raw = nullptr;
    MemTableRep::Allocate(bytes + kAlign - 1, &raw);
    auto address = reinterpret_cast<uintptr_t>(raw);
    auto* node = new (reinterpret_cast<char*>((address + kAlign - 1) & ~(kAlign - 1))) Node;
    node->height = height;
    for (int i = 0; i < height; ++i) new (node->Links() + i) std::atomic<Node*>(nullptr);
    node->entry = reinterpret_cast<const char*>(node->Links() + height);
    return node;
  }

  int RandomHeight() {
    int height = 1;
    while (height < kMaxHeight && NextRandom() % kBranching == 0) ++height;
    return height;
  }
  uint64_t NextRandom() {  // xorshift64, the writer's alone
    random_ ^= random_ << 13;
    random_ ^= random_ >> 7;
    random_ ^= random_ << 17;
    return random_;
  }

  bool IsBefore(Node* node, const rocksdb::Slice& key) const {
    return node == head_ || compare_(node->entry, key) < 0;
  }

  // prev[i] for i < max_height: the last node of level i before `key`.
  //
  // The finger is the previous insert's splice: finger_[i] is the last node
  // of level i at or before that insert's key. When `key` comes after it,
  // the levels whose next node is still past `key` keep the finger's node,
  // and the search starts at the lowest of them rather than at the top: an
  // insert just after the previous one (ascending keys) compares a few keys.
  void FindSplice(const rocksdb::Slice& key, int max_height, Node** prev) const {
    Node* x = head_;
    int level = max_height;  // the levels at and above it are set
    if (IsBefore(finger_[0], key)) {
      level = 0;
      while (level < max_height) {
        Node* next = finger_[level]->NextRelaxed(level);
        if (next == nullptr || compare_(next->entry, key) >= 0) break;
        ++level;
      }
      for (int i = level; i < max_height; ++i) prev[i] = finger_[i];
      if (level > 0) x = finger_[level - 1];  // before `key`, as finger_[0] is
    }
    while (level-- > 0) {
      for (Node* next = x->NextRelaxed(level); next != nullptr && compare_(next->entry, key) < 0;
           next = x->NextRelaxed(level)) {
        x = next;
      }
      prev[level] = x;
    }
  }

  const KeyComparator& compare_;
  Node* head_ = nullptr;
  std::atomic<int> max_height_{1};
  uint64_t random_ = 0x9e3779b97f4a7c15ull;
  Node* finger_[kMaxHeight];  // the writer's; see FindSplice()
};

class SkipList::Iterator final : public MemTableRep::Iterator {
 public:
  Iterator(const SkipList* list, bool in_block) : list_(list), in_block_(in_block) {}
  ~Iterator() override {
    if (in_block_) IteratorBlocks::Give(this);
  }

  bool Valid() const override { return node_ != nullptr; }
  const char* key() const override { return node_->entry; }
  void Next() override { node_ = node_->Next(0); }
  void Prev() override {
    node_ = list_->FindLessThan(InternalKey(node_->entry));
    if (node_ == list_->head()) node_ = nullptr;
  }
  void Seek(const rocksdb::Slice& internal_key, const char* /*memtable_key*/) override {
    node_ = list_->FindGreaterOrEqual(internal_key);
  }
  void SeekForPrev(const rocksdb::Slice& internal_key, const char* /*memtable_key*/) override {
    node_ = list_->FindLessThan(internal_key);
    Node* next = node_->Next(0);
    if (next != nullptr && list_->compare()(next->entry, internal_key) == 0) node_ = next;
    if (node_ == list_->head()) node_ = nullptr;
  }
  void SeekToFirst() override { node_ = list_->head()->Next(0); }
  void SeekToLast() override {
    node_ = list_->FindLast();
    if (node_ == list_->head()) node_ = nullptr;
  }

 private:
  const SkipList* list_;
  Node* node_ = nullptr;
  bool in_block_;
};

rocksdb::MemTableRep::Iterator* SkipList::GetIterator(rocksdb::Arena* arena) {
  if (arena == nullptr) return new Iterator(this, false);
  // RocksDB will call ~Iterator() and not delete: see IteratorBlocks.
  return new (IteratorBlocks::Take(sizeof(Iterator))) Iterator(this, true);
}

class SkipListFactory final : public rocksdb::MemTableRepFactory {
 public:
  using MemTableRepFactory::CreateMemTableRep;
  rocksdb::MemTableRep* CreateMemTableRep(const rocksdb::MemTableRep::KeyComparator& compare,
                                          rocksdb::Allocator* allocator,
                                          const rocksdb::SliceTransform* /*prefix*/,
                                          rocksdb::Logger* /*logger*/) override {
    return new SkipList(compare, allocator);
  }
  const char* Name() const override { return "FeeddMemTableSkipList"; }
  bool IsInsertConcurrentlySupported() const override { return false; }
  bool CanHandleDuplicatedKey() const override { return true; }
};

}  // namespace

std::shared_ptr<rocksdb::MemTableRepFactory> NewMemTableSkipListFactory() {
  return std::make_shared<SkipListFactory>();
}

}  // namespace feedd
