// Tests of processors/progress_view_context.h: the decorator that counts
// the source items a kind's rebuild or verify reads, and cancels it.
#include "processors/progress_view_context.h"

#include <gtest/gtest.h>

#include "processors/processor_kind.h"
#include "processors/processor_manager.h"
#include "tests/blog_scenario.h"
#include "tests/processors/fake_view_context.h"

namespace feedd {
namespace {

using proctest::FakeViewContext;
using proctest::Obj;

boost::json::object Post(int i) {
  std::string id = "p" + std::to_string(i);
  return Obj(R"({"id":")" + id + R"(","postId":")" + id +
             R"(","type":"post","userId":"u1","title":"t","content":"c",)"
             R"("creationDate":"2026-11-21T10:00:00Z"})");
}

TEST(ProgressViewContextTest, CountsTheSourceItemsReadThroughQueryAndRead) {
  FakeViewContext inner;
  // More than one page (QueryAll asks for kMaxQueryLimit per page).
  const int posts = static_cast<int>(kMaxQueryLimit) + 234;
  for (int i = 0; i < posts; ++i) inner.Put("posts", Post(i));
  inner.Put("users", Obj(R"({"id":"u1","userId":"u1","type":"user","username":"a"})"));
  uint64_t reported = 0, calls = 0;
  ProgressViewContext ctx(&inner, {"posts"}, AdminRun{{}, [&](uint64_t n) {
                                                        reported += n;
                                                        ++calls;
                                                      }});

  auto all = QueryAll(ctx, "posts", QuerySpec());
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(all->size(), static_cast<size_t>(posts));
  EXPECT_EQ(ctx.source_items_read(), static_cast<uint64_t>(posts));
  EXPECT_EQ(calls, 2u) << "one report per page";

  ASSERT_TRUE(ctx.Read("posts", "p1", "p1").ok());          // found: +1
  ASSERT_TRUE(ctx.Read("posts", "nosuch", "nosuch").ok());  // not found: +0
  ASSERT_TRUE(ctx.Read("users", "u1", "u1").ok());          // not a source: +0
  ASSERT_TRUE(QueryAll(ctx, "users", QuerySpec()).ok());    // not a source: +0
  EXPECT_EQ(ctx.source_items_read(), static_cast<uint64_t>(posts) + 1);
  EXPECT_EQ(reported, ctx.source_items_read());
}

TEST(ProgressViewContextTest, ACancelledRunFailsEveryCallAndCommitsNothingMore) {
  FakeViewContext inner;
  inner.Put("posts", Post(1));
  std::stop_source stop;
  ProgressViewContext ctx(&inner, {"posts"}, AdminRun{stop.get_token(), {}});

  ASSERT_TRUE(ctx.Upsert("users", Obj(R"({"id":"a","userId":"u1"})")).ok());
  ASSERT_TRUE(ctx.Flush().ok());
  ASSERT_TRUE(inner.Get("users", "u1", "a")) << "flushed before the cancel";
  ASSERT_TRUE(ctx.Upsert("users", Obj(R"({"id":"b","userId":"u1"})")).ok());

  stop.request_stop();
  EXPECT_EQ(ctx.Flush().code(), ErrorCode::kCancelled);
  EXPECT_FALSE(inner.Get("users", "u1", "b")) << "a cancelled run committed a write";
  EXPECT_EQ(ctx.Read("posts", "p1", "p1").status().code(), ErrorCode::kCancelled);
  EXPECT_EQ(ctx.Query("posts", QuerySpec()).status().code(), ErrorCode::kCancelled);
  EXPECT_EQ(ctx.Upsert("users", Obj(R"({"id":"c","userId":"u1"})")).code(), ErrorCode::kCancelled);
  EXPECT_EQ(ctx.Delete("users", "u1", "a").code(), ErrorCode::kCancelled);
  EXPECT_EQ(ctx.SetField("users", "u1", "a", proctest::Ptr("/x"), 1).code(), ErrorCode::kCancelled);
  EXPECT_EQ(ctx.source_items_read(), 0u);
}

// A kind's Rebuild() through the decorator: the count follows what it reads,
// and a cancel in the middle ends it with kCancelled, its view untouched.
TEST(ProgressViewContextTest, ARebuildIsCountedAndCancelledInTheMiddle) {
  ProcessorSettings settings;
  settings.name = "user_posts";
  for (const auto& [key, value] : BlogProcessorSettings()) {
    if (key.rfind("user_posts.", 0) == 0 && key != "user_posts.kind") {
      settings.values[key.substr(std::string("user_posts.").size())] = value;
    }
  }
  FakeViewContext inner;
  auto kind = ProcessorRegistry::Create("projection", settings, BlogContainers());
  ASSERT_TRUE(kind.ok()) << kind.status().ToString();
  const int posts = static_cast<int>(kMaxQueryLimit) * 2 + 10;
  for (int i = 0; i < posts; ++i) inner.Put("posts", Post(i));

  {
    ProgressViewContext ctx(&inner, (*kind)->SourceContainers(), AdminRun{});
    ASSERT_TRUE((*kind)->Rebuild(ctx).ok());
    EXPECT_EQ(ctx.source_items_read(), static_cast<uint64_t>(posts));
    inner.DiscardStaged();  // the view stays empty for the next run
  }

  std::stop_source stop;
  uint64_t seen = 0;
  ProgressViewContext ctx(&inner, (*kind)->SourceContainers(),
                          AdminRun{stop.get_token(), [&](uint64_t n) {
                                     seen += n;
                                     stop.request_stop();  // after the first page
                                   }});
  Status s = (*kind)->Rebuild(ctx);
  EXPECT_EQ(s.code(), ErrorCode::kCancelled) << s.ToString();
  EXPECT_EQ(seen, kMaxQueryLimit) << "the rebuild read on after the cancel";
  EXPECT_EQ(inner.staged(), 0u);
  EXPECT_TRUE(inner.All("users").empty());
}

}  // namespace
}  // namespace feedd
