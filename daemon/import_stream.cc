#include "daemon/import_stream.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <utility>

#include "daemon/http_util.h"
#include "storage/prepared_item.h"
#include "util/logging.h"

namespace feedd {
namespace {

// Bytes an item counts for in a batch besides its body: its key, index
// entries and change record header, so that tiny items make batches of a
// bounded count too.
constexpr size_t kItemOverheadBytes = 128;
constexpr auto kProgressLogInterval = std::chrono::seconds(10);

struct LineError {
  uint64_t line = 0;
  Status status;
};

class Importer : public ImportRun, public std::enable_shared_from_this<Importer> {
 public:
  Importer(DocumentStore* store, const ContainerSpec& spec, ImportParams params,
           ImportLimits limits, boost::asio::io_context& io,
           std::function<void(const ImportTotals&)> on_done)
      : store_(store),
        spec_(spec),
        params_(params),
        limits_(limits),
        io_(io),
        on_done_(std::move(on_done)),
        lines_(limits.max_line_bytes()),
        started_(std::chrono::steady_clock::now()),
        last_log_(started_) {}

  ~Importer() override {
    if (on_done_) on_done_(totals_);
  }

  void Consume(std::string_view piece, std::function<void(bool)> next) override {
    std::unique_lock<std::mutex> lock(mu_);
    totals_.bytes += piece.size();
    if (!stopped_) lines_.Append(piece);
    next_ = std::move(next);
    Pump(lock);
  }

  void Finish(Status error, std::function<void(ImportReport)> done) override {
    std::unique_lock<std::mutex> lock(mu_);
    done_ = std::move(done);
    finishing_ = true;
    if (!error.ok()) {
      read_error_ = std::move(error);
    } else if (!stopped_) {
      if (std::optional<NdjsonLines::Line> last = lines_.Finish()) HandleLine(*last);
    }
    MaybeAnswer(lock);
  }

 private:
  bool BatchFull() const { return building_bytes_ >= limits_.batch_bytes; }

  // Reads the lines of the pieces taken so far; gives the piece's
  // continuation back once every line is taken (or reading stops).
  void Pump(std::unique_lock<std::mutex>& lock) {
    while (!stopped_) {
      if (BatchFull()) {
        if (in_flight_) return;  // OnBatchDone() pumps on
        Submit(/*last=*/false);
      }
      std::optional<NdjsonLines::Line> line = lines_.Next();
      if (!line) break;
      HandleLine(*line);
    }
    if (!next_) return;
    std::function<void(bool)> next = std::move(next_);
    next_ = nullptr;
    const bool more = !stopped_;
    lock.unlock();
    next(more);
    lock.lock();
  }

  void HandleLine(const NdjsonLines::Line& line) {
    if (line.too_long) {
      return FailLine(line.number,
                      Status(ErrorCode::kPayloadTooLarge,
                             "the line is longer than " + std::to_string(limits_.max_line_bytes()) +
                                 " bytes (twice storage.max_item_bytes)"));
    }
    Result<boost::json::value> value = ParseJsonBody(line.text);
    if (!value.ok()) return FailLine(line.number, value.status());
    if (!value->is_object()) {
      return FailLine(line.number,
                      Status(ErrorCode::kInvalidItem, "a line must hold an item (a JSON object)"));
    }
    Result<PreparedItem> item = PrepareItem(spec_, std::move(value->as_object()), std::nullopt,
                                            std::nullopt, limits_.max_item_bytes);
    if (!item.ok()) return FailLine(line.number, item.status());

    WriteOp op;
    op.kind =
        params_.if_exists == ImportIfExists::kReplace ? WriteOpKind::kUpsert : WriteOpKind::kCreate;
    op.skip_if_exists = params_.if_exists == ImportIfExists::kSkip;
    op.imported = true;
    op.id = item->id;
    WriteRequest request;
    request.container = spec_.name;
    request.partition_key = item->partition_key;
    building_bytes_ += item->body_json.size() + kItemOverheadBytes;
    op.item = std::move(*item);
    request.ops.push_back(std::move(op));
    building_.requests.push_back(std::move(request));
    building_lines_.push_back(line.number);
  }

