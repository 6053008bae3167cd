// Kind "projection": a short-form copy of every matching source item in a
// target container, in the partition its own fields name - e.g. every post
// copied into its author's partition of `users`, content truncated.
//
// Settings (processor.<name>.*):
//   source_container   (posts)
//   source_filter      which items are copied, field=value (type=post)
//   target_container   (users); the copy's partition key is read from the
//                      copy at the target's partition key path (/userId)
//   truncate_field     optional string field to cut (/content)
//   truncate_chars     its length in Unicode code points (200)
//
// Copies have the source's id and carry _sourceLsn, the _lsn of the source
// version they show, and _source, the source item. A copy is rewritten only
// when the source is newer, and removed when the source is deleted or stops
// matching. It never overwrites an item that is not a copy of the same
// source (a client's item, or a copy of another source with the same id).
// Apply() leaves both to the store (ViewContext::UpsertIfNewerSource), so it
// does not read the copy it writes: a collision fails the commit
// (derived_item, the change is parked);
// Rebuild() leaves it out and reports it; Verify() does not count it as a
// difference.
#include <boost/json.hpp>
#include <map>
#include <set>

#include "processors/kinds/view_helpers.h"
#include "processors/processor_kind.h"
#include "storage/query_semantics.h"

namespace feedd {
namespace {

class Projection : public ProcessorKind, public views::CopySettings {
 public:
  std::vector<std::string> SourceContainers() const override { return {source_container}; }
  std::vector<std::string> TargetContainers() const override { return {target_container}; }
  std::string OrderingKey(const Change& c) const override { return c.partition_key + "/" + c.id; }
  // Apply() reads its view only through Read() and keeps no state of its own.
  size_t MaxBatch() const override { return 256; }

  std::vector<FieldFilter> ConcernFilters(const std::string&) const override { return filter; }

  Status Apply(const Change& change, ViewContext& ctx) const override {
    if (views::OutsideFilter(change, filter)) return Status::Ok();  // a comment, say
    auto source = ctx.Read(change.container, change.partition_key, change.id);
    if (!source.ok()) return source.status();
    std::optional<std::string> copy_pk;
    if (*source && MatchesFilters(**source, filter)) {
      copy_pk = views::StringAt(**source, target_pk);
    }
    // Where copies of earlier matching versions may live: remove those that
    // moved away (only this source's copies: ids are unique per partition).
    for (const auto& image : {change.before, change.after}) {
      if (!image || !MatchesFilters(*image, filter)) continue;
      auto old_pk = views::StringAt(*image, target_pk);
      if (!old_pk || old_pk == copy_pk) continue;
      auto copy = ctx.Read(target_container, *old_pk, change.id);
      if (!copy.ok()) return copy.status();
      if (*copy && views::DerivedFrom(**copy, *this, change.partition_key, change.id)) {
        if (Status s = ctx.Delete(target_container, *old_pk, change.id); !s.ok()) return s;
      }
    }
    if (!copy_pk) {
      // No longer a member, and no before-image says where its copy was.
      if (!change.before && change.op != ChangeOp::kCreate) {
        return RemoveEverywhere(change.id, change.partition_key, ctx);
      }
      return Status::Ok();
    }
    // The store leaves a copy of this version or a newer one as it is, and
    // refuses to overwrite an item that is not a copy of this source.
    return ctx.UpsertIfNewerSource(target_container, views::ShortForm(**source, *this));
  }

  // Writes only the difference between the copies there are and the copies
  // there should be (views::kRebuildWritesPerCommit).
  Status Rebuild(ViewContext& ctx) const override {
    QuerySpec spec;
    spec.filters = filter;
    auto sources = QueryAll(ctx, source_container, spec);
    if (!sources.ok()) return sources.status();
    auto copies = Copies(ctx);
    if (!copies.ok()) return copies.status();
    std::map<std::string, const boost::json::object*> actual;
    for (const auto& copy : *copies) actual[Key(copy)] = &copy;

    // The source each copy shows: the one the current copy is of, else the
    // first in query order; the other sources with that copy are left out.
    std::map<std::string, const boost::json::object*> chosen;
    for (const auto& source : *sources) {
      auto pk = views::StringAt(source, target_pk);
      if (!pk) continue;
      std::string key = *pk + "/" + std::string(source.at("id").as_string());
      auto [it, first] = chosen.emplace(key, &source);
      if (first) continue;
      auto current = actual.find(key);
      const bool incumbent = current != actual.end() && IsCopyOf(*current->second, source);
      const boost::json::object& left_out = incumbent ? *it->second : source;
      if (incumbent) it->second = &source;
      ctx.ReportCollision("collision: " + source_container + "/" +
                          views::StringAt(left_out, source_pk).value_or("") + "/" +
                          std::string(left_out.at("id").as_string()) + " has the same copy " +
                          target_container + "/" + key + " as another source item; left out");
    }

    views::RebuildWriter writer(ctx);
    for (const auto& [key, source] : chosen) {
      std::string pk = *views::StringAt(*source, target_pk);
      std::string id(source->at("id").as_string());
      boost::json::object expected = views::ShortForm(*source, *this);
      auto it = actual.find(key);
      if (it == actual.end()) {
        auto existing = ctx.Read(target_container, pk, id);
        if (!existing.ok()) return existing.status();
        if (*existing) {  // a client's item
          std::string source_key = views::StringAt(*source, source_pk).value_or("");
          ctx.ReportCollision(views::Collision(*this, **existing, source_key, id).message());
          continue;
        }
      } else if (views::SameViewAndVersion(*it->second, expected)) {
        continue;
      }
      if (Status s = writer.Upsert(target_container, std::move(expected)); !s.ok()) return s;
    }
    for (const auto& [key, copy] : actual) {
      if (chosen.count(key) != 0) continue;
      auto pk = views::StringAt(*copy, target_pk);
      if (!pk) continue;
      Status s = writer.Delete(target_container, *pk, std::string(copy->at("id").as_string()));
      if (!s.ok()) return s;
    }
    return Status::Ok();
  }

