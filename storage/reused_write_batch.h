// ReusedWriteBatch: a rocksdb::WriteBatch handed out empty again and again,
// its buffer kept. A big batch built new each time takes its memory fresh
// from the kernel, one page fault per 4 KiB (measured: a third of the commit
// thread's time in an import went to faults on new batches).
//
// Thread-safety: none; one owner thread.
// Ownership: owns the batch; a pointer from Take() is valid until the next
// Take() or the end of the ReusedWriteBatch.
#pragma once

#include <rocksdb/write_batch.h>

#include <algorithm>
#include <cstddef>

namespace feedd {

class ReusedWriteBatch {
 public:
  // The batch, empty, with room for at least `reserve_bytes`: a new buffer
  // the first time, or when more is asked for than the buffer ever held
  // (then a quarter more, so that sizes that vary a little reuse it).
  rocksdb::WriteBatch* Take(size_t reserve_bytes) {
    reserved_ = std::max(reserved_, batch_.GetDataSize());  // it grew to hold it
    if (reserve_bytes > reserved_) {
      reserved_ = reserve_bytes + reserve_bytes / 4;
      batch_ = rocksdb::WriteBatch(reserved_);
    } else {
      batch_.Clear();
    }
    return &batch_;
  }

 private:
  rocksdb::WriteBatch batch_;
  size_t reserved_ = 0;
};

}  // namespace feedd
