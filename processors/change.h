// Change: one change-feed record as a processor sees it, parsed from the
// contract's envelope (or, for shrunk Kafka envelopes, from its headers).
//
// Thread-safety: plain value; the images are immutable and shared by the
// copies of a change (a batch, an applier's queue, a parked list).
#pragma once

#include <boost/json/object.hpp>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "storage/change_record.h"
#include "util/status.h"

namespace feedd {

struct Change {
  Lsn lsn = 0;
  ChangeOp op = ChangeOp::kCreate;
  std::string container;
  std::string partition_key;
  std::string id;
  uint64_t ts_ms = 0;
  // Absent (null) when the envelope's image is null or omitted.
  std::shared_ptr<const boost::json::object> before;
  std::shared_ptr<const boost::json::object> after;
  // ChangeRecord::item_generation: the item's generation right after this
  // change, when it came from the commit path (0: unknown).
  uint64_t item_generation = 0;
};

// Parses a native envelope ({"lsn","op","container","partitionKey","id","ts",
// "before","after"}).
Result<Change> ParseChange(std::string_view envelope_json);

// The change as a feed record, its envelope written back (ParseChange()
// reads it again).
ChangeRecord ToChangeRecord(const Change& change);

}  // namespace feedd
