// ViewContext: what a processor kind may do while applying a change - read
// the current state of any container, and stage writes to its views. The
// runtime commits the staged writes atomically with the processor's applied
// watermark (DocumentStore::SubmitView) once Apply() returns OK, and drops
// them when it fails.
//
// Thread-safety: one ViewContext per apply; not shared between threads.
#pragma once

#include <boost/json/object.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "storage/container_spec.h"
#include "storage/json_pointer.h"
#include "storage/query.h"
#include "util/status.h"

namespace feedd {

// A page of query results, parsed.
struct ViewQueryPage {
  std::vector<boost::json::object> items;
  std::optional<std::string> continuation;
};

class ViewContext {
 public:
  virtual ~ViewContext() = default;

  virtual const ContainerSpec* Container(const std::string& name) const = 0;
  // The current version of an item (with system properties), or nullopt.
  virtual Result<std::optional<boost::json::object>> Read(const std::string& container,
                                                          const std::string& partition_key,
                                                          const std::string& id) = 0;
  virtual Result<ViewQueryPage> Query(const std::string& container, const QuerySpec& spec) = 0;

  // Read() and QueryAll() as immutable, shared answers, for reads repeated
  // for change after change (a top_n view's members, the user of every
  // comment): a context that keeps answers (StagedReadsViewContext) hands
  // out what it keeps instead of a copy. An answer is a snapshot: writes
  // staged after it do not change it. A query's answer shares its items one
  // by one, so an answer that differs from the last one by an item copies
  // pointers, not items. These defaults wrap what Read() and QueryAll()
  // return (a decorator that overrides those sees every read).
  using SharedItem = std::shared_ptr<const boost::json::object>;  // nullptr: not found
  using SharedItems = std::shared_ptr<const std::vector<SharedItem>>;
  virtual Result<SharedItem> ReadShared(const std::string& container,
                                        const std::string& partition_key, const std::string& id);
  virtual Result<SharedItems> QueryAllShared(const std::string& container, const QuerySpec& spec);

  // Staged writes. The item's partition key is read from the item itself.
  // Properties _etag, _lsn and _ts are dropped; other '_' properties (such
  // as _sourceLsn) are kept.
  virtual Status Upsert(const std::string& container, boost::json::object item) = 0;
  // Upsert() of a copy that carries _sourceLsn, the source version it shows,
  // under two conditions the store checks when it commits, so that the kind
  // need not read the stored item first:
  //   - a stored item with an equal or higher _sourceLsn is left as it is:
  //     the write does nothing (no error, no change record);
  //   - a stored item that is not derived from the copy's _source (a
  //     client's item, a copy of another source) is not overwritten: the
  //     commit fails with derived_item (IsCollision(), storage/
  //     derived_items.h), and the runtime parks the change.
  // An item without _sourceLsn is refused (internal).
  virtual Status UpsertIfNewerSource(const std::string& container, boost::json::object item) = 0;
  // Sets one field of an item, if the item still exists.
  virtual Status SetField(const std::string& container, const std::string& partition_key,
                          const std::string& id, const JsonPointer& field,
                          boost::json::value value) = 0;
  // Deletes an item, if it exists.
  virtual Status Delete(const std::string& container, const std::string& partition_key,
                        const std::string& id) = 0;
  // Commits what is staged so far (long rebuilds), keeping the watermark.
  virtual Status Flush() = 0;

  // A derived item the kind leaves out, without failing the change, because
  // its target is taken by an item of another source or a client's
  // (storage/derived_items.h). The runtime logs and counts each once the
  // change's effects are committed.
  void ReportCollision(std::string description) { collisions_.push_back(std::move(description)); }
  const std::vector<std::string>& collisions() const { return collisions_; }

 private:
  std::vector<std::string> collisions_;
};

// True when `status` is a collision: a copy refused because its target is
// not derived from the same source (derived_item). Retrying cannot fix it,
// so the runtime parks the change at once and counts it.
inline bool IsCollision(const Status& status) { return status.code() == ErrorCode::kDerivedItem; }

// Every item of `container` matching `spec` (following continuations).
Result<std::vector<boost::json::object>> QueryAll(ViewContext& ctx, const std::string& container,
                                                  QuerySpec spec);

}  // namespace feedd