  void FailLine(uint64_t line, Status status) {
    ++totals_.failed;
    if (errors_.size() < limits_.max_reported_errors) {
      errors_.push_back(LineError{line, std::move(status)});
    } else {
      ++errors_omitted_;
    }
    if (params_.stop_on_error && !stopped_) {
      stopped_ = true;
      stopped_at_line_ = line;
    }
  }

  void Submit(bool last) {
    ImportBatch batch = std::move(building_);
    building_ = ImportBatch();
    std::vector<uint64_t> lines = std::move(building_lines_);
    building_lines_.clear();
    unsynced_bytes_ += building_bytes_;
    building_bytes_ = 0;
    batch.sync = last || unsynced_bytes_ >= limits_.sync_bytes;
    if (batch.sync) unsynced_bytes_ = 0;
    in_flight_ = true;
    ++batches_;
    store_->SubmitImport(std::move(batch), [self = shared_from_this(),
                                            lines = std::move(lines)](ImportResult result) mutable {
      // On the commit thread: take the results elsewhere.
      boost::asio::post(self->io_,
                        [self, lines = std::move(lines), result = std::move(result)]() mutable {
                          self->OnBatchDone(lines, std::move(result));
                        });
    });
  }

  void OnBatchDone(const std::vector<uint64_t>& lines, ImportResult result) {
    std::unique_lock<std::mutex> lock(mu_);
    in_flight_ = false;
    if (!result.status.ok()) {
      totals_.failed += lines.size();
      not_written_ += lines.size();
      storage_error_ = std::move(result.status);
      stopped_ = true;
    } else {
      for (size_t i = 0; i < result.results.size() && i < lines.size(); ++i) {
        const WriteResult& item = result.results[i];
        if (!item.status.ok()) {
          FailLine(lines[i], item.status);
          continue;
        }
        const int status = item.results.empty() ? 0 : item.results.front().http_status;
        if (status == 409) {
          ++totals_.skipped;
          continue;
        }
        if (status == 201) {
          ++totals_.created;
        } else {
          ++totals_.replaced;
        }
        if (first_lsn_ == 0) first_lsn_ = item.last_lsn;
        last_lsn_ = item.last_lsn;
      }
    }
    auto now = std::chrono::steady_clock::now();
    if (now - last_log_ >= kProgressLogInterval) {
      last_log_ = now;
      FEEDD_LOG(kInfo, "import") << "importing into " << spec_.name << ": " << lines_.lines()
                                 << " lines, " << totals_.created << " created, " << totals_.skipped
                                 << " skipped, " << totals_.failed << " failed so far";
    }
    if (next_) Pump(lock);
    MaybeAnswer(lock);
  }

  void MaybeAnswer(std::unique_lock<std::mutex>& lock) {
    if (!finishing_ || in_flight_ || !done_) return;
    if (!last_submitted_ && storage_error_.ok() &&
        (!building_.requests.empty() || unsynced_bytes_ > 0)) {
      last_submitted_ = true;
      return Submit(/*last=*/true);  // answered once it is durable
    }
    ImportReport report = Report();
    std::function<void(ImportReport)> done = std::move(done_);
    done_ = nullptr;
    ImportTotals totals = totals_;
    std::function<void(const ImportTotals&)> on_done = std::move(on_done_);
    on_done_ = nullptr;
    lock.unlock();
    done(std::move(report));
    if (on_done) on_done(totals);
  }

  ImportReport Report() {
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    const bool complete = storage_error_.ok() && read_error_.ok() && !stopped_;
    boost::json::object report;
    report["container"] = spec_.name;
    report["complete"] = complete;
    report["lines"] = lines_.lines();
    report["bytes"] = totals_.bytes;
    report["created"] = totals_.created;
    report["replaced"] = totals_.replaced;
    report["skipped"] = totals_.skipped;
    report["failed"] = totals_.failed;
    report["batches"] = batches_;
    report["firstLsn"] = first_lsn_;
    report["lastLsn"] = last_lsn_;
    report["seconds"] = seconds;
    const uint64_t items = totals_.created + totals_.replaced + totals_.skipped;
    report["itemsPerSecond"] = seconds > 0 ? static_cast<double>(items) / seconds : 0.0;
    if (stopped_at_line_) report["stoppedAtLine"] = *stopped_at_line_;
    boost::json::array errors;
    for (const LineError& e : errors_) {
      errors.push_back(boost::json::object{{"line", e.line},
                                           {"code", ErrorCodeName(e.status.code())},
                                           {"message", e.status.message()}});
    }
    report["errors"] = std::move(errors);
    report["errorsOmitted"] = errors_omitted_;
    ImportReport out;
    const Status& error = !storage_error_.ok() ? storage_error_ : read_error_;
    if (!error.ok()) {
      out.http_status = ErrorCodeHttpStatus(error.code());
      out.error = error;
      report["error"] =
          boost::json::object{{"code", ErrorCodeName(error.code())}, {"message", error.message()}};
      report["notWritten"] = not_written_;
    }
    FEEDD_LOG(kInfo, "import") << "import into " << spec_.name << ": " << lines_.lines()
                               << " lines, " << totals_.created << " created, " << totals_.replaced
                               << " replaced, " << totals_.skipped << " skipped, " << totals_.failed
                               << " failed in " << seconds << " s"
                               << (complete ? "" : " (incomplete)");
    out.body = std::move(report);
    return out;
  }

