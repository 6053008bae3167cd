#include "processors/kinds/view_helpers.h"

#include <boost/json.hpp>

#include "storage/derived_items.h"
#include "storage/json_scan.h"
#include "storage/query_semantics.h"
#include "util/split_list.h"

namespace feedd::views {

Result<std::vector<FieldFilter>> ParseFilter(const ProcessorSettings& settings,
                                             const std::string& key) {
  std::vector<FieldFilter> filters;
  const std::string text = settings.Optional(key, "");
  for (std::string_view part : SplitList(text)) {
    size_t eq = part.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      return settings.Error(key, "must be field=value[,field=value], got '" + text + "'");
    }
    std::string field(part.substr(0, eq));
    if (field[0] != '/') field = "/" + field;
    auto pointer = JsonPointer::Parse(field);
    if (!pointer.ok()) return settings.Error(key, pointer.status().message());
    filters.push_back({*pointer, boost::json::value(part.substr(eq + 1))});
  }
  return filters;
}

std::optional<ImageTexts> ImagesOf(const ChangeRecord& record) {
  static const std::vector<std::string> kImages = {"before", "after"};
  std::vector<std::optional<std::string_view>> found;
  if (FindJsonMembers(record.envelope_json, kImages, &found) != JsonScan::kFound || !found[0] ||
      !found[1]) {
    return std::nullopt;
  }
  return ImageTexts{*found[0], *found[1]};
}

std::optional<std::string_view> TextAt(std::string_view image, const JsonPointer& pointer) {
  std::string_view value;
  if (FindJsonValue(image, pointer.tokens(), &value) != JsonScan::kFound) return std::nullopt;
  return value;
}

std::optional<std::string_view> PlainString(std::string_view value_text) {
  if (value_text.size() < 2 || !value_text.starts_with('"') || !value_text.ends_with('"')) {
    return std::nullopt;
  }
  std::string_view inner = value_text.substr(1, value_text.size() - 2);
  if (inner.find('\\') != std::string_view::npos) return std::nullopt;
  return inner;
}

std::vector<TextFilter> TextFilters(const std::vector<FieldFilter>& filters) {
  std::vector<TextFilter> texts;
  for (const FieldFilter& f : filters) texts.push_back({f.path, boost::json::serialize(f.value)});
  return texts;
}

bool TextMatchesFilters(std::string_view image, const std::vector<TextFilter>& filters) {
  for (const TextFilter& f : filters) {
    std::optional<std::string_view> text = TextAt(image, f.path);
    if (!text || *text != f.value_text) return false;
  }
  return true;
}

bool OutsideFilter(const Change& change, const std::vector<FieldFilter>& filters) {
  const bool needs_before = change.op != ChangeOp::kCreate;
  const bool needs_after = change.op != ChangeOp::kDelete;
  if ((needs_before && !change.before) || (needs_after && !change.after)) return false;
  for (const auto& image : {change.before, change.after}) {
    if (image && MatchesFilters(*image, filters)) return false;
  }
  return true;
}

Result<JsonPointer> PointerSetting(const ProcessorSettings& settings, const std::string& key,
                                   const std::string& fallback) {
  std::string text = settings.Optional(key, fallback);
  if (text.empty()) return settings.Error(key, "is required");
  auto pointer = JsonPointer::Parse(text);
  if (!pointer.ok() || pointer->is_root()) {
    return settings.Error(key, "must be a JSON Pointer to a field, got '" + text + "'");
  }
  return pointer;
}

Result<std::string> ContainerSetting(const ProcessorSettings& settings, const std::string& key,
                                     const std::vector<ContainerSpec>& containers) {
  auto name = settings.Required(key);
  if (!name.ok()) return name.status();
  for (const auto& c : containers) {
    if (c.name == *name) return name;
  }
  return settings.Error(key, "names no declared container: '" + *name + "'");
}

const boost::json::value* ValueAt(const boost::json::object& item, const JsonPointer& pointer) {
  return pointer.Find(item);
}

std::optional<std::string> StringAt(const boost::json::object& item, const JsonPointer& pointer) {
  const boost::json::value* v = ValueAt(item, pointer);
  if (v == nullptr || !v->is_string()) return std::nullopt;
  return std::string(v->get_string());
}

uint64_t ItemLsn(const boost::json::object& item) {
  const auto* v = item.if_contains("_lsn");
  return v != nullptr && v->is_number() ? v->to_number<uint64_t>() : 0;
}

uint64_t SourceLsnOf(const boost::json::object& derived) {
  const auto* v = derived.if_contains(kSourceLsnField);
  return v != nullptr && v->is_number() ? v->to_number<uint64_t>() : 0;
}

std::optional<uint64_t> SourceLsnCondition(const boost::json::object& derived) {
  const auto* v = derived.if_contains(kSourceLsnField);
  if (v == nullptr) return std::nullopt;
  if (v->is_uint64() && v->as_uint64() > 0) return v->as_uint64();
  if (v->is_int64() && v->as_int64() > 0) return static_cast<uint64_t>(v->as_int64());
  return std::nullopt;
}

Result<uint64_t> RequiredSourceLsn(const std::string& container,
                                   const boost::json::object& derived) {
  if (std::optional<uint64_t> source_lsn = SourceLsnCondition(derived)) return *source_lsn;
  return Status(ErrorCode::kInternal, "a conditional upsert into '" + container +
                                          "' of an item without a valid _sourceLsn");
}

std::string TruncateUtf8(std::string_view text, size_t max_chars) {
  size_t chars = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if ((c & 0xC0) != 0x80) {  // the first byte of a code point
      if (chars == max_chars) return std::string(text.substr(0, i));
      ++chars;
    }
  }
  return std::string(text);
}

