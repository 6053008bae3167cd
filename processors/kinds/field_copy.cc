// Kind "field_copy": keeps a field of target items equal to a field of the
// source item they reference - e.g. userUsername on every post, comment and
// like equal to the username of the user with the same userId.
//
// Settings (processor.<name>.*):
//   source_container   container of the referenced items (users)
//   source_filter      which source items count, field=value (type=user)
//   key_field          the source item's key (/userId)
//   value_field        the source field to copy (/username)
//   target_container   container of the referencing items (posts)
//   target_key_field   the target's reference; must be a secondary index (/userId)
//   target_field       the copy of the value in targets (/userUsername)
//
// A source change fans out through the target index; a target change looks
// its source up (one partition when the source container is partitioned by
// key_field). Only differing targets are written, so a no-op edit writes
// nothing and the processor's own writes come back as no-ops. A target
// change whose copy is already right (a comment with its author's current
// name) is told from the record's text (AppliedAlready()), without parsing
// it; of a source container that holds other items too, only changes of
// source items concern the kind (ConcernFilters()).
#include <boost/json.hpp>

#include "processors/kinds/view_helpers.h"
#include "processors/processor_kind.h"
#include "storage/json_scan.h"
#include "storage/query_semantics.h"

namespace feedd {
namespace {

class FieldCopy : public ProcessorKind {
 public:
  std::string source_container, target_container;
  std::vector<FieldFilter> source_filter;
  JsonPointer key_field, value_field, target_key_field, target_field;
  // The names of target_key_field and target_field when each names a
  // member of the item itself (/userId, /userUsername): AppliedAlready()
  // then finds both in one pass over the after-image. Empty otherwise.
  std::vector<std::string> target_members;
  bool source_partitioned_by_key = false;

  std::vector<std::string> SourceContainers() const override {
    if (source_container == target_container) return {source_container};
    return {source_container, target_container};
  }
  std::vector<std::string> TargetContainers() const override { return {target_container}; }

  // Apply() reads the current version of a source container's item and
  // acts only on a source: a change none of whose images is one (a post
  // copied into users, say) leaves the current version to its own change.
  std::vector<FieldFilter> ConcernFilters(const std::string& container) const override {
    if (container == source_container && container != target_container) return source_filter;
    return {};
  }

  // What Apply() does with a target change, told from the text: nothing
  // for a delete; else FixTarget() of the after-image, which writes only
  // when the image's copy differs from the source's current value. Equal
  // canonical texts parse to equal values; anything else is left to Apply().
  bool AppliedAlready(const ChangeRecord& record, ViewContext& ctx) const override {
    if (record.container != target_container || record.container == source_container) {
      return false;
    }
    if (record.op == ChangeOp::kDelete) return true;
    std::optional<std::string_view> key_text, copy_text;
    if (!TargetTexts(record, &key_text, &copy_text)) return false;
    auto key = key_text ? views::PlainString(*key_text) : std::nullopt;
    if (!key || !copy_text) return false;
    auto source = LookupSource(std::string(*key), ctx);
    if (!source.ok()) return false;
    if (!*source) return true;  // no source (yet): Apply() leaves the copy alone
    return IsTextOf(views::ValueAt(**source, value_field), *copy_text);
  }

  std::string OrderingKey(const Change& change) const override {
    // Renames and the creation of referencing items of one key serialize.
    const auto& image = change.after ? change.after : change.before;
    const JsonPointer& field = change.container == source_container && image && IsSource(*image)
                                   ? key_field
                                   : target_key_field;
    if (image) {
      if (auto key = views::StringAt(*image, field)) return *key;
    }
    return change.container + "/" + change.partition_key + "/" + change.id;
  }

  Status Apply(const Change& change, ViewContext& ctx) const override {
    if (change.container == source_container) {
      auto source = ctx.Read(change.container, change.partition_key, change.id);
      if (!source.ok()) return source.status();
      if (*source && IsSource(**source)) return FanOut(**source, ctx);
      if (change.container != target_container) return Status::Ok();  // deleted: keep copies
    }
    if (change.container == target_container && change.op != ChangeOp::kDelete) {
      // The version this change wrote: a later version has its own change.
      if (change.after) return FixTarget(*change.after, ctx);
      auto target = ctx.Read(change.container, change.partition_key, change.id);
      if (!target.ok()) return target.status();
      if (*target) return FixTarget(**target, ctx);
    }
    return Status::Ok();
  }

