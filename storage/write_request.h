// WriteRequest / WriteResult: what the commit pipeline accepts and answers.
//
// A WriteRequest holds one or more operations on ONE logical partition of ONE
// container. It is applied all-or-nothing: every op succeeds and every
// mutation gets its own change-feed record (consecutive LSNs) in the same
// RocksDB WriteBatch, or nothing at all is written. A single-item request
// (POST/PUT/PATCH/DELETE) is a request with one op.
//
// Thread-safety: plain values, moved into DocumentStore::Submit().
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "storage/derived_items.h"
#include "storage/patch.h"
#include "storage/prepared_item.h"
#include "util/status.h"

namespace feedd {

using Lsn = uint64_t;  // change-feed sequence number; 0 means "none"

inline constexpr size_t kMaxBatchOperations = 100;

enum class WriteOpKind {
  kCreate,   // fails with conflict (409) when the item exists
  kUpsert,   // create or replace
  kReplace,  // fails with not_found (404) when the item is missing
  kDelete,   // fails with not_found (404) when the item is missing
  kPatch,    // fails with not_found (404) when the item is missing
  kRead,     // reads inside the batch; fails with not_found when missing
};

struct WriteOp {
  WriteOpKind kind = WriteOpKind::kUpsert;
  std::string id;
  std::optional<PreparedItem> item;  // kCreate, kUpsert, kReplace
  std::vector<PatchOp> patch;        // kPatch
  // When set, the op applies only if the stored item's _etag equals it
  // ("*" matches any existing version); otherwise, or when the item is
  // missing, precondition_failed (412).
  std::optional<std::string> if_match;
  // For kReplace, kDelete and kPatch: a missing item is not an error, the op
  // does nothing (http_status 404 in its result). Used by processors, whose
  // views converge whatever order changes arrive in.
  bool if_exists = false;
  // For kUpsert by a processor running outside the daemon (feedd worker):
  // the op applies only when the stored item has no _sourceLsn or a lower
  // one; otherwise it does nothing (http_status 412 in its result, no change
  // record), so a late write of an older source version never overwrites a
  // newer one. The item's body carries _sourceLsn equal to it. (A batch op's
  // "sourceLsn" on a delete or patch only makes it a processor's: origin.)
  std::optional<Lsn> source_lsn;
  // Who asks: a client may not write derived items (storage/derived_items.h).
  WriteOrigin origin = WriteOrigin::kClient;
  // For kCreate: an existing item is left as it is; the op does nothing
  // (http_status 409 in its result, no change record). A bulk import's
  // ifExists=skip.
  bool skip_if_exists = false;
  // The op is part of a bulk import: its change record says so
  // ("import": true in the envelope, docs/api.md "The change envelope").
  bool imported = false;
};

struct WriteRequest {
  std::string container;
  std::string partition_key;
  std::vector<WriteOp> ops;  // 1..kMaxBatchOperations
};

struct OpResult {
  int http_status = 0;    // 201 created, 200 replaced/patched/read, 204 deleted
  std::string item_json;  // the item as stored (empty for a delete)
  Lsn lsn = 0;            // the op's change record (0 for a read)
  Lsn item_lsn = 0;       // the item's _lsn; EtagOf(item_lsn) is its _etag (0: deleted)
};

struct WriteResult {
  Status status;                  // OK, or the failing op's error
  int failed_index = -1;          // index of the failing op when !status.ok()
  std::vector<OpResult> results;  // one per op when status.ok()
  Lsn last_lsn = 0;               // last change record written (0: none)
};

// A processor's effects: requests on any containers and partitions, applied
// all-or-nothing in one WriteBatch together with the processor's retention
// watermark (DocumentStore::RegisterConsumer), so "applied up to" and the
// view can never disagree after a crash. Answered once written, before its
// WAL is synced: it is derived from durable changes, and a crash that takes
// it takes its watermark too.
struct ViewWrite {
  std::vector<WriteRequest> requests;  // may be empty: only the watermark moves
  std::string consumer;                // a registered consumer name
  Lsn consumer_acked = 0;              // its new acknowledged LSN
};

// Invoked exactly once, on the commit thread: keep it short (post the result
// to another executor).
using WriteCallback = std::function<void(WriteResult)>;

// One batch of a bulk import (DocumentStore::SubmitImport): many requests,
// each applied on its own (one that fails undoes nothing of the others), all
// of them in one WriteBatch of their own, so every item is written whole with
// its index entries and change record, or not at all.
struct ImportBatch {
  std::vector<WriteRequest> requests;
  // false: the batch is written without an fsync; its change records reach
  // the feed's head, the commit listeners and Kafka only once a later write
  // has synced the WAL (the next synced write, or the commit thread once it
  // has been idle StoreOptions::idle_sync_delay), so no reader ever sees a
  // change a crash could take back.
  // Ignored when the store does not sync (StoreOptions::sync false).
  bool sync = true;
};

struct ImportResult {
  // OK, or why nothing of the batch was written (RocksDB refused it, the
  // store is down or shutting down).
  Status status;
  std::vector<WriteResult> results;  // one per request when status.ok()
};

// Invoked exactly once, on the commit thread (or the caller's, when refused).
using ImportCallback = std::function<void(ImportResult)>;

}  // namespace feedd
