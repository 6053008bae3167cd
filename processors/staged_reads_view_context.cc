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

Result<StagedReadsViewContext::Found> StagedReadsViewContext::Find(const std::string& container,
                                                                   const std::string& partition_key,
                                                                   const std::string& id) {
  Found found;
  if (!staged_.empty()) {  // else the Key would copy three strings for nothing
    auto it = staged_.find(Key{container, partition_key, id});
    if (it != staged_.end()) {
      found.staged = &it->second;
      return found;
    }
  }
  const bool applying_item = applying_ != nullptr && applying_->id == id &&
                             applying_->partition_key == partition_key &&
                             applying_->container == container;
  if (applying_item && applying_->item_generation != 0 && item_memo_ != nullptr &&
      item_memo_->Generation(container, partition_key, id) == applying_->item_generation) {
    // Nothing changed the item since the change: its after-image is the
    // current version, as a read would return it.
    found.from_change = true;
    found.change_image = applying_->after;
    return found;
  }
  const bool kept = item_memo_ != nullptr &&
                    (unkept_ == nullptr || unkept_->count(container) == 0) && !applying_item;
  const std::optional<uint64_t> generation =
      kept ? item_memo_->Generation(container, partition_key, id) : std::nullopt;
  if (!generation) {
    auto read = inner_->Read(container, partition_key, id);
    if (!read.ok()) return read.status();
    found.inner = std::move(*read);
    return found;
  }
  // The generation is read before the item: a change in between makes the
  // kept version look older than it is, which only costs a miss.
  std::string key = container + '\0' + partition_key + '\0' + id;
  found.kept = item_memo_->Find(key, *generation);
  if (found.kept) return found;
  auto read = inner_->Read(container, partition_key, id);
  if (!read.ok()) return read.status();
  auto items = std::make_shared<std::vector<ViewReadMemo::Item>>();
  if (*read) items->push_back(std::make_shared<const boost::json::object>(std::move(**read)));
  found.kept = items;
  item_memo_->Keep(key, *generation, std::move(items));
  return found;
}

Result<std::optional<boost::json::object>> StagedReadsViewContext::Read(
    const std::string& container, const std::string& partition_key, const std::string& id) {
  auto found = Find(container, partition_key, id);
  if (!found.ok()) return found.status();
  if (found->staged != nullptr) {
    if (!*found->staged) return std::optional<boost::json::object>();
    return std::optional<boost::json::object>(**found->staged);
  }
  if (found->from_change) {
    if (!found->change_image) return std::optional<boost::json::object>();
    return std::optional<boost::json::object>(*found->change_image);
  }
  if (found->kept) {
    if (found->kept->empty()) return std::optional<boost::json::object>();
    return std::optional<boost::json::object>(*found->kept->front());
  }
  return std::move(found->inner);
}

Result<ViewContext::SharedItem> StagedReadsViewContext::ReadShared(const std::string& container,
                                                                   const std::string& partition_key,
                                                                   const std::string& id) {
  auto found = Find(container, partition_key, id);
  if (!found.ok()) return found.status();
  if (found->staged != nullptr) return *found->staged;
  if (found->from_change) return found->change_image;
  if (found->kept) {
    if (found->kept->empty()) return SharedItem();
    return found->kept->front();  // shares the memo's answer
  }
  if (!found->inner) return SharedItem();
  return SharedItem(std::make_shared<const boost::json::object>(std::move(*found->inner)));
}

namespace {

// The order of the query engine: by the spec's order_by value, then by
// partition key and id (storage/query_semantics.h).
int CompareRows(const QuerySpec& spec, const boost::json::object& a, std::string_view a_key,
                const boost::json::object& b, std::string_view b_key) {
  const JsonPointer* order_by = spec.order_by ? &*spec.order_by : nullptr;
  return CompareQueryRows(order_by ? order_by->Find(a) : nullptr, a_key,
                          order_by ? order_by->Find(b) : nullptr, b_key, spec.descending);
}

}  // namespace

bool StagedReadsViewContext::Answers(const std::string& container, const QuerySpec& spec) const {
  auto first = staged_.lower_bound(Key{container, "", ""});
  const bool memoized = query_memo_ != nullptr && spec.partition_key.has_value();
  return (memoized || (first != staged_.end() && std::get<0>(first->first) == container)) &&
         inner_->Container(container) != nullptr;
}

