// ChangeRecord: one entry of the change feed, as read back from storage.
// The on-disk layout is in storage/key_format.h (docs/storage-format.md);
// the envelope JSON is the public one (docs/api.md, "The change envelope").
//
// Thread-safety: plain value.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "storage/write_request.h"

namespace feedd {

enum class ChangeOp : uint8_t { kCreate = 1, kReplace = 2, kDelete = 3 };

std::string_view ChangeOpName(ChangeOp op);  // "create", "replace", "delete"

struct ChangeRecord {
  Lsn lsn = 0;
  uint64_t ts_ms = 0;
  ChangeOp op = ChangeOp::kCreate;
  std::string container;
  std::string partition_key;
  std::string id;
  // {"lsn":..,"op":..,...,"before":..,"after":..} (after always last), as the commit path
  // writes it: compact, the images as stored (canonical boost::json text),
  // a missing image `null` (processors/concern_filter.h relies on it).
  std::string envelope_json;
  // In memory only, for the records the commit path hands its listeners:
  // the item's generation (DocumentStore::ItemGeneration) right after this
  // change. While the item's generation is still this value, the
  // after-image is its current version. 0 when unknown (read from the feed).
  uint64_t item_generation = 0;
  // In memory only, likewise: where the after-image starts in
  // envelope_json (right after `,"after":`), so that a reader goes straight
  // to it (KnownAfterImage()). 0 when unknown.
  size_t after_offset = 0;

  // The after-image's text ("null" for none) when after_offset is known and
  // still points just past `,"after":` in an envelope that ends there;
  // nullopt otherwise (the reader then scans the envelope for it).
  std::optional<std::string_view> KnownAfterImage() const;
};

// The change records of one committed group, in LSN order and without gaps
// (shared, read-only, by every listener).
using CommittedChanges = std::shared_ptr<const std::vector<ChangeRecord>>;
// One record as an in-process reader is handed it: shared with the
// committed group (or the feed page) it came in, which it keeps alive.
using SharedChangeRecord = std::shared_ptr<const ChangeRecord>;
// Told of every group the commit thread made durable; runs on the commit
// thread, so it must only hand the records on.
using CommitListener = std::function<void(const CommittedChanges&)>;

struct FeedReadSpec {
  Lsn from = 1;                          // first LSN wanted (inclusive)
  size_t limit = 100;                    // at most this many records
  std::optional<std::string> container;  // only this container's changes
  size_t max_scanned = 10000;            // stop after visiting this many records
  // Stop before the page's envelopes exceed this many bytes; a page always
  // holds at least one record, so a reader never gets stuck. 0: no limit.
  uint64_t max_bytes = 0;
};

struct FeedPage {
  std::vector<ChangeRecord> records;
  Lsn next = 1;               // where the next read should start
  bool cut_by_bytes = false;  // the page ended at spec.max_bytes
};

}  // namespace feedd