  Status Verify(ViewContext& ctx, std::vector<std::string>* differences) const override {
    QuerySpec spec;
    spec.filters = filter;
    auto sources = QueryAll(ctx, source_container, spec);
    if (!sources.ok()) return sources.status();
    auto copies = Copies(ctx);
    if (!copies.ok()) return copies.status();
    std::map<std::string, const boost::json::object*> actual;
    for (const auto& copy : *copies) actual[Key(copy)] = &copy;
    std::set<std::string> matched;
    for (const auto& source : *sources) {
      auto pk = views::StringAt(source, target_pk);
      if (!pk) continue;
      boost::json::object expected = views::ShortForm(source, *this);
      std::string id(source.at("id").as_string());
      std::string source_key = views::StringAt(source, source_pk).value_or("");
      std::string key = *pk + "/" + id;
      auto it = actual.find(key);
      if (it == actual.end()) {
        // A client's item in its place is a collision (refused and parked
        // when it happened), not a difference.
        auto existing = ctx.Read(target_container, *pk, id);
        if (!existing.ok()) return existing.status();
        if (!*existing) differences->push_back(target_container + " lacks the copy " + key);
      } else if (views::DerivedFrom(*it->second, *this, source_key, id)) {
        if (!views::SameView(*it->second, expected)) {
          differences->push_back(target_container + " copy " + key + " is " +
                                 boost::json::serialize(*it->second) + ", expected " +
                                 boost::json::serialize(expected));
        }
        matched.insert(key);
      }  // else a copy of another source with the same id: a collision
    }
    for (const auto& [key, copy] : actual) {
      if (matched.count(key) == 0) {
        differences->push_back(target_container + " holds the stray copy " + key);
      }
    }
    return Status::Ok();
  }

 private:
  std::string Key(const boost::json::object& item) const {
    return views::StringAt(item, target_pk).value_or("") + "/" +
           std::string(item.at("id").as_string());
  }

  bool IsCopyOf(const boost::json::object& copy, const boost::json::object& source) const {
    return views::DerivedFrom(copy, *this, views::StringAt(source, source_pk).value_or(""),
                              std::string(source.at("id").as_string()));
  }

  // The copies in the target: items with _sourceLsn that match the filter.
  Result<std::vector<boost::json::object>> Copies(ViewContext& ctx) const {
    QuerySpec spec;
    spec.filters = filter;
    auto items = QueryAll(ctx, target_container, spec);
    if (!items.ok()) return items.status();
    std::vector<boost::json::object> copies;
    for (auto& item : *items) {
      if (item.contains(views::kSourceLsnField)) copies.push_back(std::move(item));
    }
    return copies;
  }

  // Without any image (before-images off), find the copy by id: a scan.
  Status RemoveEverywhere(const std::string& id, const std::string& source_partition_key,
                          ViewContext& ctx) const {
    QuerySpec spec;
    spec.filters.push_back({*JsonPointer::Parse("/id"), boost::json::value(id)});
    auto items = QueryAll(ctx, target_container, spec);
    if (!items.ok()) return items.status();
    for (const auto& item : *items) {
      if (!views::DerivedFrom(item, *this, source_partition_key, id)) continue;
      if (Status s = DeleteItem(item, ctx); !s.ok()) return s;
    }
    return Status::Ok();
  }

  Status DeleteItem(const boost::json::object& item, ViewContext& ctx) const {
    auto pk = views::StringAt(item, target_pk);
    if (!pk) return Status::Ok();
    return ctx.Delete(target_container, *pk, std::string(item.at("id").as_string()));
  }
};

Result<std::unique_ptr<ProcessorKind>> MakeProjection(
    const ProcessorSettings& s, const std::vector<ContainerSpec>& containers) {
  auto settings = views::ParseCopySettings(s, containers);
  if (!settings.ok()) return settings.status();
  auto kind = std::make_unique<Projection>();
  static_cast<views::CopySettings&>(*kind) = std::move(*settings);
  return std::unique_ptr<ProcessorKind>(std::move(kind));
}

}  // namespace

FEEDD_REGISTER_PROCESSOR_KIND("projection", MakeProjection);

}  // namespace feedd