Result<ViewQueryPage> StagedReadsViewContext::Query(const std::string& container,
                                                    const QuerySpec& spec) {
  if (!Answers(container, spec)) return inner_->Query(container, spec);
  auto state = Answer(container, spec);
  if (!state.ok()) return state.status();
  ViewQueryPage page;
  page.items.reserve((*state)->items->size());
  for (const SharedItem& item : *(*state)->items) page.items.push_back(*item);
  return page;
}

Result<ViewContext::SharedItems> StagedReadsViewContext::QueryAllShared(
    const std::string& container, const QuerySpec& spec) {
  if (!Answers(container, spec)) return ViewContext::QueryAllShared(container, spec);
  auto state = Answer(container, spec);
  if (!state.ok()) return state.status();
  return SharedItems((*state)->items);
}

Result<StagedReadsViewContext::QueryState*> StagedReadsViewContext::Answer(
    const std::string& container, const QuerySpec& spec) {
  // Every page is read, so the limit and continuation asked for do not matter.
  QuerySpec whole = spec;
  whole.limit = kMaxQueryLimit;
  whole.continuation.clear();
  std::string text = container + ":" + CanonicalQueryText(whole);
  if (auto it = queries_.find(text); it != queries_.end()) return &it->second;

  const ContainerSpec* c = inner_->Container(container);  // Query() checked it
  auto pk_pointer = JsonPointer::Parse(c->partition_key_path);
  if (!pk_pointer.ok()) return pk_pointer.status();
  QueryState state{container,    whole, *pk_pointer,
                   std::nullopt, {},    std::make_shared<std::vector<SharedItem>>()};
  ViewReadMemo::Items stored;
  if (query_memo_ != nullptr && spec.partition_key) {
    // Read before the inner query's iterator: a change in between makes the
    // generation look older than the answer, which only costs a miss.
    state.generation = query_memo_->Generation(container, *spec.partition_key);
    if (state.generation) stored = query_memo_->Find(text, *state.generation);
  }
  if (stored == nullptr) {
    auto items = inner_->QueryAllShared(container, spec);
    if (!items.ok()) return items.status();
    stored = std::move(*items);
  }
  // The stored answer, with what is staged here in place of what it replaced.
  struct Row {
    std::string key;         // QueryRowKey()
    const SharedItem* item;  // into `stored` or staged_
  };
  std::vector<Row> rows;
  rows.reserve(stored->size());
  auto first_staged = staged_.lower_bound(Key{container, "", ""});
  const bool staged_here =
      first_staged != staged_.end() && std::get<0>(first_staged->first) == container;
  for (const SharedItem& item : *stored) {
    std::optional<std::string> pk = views::StringAt(*item, state.pk_pointer);
    const boost::json::value* id = item->if_contains("id");
    if (!pk || id == nullptr || !id->is_string()) continue;
    std::string id_text(id->get_string());
    if (staged_here && staged_.count(Key{container, *pk, id_text}) != 0)
      continue;  // superseded below
    rows.push_back({QueryRowKey(*pk, id_text), &item});
  }
  const size_t from_store = rows.size();
  for (auto it = first_staged; it != staged_.end() && std::get<0>(it->first) == container; ++it) {
    const auto& [c_name, pk, id] = it->first;
    if (it->second && Selects(state, pk, *it->second)) {
      rows.push_back({QueryRowKey(pk, id), &it->second});
    }
  }
  // The stored answer is in the query's order already (and stays so with
  // rows taken out); only staged rows need their places.
  if (rows.size() > from_store) {
    std::stable_sort(rows.begin(), rows.end(), [&](const Row& a, const Row& b) {
      return CompareRows(whole, **a.item, a.key, **b.item, b.key) < 0;
    });
  }
  state.keys.reserve(rows.size());
  state.items->reserve(rows.size());
  for (Row& row : rows) {
    state.keys.push_back(std::move(row.key));
    state.items->push_back(*row.item);
  }
  return &queries_.emplace(std::move(text), std::move(state)).first->second;
}

bool StagedReadsViewContext::Selects(const QueryState& state, const std::string& partition_key,
                                     const boost::json::object& item) {
  if (state.spec.partition_key && *state.spec.partition_key != partition_key) return false;
  return MatchesFilters(item, state.spec.filters);
}

