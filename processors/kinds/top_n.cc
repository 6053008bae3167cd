// Kind "top_n": a capped view holding exactly the `cap` highest-ranked
// matching source items, in short form - e.g. the 100 most recent posts in
// one partition of `feed`.
//
// Settings (processor.<name>.*):
//   source_container   (posts)
//   source_filter      which items compete, field=value (type=post)
//   target_container   (feed); every copy must land in ONE partition of it
//                      (its partition key path names a field that the
//                      filter fixes, e.g. /type with type=post)
//   order_by           the rank, highest first (/creationDate); ties by id,
//                      highest first
//   cap                how many items stay (100)
//   truncate_field / truncate_chars   as for "projection"
//
// Level-triggered: on a change, the item's current version is compared with
// the current view; it enters only if it outranks the lowest member (an
// update to an older item does not push it in), the view is trimmed back to
// `cap`, and a removed member is replaced by the best non-member (a scan of
// the source). All changes share one ordering key: the view is one partition.
//
// Copies have the source's id and record their source (_source). Two source
// items with the same id (in different partitions) cannot both be members:
// the one in the view keeps its place, and the other one is left out and
// reported as a collision (ViewContext::ReportCollision) - it neither evicts
// the member nor parks the view's single ordering key. Rebuild() and
// Verify() follow the same rule: for each id, the source whose copy is in
// the view, else the best-ranked one.
#include <algorithm>
#include <boost/json.hpp>
#include <map>
#include <set>
#include <string_view>
#include <type_traits>
#include <vector>

#include "processors/kinds/view_helpers.h"
#include "processors/processor_kind.h"
#include "storage/json_order.h"
#include "storage/query_semantics.h"

namespace feedd {
namespace {

constexpr size_t kMaxCap = 1000;
// Reconciling a view partition writes at most a delete and an upsert per
// place, so within Apply() a RebuildWriter never commits on its own.
static_assert(2 * kMaxCap < views::kRebuildWritesPerCommit);

class TopN : public ProcessorKind, public views::CopySettings {
 public:
  JsonPointer order_by;
  std::vector<views::TextFilter> filter_texts;  // `filter`, for AppliedAlready()
  size_t cap = 100;

  std::vector<std::string> SourceContainers() const override { return {source_container}; }
  std::vector<std::string> TargetContainers() const override { return {target_container}; }
  std::string OrderingKey(const Change&) const override { return target_container; }
  bool Distributable() const override { return false; }
  // Every change shares one key, so each would wait for its own commit:
  // under load, changes queue up and are applied a run at a time. At 64
  // closed-loop connections of the scenario's write mix (~7,900 writes/s
  // here) runs of 64 fell seconds behind and runs of 256 keep the view
  // within 100 ms (bench/views_bench.sh).
  size_t MaxBatch() const override { return 256; }

  std::vector<FieldFilter> ConcernFilters(const std::string&) const override { return filter; }

  // Apply() of a change that left its item competing at the same rank in
  // the same partition (RankKeptAt(): a count increment, say) ends at the
  // point read of where its copy would be when there is none: told here
  // from the images' texts, without parsing them.
  bool AppliedAlready(const ChangeRecord& record, ViewContext& ctx) const override {
    auto images = views::ImagesOf(record);
    if (!images || !images->before.starts_with('{') || !images->after.starts_with('{') ||
        !views::TextMatchesFilters(images->before, filter_texts) ||
        !views::TextMatchesFilters(images->after, filter_texts)) {
      return false;
    }
    auto pk_text = views::TextAt(images->after, target_pk);
    auto pk = pk_text ? views::PlainString(*pk_text) : std::nullopt;
    auto rank = views::TextAt(images->after, order_by);
    if (!pk || views::TextAt(images->before, target_pk) != pk_text || !rank ||
        views::TextAt(images->before, order_by) != rank) {
      return false;
    }
    auto copy = ctx.Read(target_container, std::string(*pk), record.id);
    return copy.ok() && !*copy;
  }

