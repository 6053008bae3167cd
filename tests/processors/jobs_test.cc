// Tests of processors/jobs.h: the job registry (ids, states, progress
// arithmetic on a manual clock, persistence and the bound on finished jobs).
#include "processors/jobs.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "util/json_parse.h"

namespace feedd {
namespace {

constexpr uint64_t kT0 = 1'763'700'000'000;  // epoch ms

class JobsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/feedd-jobs-test-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    path_ = dir_ + "/jobs.json";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<JobRegistry> Open() {
    auto opened = JobRegistry::Open(path_, &clock_);
    EXPECT_TRUE(opened.ok()) << opened.status().ToString();
    return opened.ok() ? std::move(*opened) : nullptr;
  }

  // A job created and admitted, as the API starts one.
  std::shared_ptr<JobControl> Start(JobRegistry& jobs, const std::string& type = "rebuild",
                                    const std::string& processor = "feed") {
    auto job = jobs.Create(type, processor);
    jobs.Admit(job->id());
    return job;
  }

  std::string FileText() const {
    std::ifstream in(path_);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  ManualClock clock_{kT0};
  std::string dir_, path_;
};

TEST_F(JobsTest, IdsAreUniqueAndIncreaseAcrossReopens) {
  std::set<uint64_t> ids;
  uint64_t last = 0;
  {
    auto jobs = Open();
    for (int i = 0; i < 5; ++i) {
      auto job = Start(*jobs);
      EXPECT_GT(job->id(), last);
      last = job->id();
      ids.insert(job->id());
      jobs->Finish(job->id(), boost::json::value(nullptr));
    }
  }
  auto jobs = Open();
  auto job = Start(*jobs);
  EXPECT_GT(job->id(), last) << "an id was reused after a reopen";
  EXPECT_EQ(ids.size(), 5u);
}

TEST_F(JobsTest, AJobIsListedOnlyOnceAdmittedAndAWithdrawnOneIsGone) {
  auto jobs = Open();
  auto job = jobs->Create("verify", "feed");
  EXPECT_FALSE(jobs->Get(job->id()));
  EXPECT_TRUE(jobs->List().empty());
  EXPECT_EQ(jobs->running(), 0u);
  jobs->Withdraw(job->id());
  EXPECT_FALSE(jobs->Get(job->id()));

  auto admitted = Start(*jobs, "verify", "usernames");
  auto got = jobs->Get(admitted->id());
  ASSERT_TRUE(got);
  EXPECT_EQ(got->type, "verify");
  EXPECT_EQ(got->processor, "usernames");
  EXPECT_EQ(got->state, JobState::kRunning);
  EXPECT_EQ(got->created_ms, kT0);
  EXPECT_EQ(got->started_ms, kT0);
  EXPECT_EQ(got->ended_ms, 0u);
  EXPECT_EQ(jobs->running(), 1u);
}

TEST_F(JobsTest, StatesFollowTheOutcome) {
  auto jobs = Open();
  auto ok = Start(*jobs);
  auto cancelled = Start(*jobs);
  auto failed = Start(*jobs, "verify");

  ok->AddDone(40);
  ok->SetTotal(100);  // an estimate: exact once succeeded
  clock_.Advance(2000);
  jobs->Finish(ok->id(), boost::json::value(boost::json::object{{"appliedLsn", 7}}));
  auto j = jobs->Get(ok->id());
  ASSERT_TRUE(j);
  EXPECT_EQ(j->state, JobState::kSucceeded);
  EXPECT_EQ(j->ended_ms, kT0 + 2000);
  EXPECT_EQ(j->done, 40u);
  EXPECT_EQ(j->total, std::optional<uint64_t>(40));
  EXPECT_EQ(j->result.as_object().at("appliedLsn").to_number<int>(), 7);
  EXPECT_TRUE(j->error.ok());

  // Finishing twice changes nothing; a finished job cannot be cancelled.
  jobs->Finish(ok->id(), Status(ErrorCode::kInternal, "late"));
  EXPECT_EQ(jobs->Get(ok->id())->state, JobState::kSucceeded);
  EXPECT_EQ(jobs->Cancel(ok->id()).status().code(), ErrorCode::kConflict);
  EXPECT_EQ(jobs->Cancel(9999).status().code(), ErrorCode::kNotFound);

  auto asked = jobs->Cancel(cancelled->id());
  ASSERT_TRUE(asked.ok());
  EXPECT_EQ(asked->state, JobState::kRunning) << "running until its task sees the stop";
  EXPECT_TRUE(asked->cancel_requested);
  EXPECT_TRUE(cancelled->stop_token().stop_requested());
  EXPECT_TRUE(cancelled->cancel_requested());
  EXPECT_FALSE(failed->stop_token().stop_requested());
  jobs->Finish(cancelled->id(), Status(ErrorCode::kCancelled, "the job was cancelled"));
  EXPECT_EQ(jobs->Get(cancelled->id())->state, JobState::kCancelled);
  EXPECT_EQ(jobs->Get(cancelled->id())->error.code(), ErrorCode::kCancelled);
  EXPECT_TRUE(jobs->Get(cancelled->id())->result.is_null());

  jobs->Finish(failed->id(), Status(ErrorCode::kLsnWaitTimeout, "not applied in time"));
  j = jobs->Get(failed->id());
  EXPECT_EQ(j->state, JobState::kFailed);
  EXPECT_EQ(j->error.code(), ErrorCode::kLsnWaitTimeout);
  EXPECT_EQ(j->error.message(), "not applied in time");

  EXPECT_EQ(jobs->running(), 0u);
  auto counts = jobs->finished_counts();
  EXPECT_EQ((counts[{"rebuild", "succeeded"}]), 1u);
  EXPECT_EQ((counts[{"rebuild", "cancelled"}]), 1u);
  EXPECT_EQ((counts[{"verify", "failed"}]), 1u);
  // Newest first.
  auto list = jobs->List();
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(list[0].id, failed->id());
  EXPECT_EQ(list[2].id, ok->id());
}

TEST_F(JobsTest, RateAndEtaFollowTheClock) {
  auto jobs = Open();
  auto job = Start(*jobs);
  auto j = jobs->Get(job->id());
  JobRate rate = RateOf(*j, clock_.NowMillis());
  EXPECT_EQ(rate.per_second, 0);
  EXPECT_FALSE(rate.eta_seconds) << "nothing done, no time passed";

  clock_.Advance(10'000);
  job->AddDone(100);
  job->SetTotal(1000);
  j = jobs->Get(job->id());
  rate = RateOf(*j, clock_.NowMillis());
  EXPECT_DOUBLE_EQ(rate.per_second, 10.0);
  ASSERT_TRUE(rate.eta_seconds);
  EXPECT_DOUBLE_EQ(*rate.eta_seconds, 90.0);

  boost::json::object o = JobJson(*j, clock_.NowMillis());
  const auto& progress = o.at("progress").as_object();
  EXPECT_EQ(progress.at("done").to_number<uint64_t>(), 100u);
  EXPECT_EQ(progress.at("total").to_number<uint64_t>(), 1000u);
  EXPECT_DOUBLE_EQ(progress.at("ratePerSecond").to_number<double>(), 10.0);
  EXPECT_DOUBLE_EQ(progress.at("etaSeconds").to_number<double>(), 90.0);
  EXPECT_EQ(o.at("id").as_string(), std::to_string(job->id()));
  EXPECT_EQ(o.at("state").as_string(), "running");
  EXPECT_TRUE(o.at("ended").is_null());
  EXPECT_TRUE(o.at("result").is_null());
  EXPECT_TRUE(o.at("error").is_null());

  job->SetTotal(std::nullopt);  // unknown total: no ETA
  j = jobs->Get(job->id());
  EXPECT_FALSE(RateOf(*j, clock_.NowMillis()).eta_seconds);
  EXPECT_TRUE(JobJson(*j, clock_.NowMillis()).at("progress").as_object().at("total").is_null());

  job->SetTotal(50);  // the estimate is passed: no ETA
  EXPECT_FALSE(RateOf(*jobs->Get(job->id()), clock_.NowMillis()).eta_seconds);

  // Finished: the rate over its run, frozen; no ETA.
  clock_.Advance(10'000);
  job->AddDone(300);
  jobs->Finish(job->id(), boost::json::value(nullptr));
  clock_.Advance(60'000);
  j = jobs->Get(job->id());
  rate = RateOf(*j, clock_.NowMillis());
  EXPECT_DOUBLE_EQ(rate.per_second, 20.0);
  EXPECT_FALSE(rate.eta_seconds);
  EXPECT_EQ(JobJson(*j, clock_.NowMillis()).at("ended").to_number<uint64_t>(), kT0 + 20'000);
}

TEST_F(JobsTest, AReopenKeepsFinishedJobsAndFailsThoseThatWereRunning) {
  uint64_t done_id = 0, running_id = 0, hidden_id = 0;
  {
    auto jobs = Open();
    auto done = Start(*jobs, "verify", "feed");
    done->AddDone(12);
    clock_.Advance(1000);
    jobs->Finish(done->id(), boost::json::value(boost::json::object{{"ok", true}}));
    // As the API starts one: its estimate is known when it is admitted
    // (progress is written only then and when a job finishes).
    auto running = jobs->Create("rebuild", "user_posts");
    running->SetTotal(500);
    jobs->Admit(running->id());
    running->AddDone(100);
    auto hidden = jobs->Create("rebuild", "usernames");  // never admitted
    done_id = done->id();
    running_id = running->id();
    hidden_id = hidden->id();
    // The daemon dies here: nothing more is written.
  }
  EXPECT_NE(FileText().find("\"state\":\"running\""), std::string::npos) << FileText();
  clock_.Advance(5000);
  auto jobs = Open();
  auto done = jobs->Get(done_id);
  ASSERT_TRUE(done);
  EXPECT_EQ(done->state, JobState::kSucceeded);
  EXPECT_EQ(done->type, "verify");
  EXPECT_EQ(done->processor, "feed");
  EXPECT_EQ(done->done, 12u);
  EXPECT_EQ(done->total, std::optional<uint64_t>(12));
  EXPECT_EQ(done->created_ms, kT0);
  EXPECT_EQ(done->ended_ms, kT0 + 1000);
  EXPECT_TRUE(done->result.as_object().at("ok").as_bool());

  auto failed = jobs->Get(running_id);
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->state, JobState::kFailed);
  EXPECT_EQ(failed->error.code(), ErrorCode::kUnavailable);
  EXPECT_NE(failed->error.message().find("restarted"), std::string::npos)
      << failed->error.message();
  EXPECT_EQ(failed->ended_ms, kT0 + 6000);
  EXPECT_EQ(failed->total, std::optional<uint64_t>(500));
  EXPECT_FALSE(jobs->Get(hidden_id));
  EXPECT_EQ(jobs->running(), 0u);
  EXPECT_EQ((jobs->finished_counts()[{"rebuild", "failed"}]), 1u);
  // And the file says so now.
  EXPECT_EQ(FileText().find("\"state\":\"running\""), std::string::npos) << FileText();
}

TEST_F(JobsTest, AnImportJobHasItsContainerBytesAndAPartialResultAcrossReopens) {
  uint64_t cancelled_id = 0, running_id = 0;
  {
    auto jobs = Open();
    auto cancelled = jobs->Create("import", "", "posts");
    cancelled->SetTotal(1000);
    cancelled->SetBytesTotal(64000);
    jobs->Admit(cancelled->id());
    cancelled->AddDone(300);
    cancelled->AddBytesDone(19200);
    auto seen = jobs->Get(cancelled->id());
    ASSERT_TRUE(seen);
    EXPECT_EQ(seen->container, "posts");
    EXPECT_EQ(seen->processor, "");
    EXPECT_EQ(seen->bytes_done, 19200u);
    EXPECT_EQ(seen->bytes_total, std::optional<uint64_t>(64000));
    boost::json::object json = JobJson(*seen, kT0);
    EXPECT_EQ(json.at("container").as_string(), "posts");
    EXPECT_EQ(json.at("progress").at("bytesDone").to_number<uint64_t>(), 19200u);
    EXPECT_EQ(json.at("progress").at("bytesTotal").to_number<uint64_t>(), 64000u);
    ASSERT_TRUE(jobs->Cancel(cancelled->id()).ok());
    jobs->Finish(cancelled->id(), Status(ErrorCode::kCancelled, "the job was cancelled"),
                 boost::json::object{{"created", 300}});
    auto running = jobs->Create("import", "", "users");
    running->SetBytesTotal(10);
    jobs->Admit(running->id());
    cancelled_id = cancelled->id();
    running_id = running->id();
  }
  auto jobs = Open();
  auto cancelled = jobs->Get(cancelled_id);
  ASSERT_TRUE(cancelled);
  EXPECT_EQ(cancelled->state, JobState::kCancelled);
  EXPECT_EQ(cancelled->container, "posts");
  EXPECT_EQ(cancelled->done, 300u);
  EXPECT_EQ(cancelled->bytes_done, 19200u);
  EXPECT_EQ(cancelled->bytes_total, std::optional<uint64_t>(64000));
  EXPECT_EQ(cancelled->result.at("created").to_number<int>(), 300);
  auto failed = jobs->Get(running_id);
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->state, JobState::kFailed);
  EXPECT_EQ(failed->container, "users");
  // A processor's job has neither a container nor bytes.
  auto rebuild = Start(*jobs);
  boost::json::object json = JobJson(*jobs->Get(rebuild->id()), kT0);
  EXPECT_TRUE(json.at("container").is_null());
  EXPECT_TRUE(json.at("progress").at("bytesTotal").is_null());
}

TEST_F(JobsTest, OnlyTheNewestFinishedJobsAreKept) {
  const size_t extra = 7;
  uint64_t first_kept = 0;
  std::shared_ptr<JobControl> old_running;
  {
    auto jobs = Open();
    old_running = Start(*jobs);  // older than them all, but running: kept
    for (size_t i = 0; i < JobRegistry::kMaxFinished + extra; ++i) {
      auto job = Start(*jobs, "verify");
      if (i == extra) first_kept = job->id();
      jobs->Finish(job->id(), boost::json::value(nullptr));
    }
    auto list = jobs->List();
    ASSERT_EQ(list.size(), JobRegistry::kMaxFinished + 1);
    EXPECT_EQ(list.back().id, old_running->id());
    EXPECT_EQ(list[list.size() - 2].id, first_kept);
    EXPECT_FALSE(jobs->Get(first_kept - 1));
  }
  auto jobs = Open();  // the running one fails on reopen: now one too many
  auto list = jobs->List();
  ASSERT_EQ(list.size(), JobRegistry::kMaxFinished);
  EXPECT_FALSE(jobs->Get(old_running->id()));
  EXPECT_EQ(list.back().id, first_kept);
}

TEST_F(JobsTest, AnUnreadableFileIsSetAsideAndTheRegistryStartsEmpty) {
  {
    std::ofstream out(path_);
    out << "{\"nextId\": 3, \"jobs\": [{\"id\": \"x\"}";
  }
  auto jobs = Open();
  ASSERT_TRUE(jobs);
  EXPECT_TRUE(jobs->List().empty());
  EXPECT_TRUE(std::filesystem::exists(path_ + ".unreadable"));
  auto job = Start(*jobs);
  EXPECT_EQ(job->id(), 1u);
  auto parsed = ParseJson(FileText());
  ASSERT_TRUE(parsed.ok()) << FileText();
  EXPECT_EQ(parsed->at("jobs").as_array().size(), 1u);
}

}  // namespace
}  // namespace feedd
