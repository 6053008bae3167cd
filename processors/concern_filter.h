// ConcernFilter: whether a change can matter to a kind whose Apply() acts
// only on items that match a filter (ProcessorKind::ConcernFilters: a view
// of posts has nothing to do with a comment). Decided from the parsed change
// (Concerns), or, before any parsing, from the record's text (MayConcern),
// so the instance's turn on the source pump neither parses nor hands over
// what no applier needs.
//
// The text test relies on what the commit path writes (storage/
// change_record.h): an envelope `{"lsn":...}` whose missing images are
// `"before":null` / `"after":null`, and whose images are compact, canonical
// JSON (boost::json::serialize), where an object member `"k": "v"` always
// reads `"k":"v"`. Only filters that compare an object member with a string,
// a boolean or null are tested in the text; numbers have more than one
// spelling, and a pointer ending in an array index names no member.
//
// Thread-safety: immutable after construction; safe to share.
#pragma once

#include <string>
#include <vector>

#include "processors/change.h"
#include "storage/change_record.h"
#include "storage/query.h"

namespace feedd {

class ConcernFilter {
 public:
  // Empty `filters`: every change concerns the kind.
  explicit ConcernFilter(std::vector<FieldFilter> filters);

  // False when the change carries every image its op implies and neither
  // matches the filters (views::OutsideFilter).
  bool Concerns(const Change& change) const;

  // False only when Concerns() of the parsed record would be false; true
  // whenever the text cannot tell (and for a record that does not read as
  // an envelope, which the caller then parses and parks).
  bool MayConcern(const ChangeRecord& record) const;

 private:
  std::vector<FieldFilter> filters_;
  // `"member":value` of each filter the text can test.
  std::vector<std::string> needles_;
};

}  // namespace feedd