  Status Apply(const Change& change, ViewContext& ctx) const override {
    if (views::OutsideFilter(change, filter)) return Status::Ok();  // a comment, say
    // A change that left the item competing at the same rank in the same
    // partition (a count increment, say) can only update a copy: a
    // non-member stays out, so the copy decides whether the source is worth
    // a read at all. The copy read here serves below too.
    const std::optional<std::string> kept_pk = RankKeptAt(change);
    std::optional<boost::json::object> kept_copy;
    if (kept_pk) {
      auto existing = ctx.Read(target_container, *kept_pk, change.id);
      if (!existing.ok()) return existing.status();
      if (!*existing) return Status::Ok();
      kept_copy = std::move(**existing);
    }
    auto source = ctx.Read(change.container, change.partition_key, change.id);
    if (!source.ok()) return source.status();
    bool competes = *source && MatchesFilters(**source, filter);
    std::optional<std::string> view_pk;
    if (competes) view_pk = views::StringAt(**source, target_pk);
    if (!view_pk) view_pk = ViewPartitionFromImages(change);
    if (!view_pk && !change.before && change.op != ChangeOp::kCreate) {
      // No longer a member, and no before-image says where its copy was.
      auto found = FindMemberPartition(change, ctx);
      if (!found.ok()) return found.status();
      view_pk = *found;
    }
    if (!view_pk) return Status::Ok();  // never was a member

    if (competes) {
      // The common case: an update of a member whose rank did not drop. A
      // point read of its copy is enough; membership and order hold.
      std::optional<boost::json::object> existing;
      if (kept_pk == view_pk) {
        existing = std::move(kept_copy);
      } else {
        auto read = ctx.Read(target_container, *view_pk, change.id);
        if (!read.ok()) return read.status();
        existing = std::move(*read);
      }
      if (existing && !views::DerivedFrom(*existing, *this, change.partition_key, change.id)) {
        ctx.ReportCollision(
            views::Collision(*this, *existing, change.partition_key, change.id).message());
        return Status::Ok();
      }
      boost::json::object copy = views::ShortForm(**source, *this);
      if (existing && !Outranks(*existing, copy)) {
        if (views::SourceLsnOf(*existing) >= views::ItemLsn(**source)) return Status::Ok();
        return ctx.Upsert(target_container, std::move(copy));
      }
    }

    auto members = Members(*view_pk, ctx);
    if (!members.ok()) return members.status();
    const boost::json::object* member = nullptr;
    for (const boost::json::object* m : members->best_first) {
      if (views::DerivedFrom(*m, *this, change.partition_key, change.id)) member = m;
    }

    if (!competes) {
      if (member == nullptr) return Status::Ok();
      return Reconcile(*view_pk, members->Copies(), ctx);  // the next best one joins
    }

    boost::json::object copy = views::ShortForm(**source, *this);
    if (member != nullptr && Outranks(*member, copy)) {
      // A member moved down: a non-member may now outrank it.
      return Reconcile(*view_pk, members->Copies(), ctx);
    }
    bool full = members->best_first.size() >= cap;
    if (member == nullptr && full && !Outranks(copy, *members->best_first.back())) {
      return Status::Ok();  // an older item does not get in
    }
    const bool write_copy =
        member == nullptr || views::SourceLsnOf(*member) < views::ItemLsn(**source);
    // Trim back to the cap: the new view is the members plus the copy.
    std::vector<const boost::json::object*> ranked;
    for (const boost::json::object* m : members->best_first) {
      if (m->at("id").as_string() != change.id) ranked.push_back(m);
    }
    // They are best first: the copy takes its place among them (a new post
    // is usually the first).
    ranked.insert(std::find_if(ranked.begin(), ranked.end(),
                               [&](const boost::json::object* m) { return Outranks(copy, *m); }),
                  &copy);
    std::vector<std::string> evicted;
    for (size_t i = cap; i < ranked.size(); ++i) {
      evicted.emplace_back(ranked[i]->at("id").as_string());
    }
    // Let go of the answer before writing: held, it would be copied.
    members = MemberList{};
    if (write_copy) {
      if (Status s = ctx.Upsert(target_container, std::move(copy)); !s.ok()) return s;
    }
    for (const std::string& id : evicted) {
      if (Status s = ctx.Delete(target_container, *view_pk, id); !s.ok()) return s;
    }
    return Status::Ok();
  }

