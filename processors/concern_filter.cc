#include "processors/concern_filter.h"

#include <string.h>

#include <boost/json/serialize.hpp>

#include "processors/kinds/view_helpers.h"
#include "storage/json_pointer.h"

namespace feedd {
namespace {

// The text a member matching `filter` has in canonical JSON, or "" when no
// single spelling exists.
std::string Needle(const FieldFilter& filter) {
  const auto& tokens = filter.path.tokens();
  size_t index = 0;
  if (tokens.empty() || ParseArrayIndex(tokens.back(), &index) || tokens.back() == "-") return "";
  const boost::json::value& v = filter.value;
  if (!v.is_string() && !v.is_bool() && !v.is_null()) return "";
  return boost::json::serialize(boost::json::value(tokens.back())) + ":" +
         boost::json::serialize(v);
}

// memmem, not std::string_view::find: find() stops at every occurrence of
// the first character, and the needles start with '"', in JSON text the
// most frequent one.
bool Contains(std::string_view text, std::string_view part) {
  return memmem(text.data(), text.size(), part.data(), part.size()) != nullptr;
}

}  // namespace

ConcernFilter::ConcernFilter(std::vector<FieldFilter> filters) : filters_(std::move(filters)) {
  for (const FieldFilter& f : filters_) {
    if (std::string needle = Needle(f); !needle.empty()) needles_.push_back(std::move(needle));
  }
}

bool ConcernFilter::Concerns(const Change& change) const {
  return !views::OutsideFilter(change, filters_);
}

bool ConcernFilter::MayConcern(const ChangeRecord& record) const {
  if (needles_.empty()) return true;
  std::string_view text = record.envelope_json;
  if (!text.starts_with("{\"lsn\":") || !text.ends_with("}")) return true;
  // An image its op implies is missing: only the current state can tell.
  if (record.op != ChangeOp::kCreate && Contains(text, "\"before\":null")) return true;
  // The after-image is the envelope's last member.
  if (record.op != ChangeOp::kDelete && text.ends_with(",\"after\":null}")) return true;
  for (const std::string& needle : needles_) {
    if (!Contains(text, needle)) return false;  // no image has this member
  }
  return true;
}

}  // namespace feedd