  DocumentStore* const store_;
  const ContainerSpec spec_;
  const ImportParams params_;
  const ImportLimits limits_;
  boost::asio::io_context& io_;

  std::mutex mu_;
  std::function<void(const ImportTotals&)> on_done_;  // GUARDED_BY(mu_), and so is the rest
  NdjsonLines lines_;
  ImportBatch building_;
  std::vector<uint64_t> building_lines_;  // the line of each request of building_
  size_t building_bytes_ = 0;
  size_t unsynced_bytes_ = 0;       // submitted since the last synced batch
  bool in_flight_ = false;          // a batch is being committed
  std::function<void(bool)> next_;  // the current piece's continuation, while it is read
  bool stopped_ = false;            // read no further (onError=stop, storage failure)
  std::optional<uint64_t> stopped_at_line_;
  bool finishing_ = false;  // Finish() was called
  bool last_submitted_ = false;
  std::function<void(ImportReport)> done_;  // given by Finish()
  Status storage_error_;
  Status read_error_;
  ImportTotals totals_;
  uint64_t not_written_ = 0;  // lines of batches the store refused whole
  std::vector<LineError> errors_;
  uint64_t errors_omitted_ = 0;
  uint64_t batches_ = 0;
  Lsn first_lsn_ = 0;
  Lsn last_lsn_ = 0;
  const std::chrono::steady_clock::time_point started_;
  std::chrono::steady_clock::time_point last_log_;
};

// The request's body feeds the run; the report is the answer.
class ImporterStream : public BodyStream {
 public:
  explicit ImporterStream(std::shared_ptr<ImportRun> run) : run_(std::move(run)) {}
  void Consume(std::string_view piece, std::function<void(bool)> next) override {
    run_->Consume(piece, std::move(next));
  }
  void Finish(Status error, Responder responder) override {
    auto answer = std::make_shared<Responder>(std::move(responder));
    run_->Finish(std::move(error), [answer](const ImportReport& report) {
      answer->Send(JsonResponse(report.http_status, boost::json::serialize(report.body)));
    });
  }

 private:
  std::shared_ptr<ImportRun> run_;
};

class RefusedStream : public BodyStream {
 public:
  explicit RefusedStream(Status status) : status_(std::move(status)) {}
  void Consume(std::string_view, std::function<void(bool)> next) override { next(false); }
  void Finish(Status, Responder responder) override { responder.Send(ErrorResponse(status_)); }

 private:
  Status status_;
};

}  // namespace

std::shared_ptr<ImportRun> ImportRun::Start(DocumentStore* store, const ContainerSpec& spec,
                                            ImportParams params, ImportLimits limits,
                                            boost::asio::io_context& io,
                                            std::function<void(const ImportTotals&)> on_done) {
  return std::make_shared<Importer>(store, spec, params, limits, io, std::move(on_done));
}

std::unique_ptr<BodyStream> ImportStream::Create(DocumentStore* store, const ContainerSpec& spec,
                                                 ImportParams params, ImportLimits limits,
                                                 boost::asio::io_context& io,
                                                 std::function<void(const ImportTotals&)> on_done) {
  return std::make_unique<ImporterStream>(
      ImportRun::Start(store, spec, params, limits, io, std::move(on_done)));
}

std::unique_ptr<BodyStream> ImportStream::Refuse(Status status) {
  return std::make_unique<RefusedStream>(std::move(status));
}

}  // namespace feedd