  // Writes only the difference from the current view
  // (views::kRebuildWritesPerCommit).
  Status Rebuild(ViewContext& ctx) const override {
    auto all = QueryAll(ctx, target_container, CopiesQuery(std::nullopt));
    if (!all.ok()) return all.status();
    auto expected = Expected(ctx, *all);
    if (!expected.ok()) return expected.status();
    std::map<std::string, std::vector<boost::json::object>> members;  // by view partition
    for (auto& item : *all) {
      if (auto pk = views::StringAt(item, target_pk)) members[*pk].push_back(std::move(item));
    }
    for (const auto& e : *expected) members[*views::StringAt(e, target_pk)];
    views::RebuildWriter writer(ctx);
    for (const auto& [pk, in_view] : members) {
      Status s = ReconcileWith(pk, in_view, *expected, Refresh::kWhenDifferent, writer);
      if (!s.ok()) return s;
    }
    return Status::Ok();
  }

  Status Verify(ViewContext& ctx, std::vector<std::string>* differences) const override {
    auto actual = QueryAll(ctx, target_container, CopiesQuery(std::nullopt));
    if (!actual.ok()) return actual.status();
    auto expected = Expected(ctx, *actual);
    if (!expected.ok()) return expected.status();
    SortBestFirst(&*actual);
    if (actual->size() != expected->size()) {
      differences->push_back(target_container + " holds " + std::to_string(actual->size()) +
                             " items, expected " + std::to_string(expected->size()));
    }
    for (size_t i = 0; i < std::min(actual->size(), expected->size()); ++i) {
      const auto& a = (*actual)[i];
      const auto& e = (*expected)[i];
      if (a.at("id") != e.at("id")) {
        differences->push_back(target_container + " rank " + std::to_string(i + 1) + " is " +
                               std::string(a.at("id").as_string()) + ", expected " +
                               std::string(e.at("id").as_string()));
      } else if (!views::SameView(a, e)) {
        differences->push_back(target_container + " item " + std::string(a.at("id").as_string()) +
                               " is " + boost::json::serialize(a) + ", expected " +
                               boost::json::serialize(e));
      }
    }
    return Status::Ok();
  }

 private:
  // a ranks before b: higher order_by value, then higher id.
  bool Outranks(const boost::json::object& a, const boost::json::object& b) const {
    int c = CompareJson(views::ValueAt(a, order_by), views::ValueAt(b, order_by));
    if (c != 0) return c > 0;
    return a.at("id").as_string() > b.at("id").as_string();
  }

  // Sorts `items` (objects, or pointers to them) best first, as Outranks()
  // orders them, finding each one's order_by value and id once instead of
  // in every comparison.
  template <typename T>
  void SortBestFirst(std::vector<T>* items) const {
    struct Rank {
      const boost::json::value* value;
      std::string_view id;
      size_t index;
    };
    auto object_of = [](const T& item) -> const boost::json::object& {
      if constexpr (std::is_pointer_v<T>) {
        return *item;
      } else {
        return item;
      }
    };
    std::vector<Rank> ranks;
    ranks.reserve(items->size());
    for (size_t i = 0; i < items->size(); ++i) {
      const boost::json::object& item = object_of((*items)[i]);
      const boost::json::value* id = item.if_contains("id");
      ranks.push_back({views::ValueAt(item, order_by),
                       id != nullptr && id->is_string() ? std::string_view(id->get_string())
                                                        : std::string_view(),
                       i});
    }
    auto better = [](const Rank& a, const Rank& b) {
      int c = CompareJson(a.value, b.value);
      if (c != 0) return c > 0;
      return a.id > b.id;
    };
    // A view's members, as its query returns them, are in order already.
    if (std::is_sorted(ranks.begin(), ranks.end(), better)) return;
    std::sort(ranks.begin(), ranks.end(), better);
    std::vector<T> sorted;
    sorted.reserve(items->size());
    for (const Rank& r : ranks) sorted.push_back(std::move((*items)[r.index]));
    *items = std::move(sorted);
  }