Result<Truncation> TruncationSetting(const ProcessorSettings& settings) {
  Truncation t;
  std::string field = settings.Optional("truncate_field", "");
  if (!field.empty()) {
    auto pointer = PointerSetting(settings, "truncate_field");
    if (!pointer.ok()) return pointer.status();
    t.field = *pointer;
  }
  std::string chars = settings.Optional("truncate_chars", "200");
  try {
    size_t used = 0;
    unsigned long n = std::stoul(chars, &used);
    if (used != chars.size() || n > 1000000) throw std::out_of_range("range");
    t.max_chars = n;
  } catch (const std::exception&) {
    return settings.Error("truncate_chars", "must be an integer 0..1000000, got '" + chars + "'");
  }
  return t;
}

Result<CopySettings> ParseCopySettings(const ProcessorSettings& settings,
                                       const std::vector<ContainerSpec>& containers) {
  auto source = ContainerSetting(settings, "source_container", containers);
  auto target = ContainerSetting(settings, "target_container", containers);
  auto filter = ParseFilter(settings, "source_filter");
  auto truncation = TruncationSetting(settings);
  for (const Status* st :
       {&source.status(), &target.status(), &filter.status(), &truncation.status()}) {
    if (!st->ok()) return *st;
  }
  CopySettings copy;
  copy.source_container = *source;
  copy.target_container = *target;
  copy.filter = *filter;
  copy.truncation = *truncation;
  for (const auto& c : containers) {
    if (c.name == *source) copy.source_pk = *JsonPointer::Parse(c.partition_key_path);
    if (c.name == *target) copy.target_pk = *JsonPointer::Parse(c.partition_key_path);
  }
  return copy;
}

boost::json::object ShortForm(const boost::json::object& source, const CopySettings& copy_of) {
  boost::json::object copy = source;
  copy.erase("_etag");
  copy.erase("_lsn");
  copy.erase("_ts");
  copy[kSourceLsnField] = ItemLsn(source);
  copy[kSourceField] = boost::json::object{
      {"container", copy_of.source_container},
      {"partitionKey", StringAt(source, copy_of.source_pk).value_or("")},
      {"id", source.contains("id") && source.at("id").is_string() ? source.at("id").as_string()
                                                                  : boost::json::string()}};
  if (copy_of.truncation.field) {
    boost::json::value root(std::move(copy));
    if (boost::json::value* v = copy_of.truncation.field->Find(root);
        v != nullptr && v->is_string()) {
      *v = TruncateUtf8(v->get_string(), copy_of.truncation.max_chars);
    }
    copy = std::move(root.as_object());
  }
  return copy;
}

bool SameView(const boost::json::object& derived, const boost::json::object& short_form) {
  boost::json::object a = derived;
  a.erase("_etag");
  a.erase("_lsn");
  a.erase("_ts");
  a.erase(kSourceLsnField);
  boost::json::object b = short_form;
  b.erase(kSourceLsnField);
  return a == b;
}

bool SameViewAndVersion(const boost::json::object& derived, const boost::json::object& short_form) {
  return SourceLsnOf(derived) == SourceLsnOf(short_form) && SameView(derived, short_form);
}

std::optional<std::string> SourcePartitionKey(const boost::json::object& item,
                                              const CopySettings& copy) {
  const boost::json::value* source = item.if_contains(kSourceField);
  if (source == nullptr) {
    if (!item.contains(kSourceLsnField)) return std::nullopt;
    return StringAt(item, copy.source_pk);  // a copy written before _source existed
  }
  const boost::json::object* o = source->if_object();
  const boost::json::value* container = o ? o->if_contains("container") : nullptr;
  const boost::json::value* pk = o ? o->if_contains("partitionKey") : nullptr;
  if (container == nullptr || *container != boost::json::value(copy.source_container) ||
      pk == nullptr || !pk->is_string()) {
    return std::nullopt;
  }
  return std::string(pk->get_string());
}

bool DerivedFrom(const boost::json::object& item, const CopySettings& copy,
                 std::string_view source_pk, std::string_view id) {
  const boost::json::value* item_id = item.if_contains("id");
  if (item_id == nullptr || !item_id->is_string() || item_id->get_string() != id) return false;
  if (const boost::json::value* source = item.if_contains(kSourceField)) {
    const boost::json::object* o = source->if_object();
    const boost::json::value* source_id = o ? o->if_contains("id") : nullptr;
    if (source_id == nullptr || !source_id->is_string() || source_id->get_string() != id) {
      return false;
    }
  }
  return SourcePartitionKey(item, copy) == source_pk;
}

Status Collision(const CopySettings& copy, const boost::json::object& existing,
                 std::string_view source_pk, std::string_view id) {
  std::string taken_by;
  if (const boost::json::value* source = existing.if_contains(kSourceField)) {
    taken_by = "a copy of " + boost::json::serialize(*source);
  } else if (existing.contains(kSourceLsnField)) {
    taken_by = "a copy of another item of " + copy.source_container;
  } else {
    taken_by = "an item a client wrote";
  }
  std::string target_pk = StringAt(existing, copy.target_pk).value_or("");
  return feedd::Collision(ItemName(copy.source_container, source_pk, id),
                          ItemName(copy.target_container, target_pk, id), taken_by);
}

Status RebuildWriter::Upsert(const std::string& container, boost::json::object item) {
  return Counted(ctx_.Upsert(container, std::move(item)));
}

Status RebuildWriter::Delete(const std::string& container, const std::string& partition_key,
                             const std::string& id) {
  return Counted(ctx_.Delete(container, partition_key, id));
}

Status RebuildWriter::Counted(Status s) {
  if (!s.ok()) return s;
  if (++writes_ % kRebuildWritesPerCommit == 0) return ctx_.Flush();
  return Status::Ok();
}

}  // namespace feedd::views