  Status Rebuild(ViewContext& ctx) const override {
    QuerySpec spec;
    spec.filters = source_filter;
    auto sources = QueryAll(ctx, source_container, spec);
    if (!sources.ok()) return sources.status();
    for (const auto& source : *sources) {
      if (Status s = FanOut(source, ctx); !s.ok()) return s;
      if (Status s = ctx.Flush(); !s.ok()) return s;
    }
    return Status::Ok();
  }

  Status Verify(ViewContext& ctx, std::vector<std::string>* differences) const override {
    auto targets = QueryAll(ctx, target_container, QuerySpec());
    if (!targets.ok()) return targets.status();
    for (const auto& target : *targets) {
      auto key = views::StringAt(target, target_key_field);
      if (!key) continue;
      auto expected = LookupValue(*key, ctx);
      if (!expected.ok()) return expected.status();
      if (!*expected) continue;  // no such source: nothing to copy
      const boost::json::value* actual = views::ValueAt(target, target_field);
      if (actual == nullptr || *actual != **expected) {
        differences->push_back(
            target_container + " item " + std::string(target.at("id").as_string()) + ": " +
            target_field.text() + " is " + (actual ? boost::json::serialize(*actual) : "missing") +
            ", expected " + boost::json::serialize(**expected));
      }
    }
    return Status::Ok();
  }

 private:
  bool IsSource(const boost::json::object& item) const {
    return MatchesFilters(item, source_filter);
  }

  boost::json::value ValueOf(const boost::json::object& source) const {
    const boost::json::value* v = views::ValueAt(source, value_field);
    return v ? *v : boost::json::value(nullptr);
  }

  // Every target that references `source` gets its value.
  Status FanOut(const boost::json::object& source, ViewContext& ctx) const {
    auto key = views::StringAt(source, key_field);
    if (!key) return Status::Ok();
    boost::json::value value = ValueOf(source);
    QuerySpec spec;
    spec.filters.push_back({target_key_field, boost::json::value(*key)});
    auto targets = QueryAll(ctx, target_container, spec);
    if (!targets.ok()) return targets.status();
    for (const auto& target : *targets) {
      if (Status s = SetIfDifferent(target, value, ctx); !s.ok()) return s;
    }
    return Status::Ok();
  }

  Status FixTarget(const boost::json::object& target, ViewContext& ctx) const {
    auto key = views::StringAt(target, target_key_field);
    if (!key) return Status::Ok();
    auto value = LookupValue(*key, ctx);
    if (!value.ok()) return value.status();
    if (!*value) return Status::Ok();  // the source does not exist (yet)
    return SetIfDifferent(target, **value, ctx);
  }

  // The value of the source item with `key`, nullopt when there is none.
  Result<std::optional<boost::json::value>> LookupValue(const std::string& key,
                                                        ViewContext& ctx) const {
    auto source = LookupSource(key, ctx);
    if (!source.ok()) return source.status();
    if (!*source) return std::optional<boost::json::value>();
    return std::optional<boost::json::value>(ValueOf(**source));
  }

  // The source item with `key`, null when there is none. When several
  // source items have that key, the one whose id is the key wins (a point
  // read, the common case: users/u1/u1, shared with the read memo), else
  // the first by id.
  Result<ViewContext::SharedItem> LookupSource(const std::string& key, ViewContext& ctx) const {
    if (source_partitioned_by_key) {
      auto item = ctx.ReadShared(source_container, key, key);  // read for every target
      if (!item.ok()) return item.status();
      if (*item && IsSource(**item)) {
        const boost::json::value* item_key = views::ValueAt(**item, key_field);
        if (item_key != nullptr && item_key->is_string() && item_key->get_string() == key) {
          return *item;
        }
      }
    }
    QuerySpec spec;
    if (source_partitioned_by_key) spec.partition_key = key;
    spec.filters = source_filter;
    spec.filters.push_back({key_field, boost::json::value(key)});
    spec.limit = 1;
    auto page = ctx.Query(source_container, spec);
    if (!page.ok()) return page.status();
    if (page->items.empty()) return ViewContext::SharedItem();
    return ViewContext::SharedItem(
        std::make_shared<const boost::json::object>(std::move(page->items.front())));
  }