  // The view partition of the item when the change's images show it
  // matching the filter before and after, in the same view partition and
  // with an equal order_by value; nullopt otherwise (or when an image is
  // missing).
  std::optional<std::string> RankKeptAt(const Change& change) const {
    if (!change.before || !change.after) return std::nullopt;
    if (!MatchesFilters(*change.before, filter) || !MatchesFilters(*change.after, filter)) {
      return std::nullopt;
    }
    auto pk = views::StringAt(*change.after, target_pk);
    if (!pk || views::StringAt(*change.before, target_pk) != pk) return std::nullopt;
    if (CompareJson(views::ValueAt(*change.before, order_by),
                    views::ValueAt(*change.after, order_by)) != 0) {
      return std::nullopt;
    }
    return pk;
  }

  std::optional<std::string> ViewPartitionFromImages(const Change& change) const {
    for (const auto& image : {change.before, change.after}) {
      if (image && MatchesFilters(*image, filter)) {
        if (auto pk = views::StringAt(*image, target_pk)) return pk;
      }
    }
    return std::nullopt;
  }

  QuerySpec CopiesQuery(std::optional<std::string> pk) const {
    QuerySpec spec;
    spec.partition_key = std::move(pk);
    spec.filters = filter;
    spec.order_by = order_by;
    spec.descending = true;
    return spec;
  }

  // A view partition's members as read, best first.
  struct MemberList {
    ViewContext::SharedItems answer;                     // keeps them
    std::vector<const boost::json::object*> best_first;  // into `answer`

    std::vector<boost::json::object> Copies() const {
      std::vector<boost::json::object> copies;
      copies.reserve(best_first.size());
      for (const boost::json::object* m : best_first) copies.push_back(*m);
      return copies;
    }
  };

  // The members of the view partition `pk`: read for every new post, so
  // shared with the context, not copied.
  Result<MemberList> Members(const std::string& pk, ViewContext& ctx) const {
    auto answer = ctx.QueryAllShared(target_container, CopiesQuery(pk));
    if (!answer.ok()) return answer.status();
    MemberList members{std::move(*answer), {}};
    members.best_first.reserve(members.answer->size());
    for (const ViewContext::SharedItem& m : *members.answer) members.best_first.push_back(m.get());
    SortBestFirst(&members.best_first);
    return members;
  }

  // The best `cap` source items, in short form, best first; of the source
  // items that share an id, only one: the one whose copy `view` holds, else
  // the best-ranked one.
  Result<std::vector<boost::json::object>> Expected(
      ViewContext& ctx, const std::vector<boost::json::object>& view) const {
    // One scan in key order, ranked here: ordered by the store, each page
    // of a query across partitions would scan the whole container again.
    QuerySpec spec;
    spec.filters = filter;
    auto sources = QueryAll(ctx, source_container, spec);
    if (!sources.ok()) return sources.status();
    SortBestFirst(&*sources);
    std::set<std::pair<std::string, std::string>> present;  // (id, source partition key)
    for (const auto& s : *sources) {
      present.emplace(std::string(s.at("id").as_string()),
                      views::StringAt(s, source_pk).value_or(""));
    }
    std::map<std::string, std::string> incumbent;  // id -> source partition key of its copy
    for (const auto& m : view) {
      std::string id(m.at("id").as_string());
      auto pk = views::SourcePartitionKey(m, *this);
      if (pk && present.count({id, *pk}) != 0) incumbent[id] = *pk;
    }
    std::vector<boost::json::object> copies;
    std::set<std::string> ids;
    for (const auto& s : *sources) {
      if (copies.size() == cap) break;
      if (!views::StringAt(s, target_pk)) continue;
      std::string id(s.at("id").as_string());
      auto it = incumbent.find(id);
      if (ids.count(id) != 0 ||
          (it != incumbent.end() && it->second != views::StringAt(s, source_pk))) {
        continue;  // another source item with this id has the place
      }
      ids.insert(id);
      copies.push_back(views::ShortForm(s, *this));
    }
    return copies;
  }

