// Tests of the import job's pieces: ImportSpool (daemon/import_spool.h:
// the body into a file, its lines counted, the limit, a cut body, the
// spool directory reset at start), RunImportJob (daemon/import_job.h:
// the spool fed piece by piece into an ImportRun, progress, a stop between
// pieces, the spool removed) and the job=true parameter.
#include "daemon/import_job.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "daemon/import_spool.h"
#include "daemon/import_stream.h"

namespace feedd {
namespace {

namespace fs = std::filesystem;

class CapturingSink : public ResponseSink {
 public:
  void Deliver(HttpResponse response) override { responses.push_back(std::move(response)); }
  void Abandon() override { ++abandoned; }
  void Post(std::function<void()> work) override { work(); }
  std::vector<HttpResponse> responses;
  int abandoned = 0;
};

class ImportSpoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/feedd-import-job-test-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A spool stream into dir_/1.ndjson that records what it hands over or
  // why it refused.
  std::unique_ptr<BodyStream> Spool(uint64_t max_bytes) {
    return ImportSpool::Create(
        path(), max_bytes,
        [this](SpooledBody body, Responder responder) {
          received_ = body;
          responder.Send(HttpResponse{202, {}, "{}"});
        },
        [this](std::string_view reason) { refusals_.emplace_back(reason); });
  }
  // Feeds `pieces`; returns the `more` of the last one.
  static bool Feed(BodyStream& stream, const std::vector<std::string>& pieces) {
    bool more = true;
    for (const std::string& piece : pieces) {
      stream.Consume(piece, [&more](bool m) { more = m; });
      if (!more) break;
    }
    return more;
  }
  std::string path() const { return dir_ + "/1.ndjson"; }
  static std::string Read(const std::string& file) {
    std::ifstream in(file, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  std::string dir_;
  std::optional<SpooledBody> received_;
  std::vector<std::string> refusals_;
  std::shared_ptr<CapturingSink> sink_ = std::make_shared<CapturingSink>();
};

TEST_F(ImportSpoolTest, AWholeBodyIsHandedOverWithItsLinesAndBytes) {
  auto stream = Spool(1 << 20);
  ASSERT_TRUE(Feed(*stream, {"{\"id\":\"a\"}\n{\"i", "d\":\"b\"}\n\n", "{\"id\":\"c\"}"}));
  stream->Finish(Status::Ok(), Responder(sink_));
  ASSERT_TRUE(received_);
  EXPECT_EQ(received_->path, path());
  EXPECT_EQ(received_->bytes, 33u);
  EXPECT_EQ(received_->lines, 4u) << "a blank line counts, and a last one without its newline";
  EXPECT_EQ(Read(path()), "{\"id\":\"a\"}\n{\"id\":\"b\"}\n\n{\"id\":\"c\"}");
  ASSERT_EQ(sink_->responses.size(), 1u);
  EXPECT_EQ(sink_->responses[0].status, 202);
  EXPECT_TRUE(refusals_.empty());
  stream.reset();
  EXPECT_TRUE(fs::exists(path())) << "handed over: the job owns it";
}

TEST_F(ImportSpoolTest, ABodyOverTheLimitIsRefusedAndRemoved) {
  auto stream = Spool(10);
  EXPECT_FALSE(Feed(*stream, {"0123456", "789", "0"}));
  EXPECT_FALSE(fs::exists(path()) && fs::file_size(path()) > 10);
  stream->Finish(Status::Ok(), Responder(sink_));
  EXPECT_FALSE(received_);
  EXPECT_FALSE(fs::exists(path()));
  ASSERT_EQ(sink_->responses.size(), 1u);
  EXPECT_EQ(sink_->responses[0].status, 413);
  EXPECT_NE(sink_->responses[0].body.find("import.spool_max_mb"), std::string::npos);
  EXPECT_EQ(refusals_, std::vector<std::string>{"spool_limit"});
}

TEST_F(ImportSpoolTest, ABodyCutShortIsRemoved) {
  auto stream = Spool(1 << 20);
  ASSERT_TRUE(Feed(*stream, {"{\"id\":\"a\"}\n"}));
  stream->Finish(Status(ErrorCode::kInvalidRequest, "the connection closed"), Responder(sink_));
  EXPECT_FALSE(received_);
  EXPECT_FALSE(fs::exists(path()));
  EXPECT_EQ(refusals_, std::vector<std::string>{"upload_failed"});
}

TEST_F(ImportSpoolTest, AStreamDroppedWithoutFinishRemovesItsFile) {
  auto stream = Spool(1 << 20);
  ASSERT_TRUE(Feed(*stream, {"{\"id\":\"a\"}\n"}));
  EXPECT_TRUE(fs::exists(path()));
  stream.reset();
  EXPECT_FALSE(fs::exists(path()));
}

TEST_F(ImportSpoolTest, AFileThatCannotBeCreatedIsAStorageError) {
  std::ofstream(path()) << "taken";  // created exclusively: an existing name fails
  auto stream = Spool(1 << 20);
  EXPECT_FALSE(Feed(*stream, {"x"}));
  stream->Finish(Status::Ok(), Responder(sink_));
  ASSERT_EQ(sink_->responses.size(), 1u);
  EXPECT_EQ(sink_->responses[0].status, 500);
  EXPECT_EQ(refusals_, std::vector<std::string>{"spool_error"});
}

TEST_F(ImportSpoolTest, ResetRemovesLeftoverSpoolsAndCreatesTheDirectory) {
  const std::string spool_dir = dir_ + "/import-spool";
  size_t removed = 99;
  ASSERT_TRUE(ResetSpoolDirectory(spool_dir, &removed).ok());
  EXPECT_EQ(removed, 0u);
  EXPECT_TRUE(fs::is_directory(spool_dir));
  std::ofstream(spool_dir + "/3.ndjson") << "{}\n";
  std::ofstream(spool_dir + "/4.ndjson") << "{}\n";
  ASSERT_TRUE(ResetSpoolDirectory(spool_dir, &removed).ok());
  EXPECT_EQ(removed, 2u);
  EXPECT_TRUE(fs::is_empty(spool_dir));
}

// An ImportRun that records its pieces and answers each from another
// thread, as the commit thread's hop does; stops reading after `stop_after`
// pieces when it is set.
class RecordingRun : public ImportRun {
 public:
  void Consume(std::string_view piece, std::function<void(bool)> next) override {
    input += piece;
    ++pieces;
    const bool more = stop_after == 0 || pieces < stop_after;
    std::thread([next = std::move(next), more] { next(more); }).detach();
    if (on_piece) on_piece();
  }
  void Finish(Status error, std::function<void(ImportReport)> done) override {
    finish_error = error;
    ImportReport report;
    report.error = error;
    report.body["bytes"] = input.size();
    std::thread([done = std::move(done), report = std::move(report)]() mutable {
      done(std::move(report));
    }).detach();
  }
  std::string input;
  int pieces = 0;
  int stop_after = 0;
  std::function<void()> on_piece;
  Status finish_error;
};

class RunImportJobTest : public ImportSpoolTest {
 protected:
  SpooledBody Spooled(const std::string& text) {
    std::ofstream(path(), std::ios::binary) << text;
    SpooledBody body;
    body.path = path();
    body.bytes = text.size();
    return body;
  }
  static Status Stopped() { return Status(ErrorCode::kCancelled, "the job was cancelled"); }

  std::unique_ptr<JobRegistry> OpenJobs() {
    auto opened = JobRegistry::Open(dir_ + "/jobs.json", Clock::System());
    EXPECT_TRUE(opened.ok());
    return std::move(*opened);
  }
};

TEST_F(RunImportJobTest, FeedsTheWholeSpoolAndCountsLinesAndBytes) {
  auto jobs = OpenJobs();
  auto job = jobs->Create("import", "", "users");
  // Larger than one piece (256 KiB), the last line without its newline.
  std::string text;
  for (int i = 0; i < 40000; ++i) text += "{\"id\":\"u" + std::to_string(i) + "\"}\n";
  text += "{\"id\":\"last\"}";
  RecordingRun run;
  ImportReport report = RunImportJob(Spooled(text), run, *job, Stopped);
  EXPECT_EQ(run.input, text);
  EXPECT_GT(run.pieces, 1);
  EXPECT_TRUE(run.finish_error.ok());
  EXPECT_EQ(report.body.at("bytes").to_number<size_t>(), text.size());
  jobs->Admit(job->id());
  auto seen = jobs->Get(job->id());
  EXPECT_EQ(seen->done, 40001u);
  EXPECT_EQ(seen->bytes_done, text.size());
  EXPECT_FALSE(fs::exists(path())) << "the spool is removed";
}

TEST_F(RunImportJobTest, AStopIsSeenBetweenPiecesAndCutsTheRun) {
  auto jobs = OpenJobs();
  auto job = jobs->Create("import", "", "users");
  jobs->Admit(job->id());
  std::string text(3 << 20, 'x');
  for (size_t i = 99; i < text.size(); i += 100) text[i] = '\n';
  RecordingRun run;
  run.on_piece = [&] {
    if (run.pieces == 2) {
      ASSERT_TRUE(jobs->Cancel(job->id()).ok());
    }
  };
  ImportReport report = RunImportJob(Spooled(text), run, *job, Stopped);
  EXPECT_EQ(run.pieces, 2) << "nothing is read after the stop";
  EXPECT_EQ(run.finish_error.code(), ErrorCode::kCancelled);
  EXPECT_EQ(report.error.code(), ErrorCode::kCancelled);
  EXPECT_EQ(jobs->Get(job->id())->bytes_done, run.input.size());
  EXPECT_FALSE(fs::exists(path()));
}

TEST_F(RunImportJobTest, ARunThatReadsNoFurtherEndsTheFeeding) {
  auto jobs = OpenJobs();
  auto job = jobs->Create("import", "", "users");
  std::string text(1 << 20, '\n');
  RecordingRun run;
  run.stop_after = 1;  // onError=stop at the first piece
  RunImportJob(Spooled(text), run, *job, Stopped);
  EXPECT_EQ(run.pieces, 1);
  EXPECT_TRUE(run.finish_error.ok());
  EXPECT_FALSE(fs::exists(path()));
}

TEST(ImportParamsTest, JobIsTrueOrFalse) {
  auto params = ParseImportParams("job=true&ifExists=replace");
  ASSERT_TRUE(params.ok());
  EXPECT_TRUE(params->as_job);
  EXPECT_EQ(params->if_exists, ImportIfExists::kReplace);
  params = ParseImportParams("job=false");
  ASSERT_TRUE(params.ok());
  EXPECT_FALSE(params->as_job);
  params = ParseImportParams("");
  ASSERT_TRUE(params.ok());
  EXPECT_FALSE(params->as_job);
  EXPECT_EQ(ParseImportParams("job=1").status().code(), ErrorCode::kInvalidRequest);
}

}  // namespace
}  // namespace feedd