void StagedReadsViewContext::Staged(const std::string& container, const std::string& partition_key,
                                    const std::string& id) {
  ++changes_[{container, partition_key}];
  const SharedItem& version = staged_.at(Key{container, partition_key, id});
  const std::string key = QueryRowKey(partition_key, id);
  for (auto& [text, state] : queries_) {
    if (state.container != container) continue;
    auto at = std::find(state.keys.begin(), state.keys.end(), key);
    const bool selected = version && Selects(state, partition_key, *version);
    if (at == state.keys.end() && !selected) continue;
    if (state.items.use_count() > 1) {  // a caller holds the answer as it was
      state.items = std::make_shared<std::vector<SharedItem>>(*state.items);
    }
    std::vector<SharedItem>& items = *state.items;
    if (at != state.keys.end()) {
      items.erase(items.begin() + (at - state.keys.begin()));
      state.keys.erase(at);
    }
    if (!selected) continue;
    size_t place = 0;
    while (place < items.size() &&
           CompareRows(state.spec, *items[place], state.keys[place], *version, key) <= 0) {
      ++place;
    }
    state.keys.insert(state.keys.begin() + place, key);
    items.insert(items.begin() + place, version);
  }
}

void StagedReadsViewContext::Committed(bool every_write_took_effect) {
  if (query_memo_ == nullptr) return;
  for (auto& [text, state] : queries_) {
    if (!state.generation) continue;
    if (!every_write_took_effect) {
      query_memo_->Erase(text);
      continue;
    }
    const std::string& pk = *state.spec.partition_key;
    auto changed = changes_.find({state.container, pk});
    const uint64_t expected = *state.generation + (changed == changes_.end() ? 0 : changed->second);
    if (query_memo_->Generation(state.container, pk) != expected) {
      query_memo_->Erase(text);  // someone else changed it too, or a change was a no-op
      continue;
    }
    query_memo_->Keep(text, expected, std::move(state.items));
  }
  queries_.clear();
}

Status StagedReadsViewContext::Flush() {
  queries_.clear();
  changes_.clear();
  return inner_->Flush();
}

Status StagedReadsViewContext::Upsert(const std::string& container, boost::json::object item) {
  return StageUpsert(container, std::move(item), &ViewContext::Upsert);
}

Status StagedReadsViewContext::UpsertIfNewerSource(const std::string& container,
                                                   boost::json::object item) {
  return StageUpsert(container, std::move(item), &ViewContext::UpsertIfNewerSource);
}

Status StagedReadsViewContext::StageUpsert(const std::string& container, boost::json::object item,
                                           Status (ViewContext::*upsert)(const std::string&,
                                                                         boost::json::object)) {
  const ContainerSpec* c = inner_->Container(container);
  boost::json::object staged = item;
  if (Status s = (inner_->*upsert)(container, std::move(item)); !s.ok()) return s;
  // The inner context accepted it, so the container exists and the item has
  // a string partition key and id.
  auto pk_pointer = JsonPointer::Parse(c->partition_key_path);
  std::optional<std::string> pk =
      pk_pointer.ok() ? views::StringAt(staged, *pk_pointer) : std::nullopt;
  const boost::json::value* id = staged.if_contains("id");
  if (!pk || id == nullptr || !id->is_string()) {
    return Status(ErrorCode::kInternal, "staged item without partition key or id");
  }
  std::string id_text(id->get_string());
  StripStoreProperties(staged);
  staged_[Key{container, *pk, id_text}] =
      std::make_shared<const boost::json::object>(std::move(staged));
  Staged(container, *pk, id_text);
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
  staged_[Key{container, partition_key, id}] =
      std::make_shared<const boost::json::object>(std::move(item.as_object()));
  Staged(container, partition_key, id);
  return Status::Ok();
}

Status StagedReadsViewContext::Delete(const std::string& container,
                                      const std::string& partition_key, const std::string& id) {
  if (Status s = inner_->Delete(container, partition_key, id); !s.ok()) return s;
  staged_[Key{container, partition_key, id}] = nullptr;
  Staged(container, partition_key, id);
  return Status::Ok();
}

}  // namespace feedd