  // The view partition holding the copy of a deleted source item: a scan.
  Result<std::optional<std::string>> FindMemberPartition(const Change& change,
                                                         ViewContext& ctx) const {
    QuerySpec spec;
    spec.filters.push_back({*JsonPointer::Parse("/id"), boost::json::value(change.id)});
    auto copies = QueryAll(ctx, target_container, spec);
    if (!copies.ok()) return copies.status();
    for (const auto& copy : *copies) {
      if (views::DerivedFrom(copy, *this, change.partition_key, change.id)) {
        return views::StringAt(copy, target_pk);
      }
    }
    return std::optional<std::string>();
  }

  // True when the member `m` is a copy of the source of `expected` (a copy).
  bool Shows(const boost::json::object& m, const boost::json::object& expected) const {
    return views::DerivedFrom(m, *this, views::SourcePartitionKey(expected, *this).value_or(""),
                              std::string(expected.at("id").as_string()));
  }

  // When a member that shows the right source is written again.
  enum class Refresh {
    kWhenOlder,      // its source version is older (changes: replays change nothing)
    kWhenDifferent,  // it differs from the expected copy or its version (rebuild)
  };

  // Makes the view partition `pk` equal to its recomputation from the source
  // (a scan; for the rare changes that can let a non-member in).
  Status Reconcile(const std::string& pk, const std::vector<boost::json::object>& members,
                   ViewContext& ctx) const {
    auto expected = Expected(ctx, members);
    if (!expected.ok()) return expected.status();
    views::RebuildWriter writer(ctx);
    return ReconcileWith(pk, members, *expected, Refresh::kWhenOlder, writer);
  }

  // Writes the difference between `members`, the view partition `pk`, and
  // the copies of `expected` that belong in it.
  Status ReconcileWith(const std::string& pk, const std::vector<boost::json::object>& members,
                       const std::vector<boost::json::object>& expected, Refresh refresh,
                       views::RebuildWriter& writer) const {
    std::map<std::string, const boost::json::object*> wanted;
    for (const auto& e : expected) {
      if (views::StringAt(e, target_pk) == pk) wanted[std::string(e.at("id").as_string())] = &e;
    }
    std::map<std::string, const boost::json::object*> present;
    for (const auto& m : members) present[std::string(m.at("id").as_string())] = &m;
    for (const auto& [id, m] : present) {
      auto it = wanted.find(id);
      if (it == wanted.end() || !Shows(*m, *it->second)) {
        if (Status s = writer.Delete(target_container, pk, id); !s.ok()) return s;
      }
    }
    for (const auto& [id, e] : wanted) {
      auto it = present.find(id);
      if (it != present.end() && Shows(*it->second, *e) &&
          (refresh == Refresh::kWhenOlder
               ? views::SourceLsnOf(*it->second) >= views::SourceLsnOf(*e)
               : views::SameViewAndVersion(*it->second, *e))) {
        continue;
      }
      if (Status s = writer.Upsert(target_container, *e); !s.ok()) return s;
    }
    return Status::Ok();
  }
};

Result<std::unique_ptr<ProcessorKind>> MakeTopN(const ProcessorSettings& s,
                                                const std::vector<ContainerSpec>& containers) {
  auto settings = views::ParseCopySettings(s, containers);
  if (!settings.ok()) return settings.status();
  auto order_by = views::PointerSetting(s, "order_by");
  if (!order_by.ok()) return order_by.status();
  auto kind = std::make_unique<TopN>();
  static_cast<views::CopySettings&>(*kind) = std::move(*settings);
  kind->filter_texts = views::TextFilters(kind->filter);
  kind->order_by = *order_by;
  std::string cap = s.Optional("cap", "100");
  try {
    size_t used = 0;
    kind->cap = std::stoul(cap, &used);
    if (used != cap.size() || kind->cap < 1 || kind->cap > kMaxCap) throw std::out_of_range("cap");
  } catch (const std::exception&) {
    return s.Error("cap",
                   "must be an integer 1.." + std::to_string(kMaxCap) + ", got '" + cap + "'");
  }
  return std::unique_ptr<ProcessorKind>(std::move(kind));
}

}  // namespace

FEEDD_REGISTER_PROCESSOR_KIND("top_n", MakeTopN);

}  // namespace feedd