  // The texts of target_key_field and target_field in the record's
  // after-image (each unset when absent); false when the record does not
  // read as an envelope. Straight to the two members: the scan stops at
  // the later one, before the content that follows them in a comment.
  bool TargetTexts(const ChangeRecord& record, std::optional<std::string_view>* key_text,
                   std::optional<std::string_view>* copy_text) const {
    static const std::vector<std::string> kAfter = {"after"};
    if (target_members.empty()) {
      auto images = views::ImagesOf(record);
      if (!images) return false;
      *key_text = views::TextAt(images->after, target_key_field);
      *copy_text = views::TextAt(images->after, target_field);
      return true;
    }
    std::vector<std::optional<std::string_view>> found;
    const std::optional<std::string_view> after = record.KnownAfterImage();
    const JsonScan scan =
        after ? FindJsonMembers(*after, target_members, &found)
              : FindJsonMembers(record.envelope_json, kAfter, target_members, &found);
    if (scan == JsonScan::kMalformed) return false;
    *key_text = found[0];
    *copy_text = found[1];
    return true;
  }

  // Whether `text`, a canonical JSON text, is the text of `value` (null
  // when absent, as ValueOf() has it): a string is compared with the
  // text's characters when they need no unescaping, anything else as
  // serialized.
  static bool IsTextOf(const boost::json::value* value, std::string_view text) {
    if (value == nullptr) return text == "null";
    if (value->is_string()) {
      // A text without escapes is the string's serialization exactly when
      // its characters are the string's.
      if (auto plain = views::PlainString(text)) return *plain == value->get_string();
    }
    return boost::json::serialize(*value) == text;
  }

  Status SetIfDifferent(const boost::json::object& target, const boost::json::value& value,
                        ViewContext& ctx) const {
    const boost::json::value* current = views::ValueAt(target, target_field);
    if (current != nullptr && *current == value) return Status::Ok();
    const ContainerSpec* spec = ctx.Container(target_container);
    auto pk = views::StringAt(target, *JsonPointer::Parse(spec->partition_key_path));
    auto id = target.if_contains("id");
    if (!pk || id == nullptr || !id->is_string()) return Status::Ok();
    return ctx.SetField(target_container, *pk, std::string(id->as_string()), target_field, value);
  }
};

Result<std::unique_ptr<ProcessorKind>> MakeFieldCopy(const ProcessorSettings& s,
                                                     const std::vector<ContainerSpec>& containers) {
  auto kind = std::make_unique<FieldCopy>();
  auto source = views::ContainerSetting(s, "source_container", containers);
  auto target = views::ContainerSetting(s, "target_container", containers);
  auto filter = views::ParseFilter(s, "source_filter");
  auto key = views::PointerSetting(s, "key_field");
  auto value = views::PointerSetting(s, "value_field");
  auto target_key = views::PointerSetting(s, "target_key_field");
  auto target_field = views::PointerSetting(s, "target_field");
  for (const Status* st : {&source.status(), &target.status(), &filter.status(), &key.status(),
                           &value.status(), &target_key.status(), &target_field.status()}) {
    if (!st->ok()) return *st;
  }
  kind->source_container = *source;
  kind->target_container = *target;
  kind->source_filter = *filter;
  kind->key_field = *key;
  kind->value_field = *value;
  kind->target_key_field = *target_key;
  kind->target_field = *target_field;
  if (target_key->tokens().size() == 1 && target_field->tokens().size() == 1 &&
      target_key->tokens()[0] != target_field->tokens()[0]) {
    kind->target_members = {target_key->tokens()[0], target_field->tokens()[0]};
  }
  for (const auto& c : containers) {
    if (c.name == *source) kind->source_partitioned_by_key = c.partition_key_path == key->text();
    if (c.name == *target) {
      bool indexed = false;
      for (const auto& path : c.index_paths) indexed |= path == target_key->text();
      if (!indexed) {
        return s.Error("target_key_field", target_key->text() + " must be a secondary index of " +
                                               *target + " (a rename fans out through it)");
      }
    }
  }
  return std::unique_ptr<ProcessorKind>(std::move(kind));
}

}  // namespace

FEEDD_REGISTER_PROCESSOR_KIND("field_copy", MakeFieldCopy);

}  // namespace feedd
