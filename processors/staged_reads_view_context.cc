#include "processors/staged_reads_view_context.h"

#include <algorithm>
#include <boost/json.hpp>

#include "processors/kinds/view_helpers.h"
#include "storage/prepared_item.h"
#include "storage/query_semantics.h"

namespace feedd {

const ContainerSpec* StagedReadsViewContext::Container(const std::string& name) const {
  return inner_->Container(name);
}

Result<std::optional<boost::json::object>> StagedReadsViewContext::Read(
    const std::string& container, const std::string& partition_key, const std::string& id) {
  auto it = staged_.find(Key{container, partition_key, id});
  if (it != staged_.end()) return it->second;
  return inner_->Read(container, partition_key, id);
}

Result<ViewQueryPage> StagedReadsViewContext::Query(const std::string& container,
                                                    const QuerySpec& spec) {
  auto first = staged_.lower_bound(Key{container, "", ""});
  if (first == staged_.end() || std::get<0>(first->first) != container) {
    return inner_->Query(container, spec);
  }
  const ContainerSpec* c = inner_->Container(container);
  if (c == nullptr) return inner_->Query(container, spec);
  auto pk_pointer = JsonPointer::Parse(c->partition_key_path);
  if (!pk_pointer.ok()) return pk_pointer.status();

  struct Row {
    std::string key;  // QueryRowKey()
    boost::json::object item;
  };
  std::vector<Row> rows;
  auto stored = InnerItems(container, spec);
  if (!stored.ok()) return stored.status();
  for (const auto& item : **stored) {
    std::optional<std::string> pk = views::StringAt(item, *pk_pointer);
    const boost::json::value* id = item.if_contains("id");
    if (!pk || id == nullptr || !id->is_string()) continue;
    std::string id_text(id->get_string());
    if (staged_.count(Key{container, *pk, id_text}) != 0) continue;  // superseded below
    rows.push_back({QueryRowKey(*pk, id_text), item});
  }
  for (auto it = first; it != staged_.end() && std::get<0>(it->first) == container; ++it) {
    const auto& [c_name, pk, id] = it->first;
    if (!it->second) continue;  // deleted
    if (spec.partition_key && *spec.partition_key != pk) continue;
    if (!MatchesFilters(*it->second, spec.filters)) continue;
    rows.push_back({QueryRowKey(pk, id), *it->second});
  }
  std::sort(rows.begin(), rows.end(), [&spec](const Row& a, const Row& b) {
    const JsonPointer* order_by = spec.order_by ? &*spec.order_by : nullptr;
    return CompareQueryRows(order_by ? order_by->Find(a.item) : nullptr, a.key,
                            order_by ? order_by->Find(b.item) : nullptr, b.key,
                            spec.descending) < 0;
  });
  ViewQueryPage page;
  page.items.reserve(rows.size());
  for (auto& row : rows) page.items.push_back(std::move(row.item));
  return page;
}

Result<const std::vector<boost::json::object>*> StagedReadsViewContext::InnerItems(
    const std::string& container, const QuerySpec& spec) {
  // Every page is read, so the limit and continuation asked for do not matter.
  QuerySpec whole = spec;
  whole.limit = kMaxQueryLimit;
  whole.continuation.clear();
  std::string text = container + ":" + CanonicalQueryText(whole);
  auto it = inner_results_.find(text);
  if (it == inner_results_.end()) {
    auto items = QueryAll(*inner_, container, spec);
    if (!items.ok()) return items.status();
    it = inner_results_.emplace(std::move(text), std::move(*items)).first;
  }
  return &it->second;
}

Status StagedReadsViewContext::Flush() {
  inner_results_.clear();
  return inner_->Flush();
}

Status StagedReadsViewContext::Upsert(const std::string& container, boost::json::object item) {
  const ContainerSpec* c = inner_->Container(container);
  boost::json::object staged = item;
  if (Status s = inner_->Upsert(container, std::move(item)); !s.ok()) return s;
  // The inner context accepted it, so the container exists and the item has
  // a string partition key and id.
  auto pk_pointer = JsonPointer::Parse(c->partition_key_path);
  std::optional<std::string> pk =
      pk_pointer.ok() ? views::StringAt(staged, *pk_pointer) : std::nullopt;
  const boost::json::value* id = staged.if_contains("id");
  if (!pk || id == nullptr || !id->is_string()) {
    return Status(ErrorCode::kInternal, "staged item without partition key or id");
  }
  Key key{container, std::move(*pk), std::string(id->get_string())};
  StripStoreProperties(staged);
  staged_[std::move(key)] = std::move(staged);
  return Status::Ok();
}

Status StagedReadsViewContext::SetField(const std::string& container,
                                        const std::string& partition_key, const std::string& id,
                                        const JsonPointer& field, boost::json::value value) {
  auto current = Read(container, partition_key, id);
  if (!current.ok()) return current.status();
  boost::json::value copy_of_value = value;
  if (Status s = inner_->SetField(container, partition_key, id, field, std::move(value)); !s.ok()) {
    return s;
  }
  if (!*current) return Status::Ok();  // a no-op: the item does not exist
  boost::json::value item = std::move(**current);
  StripStoreProperties(item.as_object());
  if (boost::json::value* target = field.Find(item)) {
    *target = std::move(copy_of_value);
  } else if (field.tokens().size() == 1) {
    item.as_object()[field.tokens()[0]] = std::move(copy_of_value);
  } else {
    // A nested field the store will set (or refuse) in ways this copy does
    // not model: forget the staged version so later reads go to the store,
    // after committing what is staged so far.
    staged_.erase(Key{container, partition_key, id});
    return Flush();
  }
  staged_[Key{container, partition_key, id}] = std::move(item.as_object());
  return Status::Ok();
}

Status StagedReadsViewContext::Delete(const std::string& container,
                                      const std::string& partition_key, const std::string& id) {
  if (Status s = inner_->Delete(container, partition_key, id); !s.ok()) return s;
  staged_[Key{container, partition_key, id}] = std::nullopt;
  return Status::Ok();
}

}  // namespace feedd
