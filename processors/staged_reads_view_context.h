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
//     The answer is kept until Flush(), and each later write moves the item
//     in, within or out of it: the inner state does not change under a
//     batch, so a run of changes reads a view once, not once per change.
//   - SetField() applies the field to the staged or current version.
//
// With a ViewReadMemo of queries, every single-partition query takes that path, and
// its inner result comes from the memo when the memo holds the partition's
// current generation. After the inner context committed the batch, Committed()
// keeps each such result, with the batch's writes applied, as the
// partition's new state - when the partition's generation grew by exactly
// the changes this context made to it, i.e. nobody else changed it since it
// was read. With a ViewReadMemo of items, a Read() of an item not written
// here is answered from it while the item is unchanged (its generation), and kept
// in it otherwise - except reads that would only miss again: of the item
// whose change is being applied (Applying()) and of the containers the
// processor writes itself (`unkept`), which change with its own writes.
//
// Thread-safety: one instance per batch, used by one thread.
// Ownership: borrows the inner context and the memos.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "processors/change.h"
#include "processors/view_context.h"
#include "processors/view_read_memo.h"

namespace feedd {

class StagedReadsViewContext : public ViewContext {
 public:
  explicit StagedReadsViewContext(ViewContext* inner, ViewReadMemo* query_memo = nullptr,
                                  ViewReadMemo* item_memo = nullptr,
                                  const std::set<std::string>* unkept = nullptr)
      : inner_(inner), query_memo_(query_memo), item_memo_(item_memo), unkept_(unkept) {}

  const ContainerSpec* Container(const std::string& name) const override;
  Result<std::optional<boost::json::object>> Read(const std::string& container,
                                                  const std::string& partition_key,
                                                  const std::string& id) override;
  Result<ViewQueryPage> Query(const std::string& container, const QuerySpec& spec) override;
  // Without a copy: a kept item, or the batch's answer to a query (a later
  // write here copies the answer before it moves an item in or out).
  Result<SharedItem> ReadShared(const std::string& container, const std::string& partition_key,
                                const std::string& id) override;
  Result<SharedItems> QueryAllShared(const std::string& container, const QuerySpec& spec) override;
  Status Upsert(const std::string& container, boost::json::object item) override;
  // Staged as Upsert() stages it; a later Read() here sees it even if the
  // store will leave a newer stored copy in its place.
  Status UpsertIfNewerSource(const std::string& container, boost::json::object item) override;
  Status SetField(const std::string& container, const std::string& partition_key,
                  const std::string& id, const JsonPointer& field,
                  boost::json::value value) override;
  Status Delete(const std::string& container, const std::string& partition_key,
                const std::string& id) override;
  Status Flush() override;

  // The change applied next: a read of its item is not kept in the item memo.
  void Applying(const Change& change) { applying_ = &change; }

  // After the inner context committed everything staged: hands the query memo
  // what this batch read and wrote (see above). `every_write_took_effect`:
  // the store changed something for each staged write (else an answer here
  // may show a write the store skipped, and none is kept). Ends the use of
  // the context.
  void Committed(bool every_write_took_effect);

 private:
  // (container, partition key, id) -> the staged version; nullopt: deleted.
  using Key = std::tuple<std::string, std::string, std::string>;

  // The answer to one query in this batch: the inner context's (every page)
  // with the writes staged here applied, kept in order as they are staged.
  struct QueryState {
    std::string container;
    QuerySpec spec;  // the whole answer: no limit, no continuation
    JsonPointer pk_pointer;
    std::optional<uint64_t> generation;  // of the partition when the inner answer was read
    std::vector<std::string> keys;       // QueryRowKey() of each item
    // Shared with the callers of QueryAllShared(): copied (its pointers)
    // before a change while they hold it.
    std::shared_ptr<std::vector<SharedItem>> items;
  };

  // Whether Query() of `container` with `spec` is answered here (Answer()),
  // not by the inner context.
  bool Answers(const std::string& container, const QuerySpec& spec) const;
  // The state of the query, read (from the memo or the inner context) on
  // first use.
  Result<QueryState*> Answer(const std::string& container, const QuerySpec& spec);
  // Where Read() finds an item: a version staged here (`staged`), a kept one
  // (`kept`: the memo's answer, one item or none), or the inner context's.
  struct Found {
    const SharedItem* staged = nullptr;  // into staged_
    ViewReadMemo::Items kept;
    std::optional<boost::json::object> inner;
    // The applying change's after-image (null: deleted), when the item has
    // not changed since that change.
    bool from_change = false;
    SharedItem change_image;
  };
  Result<Found> Find(const std::string& container, const std::string& partition_key,
                     const std::string& id);
  // True when the query selects `item` of `partition_key`.
  static bool Selects(const QueryState& state, const std::string& partition_key,
                      const boost::json::object& item);
  // After staged_ took a new version of an item (nullopt: deleted): counts
  // the change and moves the item in, within or out of each query's answer.
  void Staged(const std::string& container, const std::string& partition_key,
              const std::string& id);
  // Upsert() and UpsertIfNewerSource(): `upsert` passes the item on to the
  // inner context.
  Status StageUpsert(const std::string& container, boost::json::object item,
                     Status (ViewContext::*upsert)(const std::string&, boost::json::object));

  ViewContext* const inner_;
  ViewReadMemo* const query_memo_;
  ViewReadMemo* const item_memo_;
  const std::set<std::string>* const unkept_;  // containers whose reads are not kept
  const Change* applying_ = nullptr;
  std::map<Key, SharedItem> staged_;           // nullptr: deleted
  std::map<std::string, QueryState> queries_;  // by container and query
  // Changes made here since the last Flush(), by (container, partition key).
  std::map<std::pair<std::string, std::string>, uint64_t> changes_;
};

}  // namespace feedd
