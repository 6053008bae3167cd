// StagedReadsViewContext: a ViewContext over another one whose reads see the
// writes staged through it, so that several changes can be applied one after
// the other and committed together (KeyedApplier's batches, see
// ProcessorKind::MaxBatch()).
//
// Writes are passed on to the inner context at once, in order; this class
// only remembers their effect:
//   - Read() of an item written here returns the staged version (the item as
//     given: without _etag, _lsn and _ts; _sourceLsn and other fields kept),
//     or not-found after a Delete();
//   - Query() of a container with staged writes reads every page of the
//     inner query, replaces and removes the items written here, adds staged
//     items that match the partition key and the filters, orders the result
//     as the query engine does, and returns it as ONE page without a
//     continuation (callers use QueryAll() or ask for a whole small view).
//     Queries of other containers go to the inner context unchanged.
//     The inner results of a container with staged writes are kept until
//     Flush(): the inner state does not change under a batch, so a run of
//     changes reads a view once, not once per change.
//   - SetField() applies the field to the staged or current version.
//
// Thread-safety: one instance per batch, used by one thread.
// Ownership: borrows the inner context.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <tuple>

#include "processors/view_context.h"

namespace feedd {

class StagedReadsViewContext : public ViewContext {
 public:
  explicit StagedReadsViewContext(ViewContext* inner) : inner_(inner) {}

  const ContainerSpec* Container(const std::string& name) const override;
  Result<std::optional<boost::json::object>> Read(const std::string& container,
                                                  const std::string& partition_key,
                                                  const std::string& id) override;
  Result<ViewQueryPage> Query(const std::string& container, const QuerySpec& spec) override;
  Status Upsert(const std::string& container, boost::json::object item) override;
  Status SetField(const std::string& container, const std::string& partition_key,
                  const std::string& id, const JsonPointer& field,
                  boost::json::value value) override;
  Status Delete(const std::string& container, const std::string& partition_key,
                const std::string& id) override;
  Status Flush() override;

 private:
  // (container, partition key, id) -> the staged version; nullopt: deleted.
  using Key = std::tuple<std::string, std::string, std::string>;

  // The inner context's items for a query of a container with staged
  // writes (every page), by container and query.
  Result<const std::vector<boost::json::object>*> InnerItems(const std::string& container,
                                                             const QuerySpec& spec);

  ViewContext* const inner_;
  std::map<Key, std::optional<boost::json::object>> staged_;
  std::map<std::string, std::vector<boost::json::object>> inner_results_;
};

}  // namespace feedd
