// Helpers shared by the unit tests: a temporary directory that is removed
// afterwards, JSON shorthands and Status matchers.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <boost/json.hpp>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "storage/document_store.h"
#include "storage/json_pointer.h"
#include "util/status.h"

namespace feedd::testutil {

// A fresh directory made with mkdtemp(), removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "feedd-unit-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Every change record of `store` from LSN 1 to the head, in order; throws
// when the feed cannot be read.
inline std::vector<ChangeRecord> WholeFeed(DocumentStore& store) {
  std::vector<ChangeRecord> out;
  FeedReadSpec spec;
  spec.limit = 1000;
  for (;;) {
    FeedPage page;
    Status s = store.ReadFeed(spec, &page);
    if (!s.ok()) throw std::runtime_error(s.ToString());
    for (auto& r : page.records) out.push_back(std::move(r));
    if (page.records.empty() || page.next > store.HeadLsn()) return out;
    spec.from = page.next;
  }
}

inline boost::json::value Json(std::string_view text) { return boost::json::parse(text); }

inline boost::json::object Obj(std::string_view text) {
  boost::json::value v = boost::json::parse(text);
  if (!v.is_object()) throw std::runtime_error("not a JSON object: " + std::string(text));
  return std::move(v.as_object());
}

inline std::string Str(const boost::json::value& v) { return boost::json::serialize(v); }

// Parses a JSON Pointer the test knows to be valid.
inline JsonPointer Ptr(std::string_view text) {
  Result<JsonPointer> p = JsonPointer::Parse(text);
  if (!p.ok()) throw std::runtime_error("bad pointer in test: " + std::string(text));
  return p.value();
}

inline ::testing::AssertionResult IsOk(const Status& s) {
  if (s.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "expected ok, got " << s.ToString();
}

inline ::testing::AssertionResult HasCode(const Status& s, ErrorCode code) {
  if (s.code() == code) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "expected " << ErrorCodeName(code) << ", got " << s.ToString();
}

}  // namespace feedd::testutil
