// ImportStream: the body of POST /v1/containers/{c}/import (docs/api.md,
// "Bulk import"), an NDJSON document of items read as it arrives.
//
// Operation
//   Each line is parsed and validated on the I/O thread exactly like the body
//   of a create (ParseJsonBody, PrepareItem); a bad line is reported with its
//   number, error code and message and written not at all. Good lines are
//   gathered into batches of ImportLimits::batch_bytes and handed to the
//   commit thread as ImportBatches (storage/write_request.h): every item
//   takes an LSN and a change record marked as an import, with its index
//   entries, in one WriteBatch. While one batch is being committed the next
//   is parsed; a second full batch waits for the first, and the body is read
//   no further meanwhile (TCP back-pressure), so an import holds at most two
//   batches and one line. A batch is synced when ImportLimits::sync_bytes
//   were written since the last sync, and the last one always is: the answer
//   comes once everything is durable.
//
//   ifExists decides for an item whose id is already there: skip (default:
//   left as it is, counted as skipped, so a re-run after a crash completes
//   without duplicates), replace (an upsert), or fail (a per-line conflict).
//   onError=continue (default) goes on after a bad line; onError=stop stops
//   reading at the first failed line.
//
// The same import is driven by the request's body (ImportStream: the
// answer is the report) or by an import job reading the body it spooled
// (daemon/import_job.h: the job's result is the report): both feed an
// ImportRun.
//
// Concurrency
//   Consume() and Finish() come one at a time (the connection's strand, or
//   the job's thread); batch results come back on the commit thread and are
//   handed to the io_context. One mutex guards the state.
//
// Ownership
//   Borrows the store and the io_context, which outlive the HTTP server.
//   Keeps itself alive (shared_from_this) while a batch is being committed.
#pragma once

#include <boost/json/object.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/http_handler.h"
#include "daemon/import_params.h"
#include "daemon/ndjson_lines.h"
#include "storage/document_store.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace feedd {

// The daemon's import.* options.
struct ImportLimits {
  size_t batch_bytes = 4u << 20;     // import.batch_mb
  size_t sync_bytes = 64u << 20;     // import.sync_mb
  size_t max_item_bytes = 2u << 20;  // storage.max_item_bytes
  // A longer line is a per-line payload_too_large: the item cannot fit.
  size_t max_line_bytes() const { return 2 * max_item_bytes + 1024; }
  // The report lists at most this many failed lines (all are counted).
  size_t max_reported_errors = 1000;
};

// What one finished import did, for metrics.
struct ImportTotals {
  uint64_t created = 0;
  uint64_t replaced = 0;
  uint64_t skipped = 0;
  uint64_t failed = 0;
  uint64_t bytes = 0;
};

// What an import answers: the report (docs/api.md, "Bulk import"), the
// error that cut it (storage, or the input: a body cut short, a cancelled
// job), and the HTTP status that follows (200, or the error's).
struct ImportReport {
  int http_status = 200;
  Status error;
  boost::json::object body;
};

// One import, fed piece by piece.
class ImportRun {
 public:
  virtual ~ImportRun() = default;
  // `on_done` runs once, when the report is given (or the run is destroyed
  // without one), with what was written.
  static std::shared_ptr<ImportRun> Start(DocumentStore* store, const ContainerSpec& spec,
                                          ImportParams params, ImportLimits limits,
                                          boost::asio::io_context& io,
                                          std::function<void(const ImportTotals&)> on_done);

  // The next piece of the input, valid during the call only: as
  // BodyStream::Consume (call `next` once; false: read no further).
  virtual void Consume(std::string_view piece, std::function<void(bool more)> next) = 0;
  // The input ended (`error` OK), or was cut (`error` says why; the lines
  // gathered so far are still committed). `done` gets the report once the
  // last batch is durable, on an I/O thread or the caller's.
  virtual void Finish(Status error, std::function<void(ImportReport)> done) = 0;
};

class ImportStream : public BodyStream {
 public:
  // `on_done` runs once, when the answer is sent (or the stream is destroyed
  // without one), with what was written.
  static std::unique_ptr<BodyStream> Create(DocumentStore* store, const ContainerSpec& spec,
                                            ImportParams params, ImportLimits limits,
                                            boost::asio::io_context& io,
                                            std::function<void(const ImportTotals&)> on_done);

  // A stream that reads nothing and answers `status` (a refused import).
  static std::unique_ptr<BodyStream> Refuse(Status status);
};

}  // namespace feedd
