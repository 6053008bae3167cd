// ConcernFilter: the text test (MayConcern) never rules out a change that
// the parsed test (Concerns) keeps, on records the real store wrote, and it
// does rule out the plain cases it exists for.
#include "processors/concern_filter.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "processors/change.h"
#include "storage/document_store.h"
#include "storage/prepared_item.h"
#include "tests/unit/test_util.h"

namespace feedd {
namespace {

using boost::json::object;

std::vector<FieldFilter> Filters(
    std::initializer_list<std::pair<const char*, boost::json::value>> l) {
  std::vector<FieldFilter> out;
  for (const auto& [path, value] : l) out.push_back({*JsonPointer::Parse(path), value});
  return out;
}

class ConcernFilterTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (store_) store_->Close();
  }

  void Open(bool before_images) {
    StoreOptions options;
    options.data_dir = dir_.path();
    options.sync = false;
    options.before_images = before_images;
    options.containers = {{"c", "/pk", {}}};
    auto store = DocumentStore::Open(options);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(*store);
  }

  void Write(WriteOpKind kind, object item) {
    WriteOp op;
    op.kind = kind;
    std::string pk = item.at("pk").as_string().c_str();
    if (kind == WriteOpKind::kDelete) {
      op.id = item.at("id").as_string().c_str();
      op.if_exists = true;  // a random id may be missing
    } else {
      auto prepared = PrepareItem(*store_->FindContainer("c"), std::move(item), std::nullopt,
                                  std::nullopt, 1 << 20);
      ASSERT_TRUE(prepared.ok()) << prepared.status().ToString();
      op.item = std::move(*prepared);
    }
    WriteResult r = store_->Write(WriteRequest{"c", pk, {op}});
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  }

  std::vector<ChangeRecord> Feed() {
    FeedPage page;
    FeedReadSpec spec;
    spec.limit = 100000;
    spec.max_scanned = 100000;
    EXPECT_TRUE(store_->ReadFeed(spec, &page).ok());
    return page.records;
  }

  testutil::TempDir dir_;
  std::unique_ptr<DocumentStore> store_;
};

// Strings that a text search could get wrong: quotes, escapes, control
// characters, non-ASCII, and the filter's own text inside a value.
const std::vector<std::string> kTricky = {"post",
                                          "Post",
                                          "post ",
                                          "po\"st",
                                          "po\\st",
                                          "po\nst",
                                          std::string("po\0st", 5),
                                          "p\xC3\xB6st",
                                          "\"type\":\"post\"",
                                          "type",
                                          "ty\"pe",
                                          "",
                                          "\x7f",
                                          "\xE2\x80\xA8"};

boost::json::value RandomValue(std::mt19937& rng, int depth) {
  switch (rng() % (depth > 2 ? 4 : 7)) {
    case 0:
      return boost::json::value(kTricky[rng() % kTricky.size()]);
    case 1:
      return boost::json::value(static_cast<int64_t>(rng() % 3));
    case 2:
      return boost::json::value(rng() % 2 == 0);
    case 3:
      return boost::json::value(nullptr);
    case 4: {
      boost::json::array a;
      for (int i = rng() % 3; i > 0; --i) a.push_back(RandomValue(rng, depth + 1));
      return a;
    }
    default: {
      object o;
      for (int i = rng() % 4; i > 0; --i) {
        o[kTricky[rng() % kTricky.size()]] = RandomValue(rng, depth + 1);
      }
      return o;
    }
  }
}

