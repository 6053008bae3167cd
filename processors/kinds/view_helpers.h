// Small building blocks shared by the processor kinds: filters from
// settings, short forms (truncated copies), LSN bookkeeping of derived items.
//
// Thread-safety: free functions and immutable values.
#pragma once

#include <boost/json/object.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "processors/processor_kind.h"
#include "storage/query.h"

namespace feedd::views {

// Derived items carry the _lsn of the source version they reflect here, so
// a replayed change never writes an older state over a newer one.
inline constexpr const char* kSourceLsnField = "_sourceLsn";

// "field=value[,field=value]" (string values) -> equality filters.
Result<std::vector<FieldFilter>> ParseFilter(const ProcessorSettings& settings,
                                             const std::string& key);
// True when the change's images show its item outside `filters`
// (MatchesFilters, storage/query_semantics.h) both before
// and after it, so no view of the matching items can have changed with it
// (a later change that makes the item match is applied in its turn). False
// when an image its op carries is missing (before-images off, an envelope
// without them): the kind then has to read the current state.
bool OutsideFilter(const Change& change, const std::vector<FieldFilter>& filters);

// Reading a change record without parsing it (ProcessorKind::AppliedAlready):
// the texts of its before- and after-image, "null" for one it does not
// carry. The commit path writes them as compact, canonical JSON
// (storage/change_record.h), so equal texts are equal values; unequal texts
// may still be equal values (numbers), so a caller that finds them unequal
// cannot tell, and leaves the change to Apply(). nullopt when the record
// does not read as an envelope.
struct ImageTexts {
  std::string_view before, after;
};
std::optional<ImageTexts> ImagesOf(const ChangeRecord& record);
// The text of the value at `pointer` in an image's text; nullopt when it is
// absent or the text does not read as JSON.
std::optional<std::string_view> TextAt(std::string_view image, const JsonPointer& pointer);
// The string a value's text spells when it is a string without escapes.
std::optional<std::string_view> PlainString(std::string_view value_text);
// A filter for the text test: its pointer and its value serialized, once.
struct TextFilter {
  JsonPointer path;
  std::string value_text;
};
std::vector<TextFilter> TextFilters(const std::vector<FieldFilter>& filters);
// True when the image's text shows it matching the filters (MatchesFilters):
// each filter's value text is the text at its pointer. False when it does
// not, or when the text cannot tell.
bool TextMatchesFilters(std::string_view image, const std::vector<TextFilter>& filters);

// A JSON Pointer setting, e.g. key_field = /userId.
Result<JsonPointer> PointerSetting(const ProcessorSettings& settings, const std::string& key,
                                   const std::string& fallback = "");
// A container setting that must name a declared container.
Result<std::string> ContainerSetting(const ProcessorSettings& settings, const std::string& key,
                                     const std::vector<ContainerSpec>& containers);

// The string at `pointer`, or nullopt when absent or not a string.
std::optional<std::string> StringAt(const boost::json::object& item, const JsonPointer& pointer);
const boost::json::value* ValueAt(const boost::json::object& item, const JsonPointer& pointer);

uint64_t ItemLsn(const boost::json::object& item);         // its _lsn (0 when absent)
uint64_t SourceLsnOf(const boost::json::object& derived);  // its _sourceLsn (0 when absent)
// Its _sourceLsn when that is a positive integer (what a conditional write
// of it compares: WriteOp::source_lsn, a batch op's "sourceLsn"), else
// nullopt.
std::optional<uint64_t> SourceLsnCondition(const boost::json::object& derived);
// The condition of ViewContext::UpsertIfNewerSource() of `derived` into
// `container`: its SourceLsnCondition(), or internal when it has none.
Result<uint64_t> RequiredSourceLsn(const std::string& container,
                                   const boost::json::object& derived);

// The first `max_chars` Unicode code points of a UTF-8 string.
std::string TruncateUtf8(std::string_view text, size_t max_chars);

// How a short form is made: which string field is cut to how many code points.
struct Truncation {
  std::optional<JsonPointer> field;
  size_t max_chars = 200;
};
Result<Truncation> TruncationSetting(const ProcessorSettings& settings);

// The settings of kinds that copy matching source items into a target
// container: source_container, source_filter, target_container,
// truncate_field / truncate_chars; plus both containers' partition key paths.
struct CopySettings {
  std::string source_container, target_container;
  std::vector<FieldFilter> filter;
  Truncation truncation;
  JsonPointer source_pk, target_pk;
};
Result<CopySettings> ParseCopySettings(const ProcessorSettings& settings,
                                       const std::vector<ContainerSpec>& containers);

// A copy of `source` (an item of copy.source_container) for a view: system
// properties dropped, the truncated field cut, _sourceLsn set to the
// source's _lsn and _source to {"container","partitionKey","id"} of it.
boost::json::object ShortForm(const boost::json::object& source, const CopySettings& copy);

// True when `derived` already shows `short_form` (ignoring _sourceLsn and
// the store's properties; _source is compared).
bool SameView(const boost::json::object& derived, const boost::json::object& short_form);

// True when `derived` shows `short_form` (SameView) of the same source
// version (_sourceLsn). A rebuild writes every copy that is not: one whose
// source changed in a way the copy does not show still records that change.
bool SameViewAndVersion(const boost::json::object& derived, const boost::json::object& short_form);

// True when `item` is a copy of the item (copy.source_container,
// `source_pk`, `id`): its _source says so, or - a copy written before
// _source existed - it has _sourceLsn and that partition key and id.
bool DerivedFrom(const boost::json::object& item, const CopySettings& copy,
                 std::string_view source_pk, std::string_view id);

// The source partition key a copy of copy.source_container records, if any.
std::optional<std::string> SourcePartitionKey(const boost::json::object& item,
                                              const CopySettings& copy);

// The collision of a copy of (copy.source_container, `source_pk`, `id`) with
// `existing`, the item of the target container at its place: derived_item,
// naming both (storage/derived_items.h).
Status Collision(const CopySettings& copy, const boost::json::object& existing,
                 std::string_view source_pk, std::string_view id);

// How a Rebuild() writes: only the difference between the view there is and
// the view there should be, through a RebuildWriter, so that rebuilding a
// right view writes nothing, Kafka consumers of the view see no churn, and
// readers see the old view until the rebuild's commit. A difference of more
// than kRebuildWritesPerCommit writes is committed in steps of that many
// (each item whole), so that a rebuild of a large view does not hold it all
// in memory.
inline constexpr size_t kRebuildWritesPerCommit = 5000;

class RebuildWriter {
 public:
  explicit RebuildWriter(ViewContext& ctx) : ctx_(ctx) {}
  Status Upsert(const std::string& container, boost::json::object item);
  Status Delete(const std::string& container, const std::string& partition_key,
                const std::string& id);

 private:
  Status Counted(Status s);
  ViewContext& ctx_;
  size_t writes_ = 0;
};

}  // namespace feedd::views