// Random items, replaced and deleted, with and without before-images: for
// every record and every filter, MayConcern() false implies Concerns()
// false.
TEST_F(ConcernFilterTest, TheTextNeverRulesOutAChangeTheParsedImagesKeep) {
  const std::vector<std::vector<FieldFilter>> filter_sets = {
      Filters({{"/type", "post"}}),
      Filters({{"/ty\"pe", "po\"st"}}),
      Filters({{"/type", "po\nst"}}),
      Filters({{"/type", boost::json::value(boost::json::string_view("po\0st", 5))}}),
      Filters({{"/type", "p\xC3\xB6st"}}),
      Filters({{"/type", true}}),
      Filters({{"/type", nullptr}}),
      Filters({{"/type", 1}}),                      // a number: not in the text
      Filters({{"/a/0", "post"}}),                  // an array index: not in the text
      Filters({{"/post/type", "post"}}),            // nested
      Filters({{"/type", "post"}, {"/", "post"}}),  // the empty key
      Filters({{"/type", "post"}, {"/flag", true}}),
  };
  std::vector<ConcernFilter> filters;
  for (const auto& set : filter_sets) filters.emplace_back(set);
  std::mt19937 rng(20261126);
  size_t ruled_out = 0, records = 0;
  for (bool before_images : {true, false}) {
    Open(before_images);
    for (int i = 0; i < 400; ++i) {
      object item;
      item["id"] = "i" + std::to_string(rng() % 40);
      item["pk"] = "p";
      for (int m = rng() % 5; m > 0; --m) {
        item[kTricky[rng() % kTricky.size()]] = RandomValue(rng, 0);
      }
      if (rng() % 3 == 0) item["type"] = kTricky[rng() % kTricky.size()];
      if (rng() % 4 == 0) item["post"] = object{{"type", "post"}};
      if (rng() % 4 == 0) item["flag"] = rng() % 2 == 0;
      const WriteOpKind kind = rng() % 8 == 0 ? WriteOpKind::kDelete : WriteOpKind::kUpsert;
      Write(kind, std::move(item));
      if (HasFatalFailure()) return;
    }
    for (const ChangeRecord& record : Feed()) {
      Result<Change> change = ParseChange(record.envelope_json);
      ASSERT_TRUE(change.ok()) << change.status().ToString();
      ++records;
      for (size_t f = 0; f < filters.size(); ++f) {
        if (filters[f].MayConcern(record)) continue;
        ++ruled_out;
        EXPECT_FALSE(filters[f].Concerns(*change))
            << "filter " << f << " ruled out LSN " << record.lsn << ": " << record.envelope_json;
      }
    }
    store_->Close();
    store_.reset();
    std::filesystem::remove_all(dir_.path());
  }
  EXPECT_GT(records, 700u);    // all but the deletes of missing items
  EXPECT_GT(ruled_out, 800u);  // the test rules things out, or it proves nothing
}

TEST_F(ConcernFilterTest, AChangeWithoutTheMemberIsRuledOutUnlessAnImageIsMissing) {
  Open(/*before_images=*/false);
  Write(WriteOpKind::kUpsert, object{{"id", "c1"}, {"pk", "p"}, {"type", "comment"}});
  Write(WriteOpKind::kUpsert, object{{"id", "c1"}, {"pk", "p"}, {"type", "comment2"}});
  Write(WriteOpKind::kUpsert, object{{"id", "p1"}, {"pk", "p"}, {"type", "post"}});
  Write(WriteOpKind::kDelete, object{{"id", "c1"}, {"pk", "p"}});
  Write(WriteOpKind::kUpsert,
        object{{"id", "c2"}, {"pk", "p"}, {"type", "comment"}, {"note", {{"after", nullptr}}}});
  std::vector<ChangeRecord> feed = Feed();
  ASSERT_EQ(feed.size(), 5u);
  ConcernFilter posts(Filters({{"/type", "post"}}));
  EXPECT_FALSE(posts.MayConcern(feed[0]));  // a created comment
  EXPECT_TRUE(posts.MayConcern(feed[1]));   // replaced, no before-image: was it a post?
  EXPECT_TRUE(posts.MayConcern(feed[2]));   // a post
  EXPECT_TRUE(posts.MayConcern(feed[3]));   // deleted, no before-image
  EXPECT_FALSE(posts.MayConcern(feed[4]));  // an image's own "after":null is not a lost image
  ChangeRecord lost_after = feed[0];
  std::string& text = lost_after.envelope_json;
  text.replace(text.rfind(",\"after\":") + 9, std::string::npos, "null}");
  EXPECT_TRUE(posts.MayConcern(lost_after));  // a create without its image: parsed
  EXPECT_TRUE(posts.Concerns(*ParseChange(feed[1].envelope_json)));
  EXPECT_FALSE(posts.Concerns(*ParseChange(feed[0].envelope_json)));

  ConcernFilter everything({});
  for (const ChangeRecord& r : feed) EXPECT_TRUE(everything.MayConcern(r));
  ChangeRecord garbled = feed[0];
  garbled.envelope_json = "not an envelope";
  EXPECT_TRUE(posts.MayConcern(garbled));  // parsed, then parked, by the caller
}

}  // namespace
}  // namespace feedd
