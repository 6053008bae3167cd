// StoreViewContext: the in-process ViewContext. Reads go straight to the
// DocumentStore; staged writes are committed by Commit() (or Flush()) as one
// DocumentStore::SubmitView together with the processor's watermark, as a
// processor's writes (WriteOrigin::kProcessor: derived items are its to write).
//
// Thread-safety: one instance per apply, used by one thread.
// Ownership: borrows the store.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <utility>

#include "processors/view_context.h"
#include "storage/document_store.h"

namespace feedd {

class StoreViewContext : public ViewContext {
 public:
  // `watermark` gives the LSN to record with each commit.
  StoreViewContext(DocumentStore* store, std::string consumer, std::function<Lsn()> watermark)
      : store_(store), consumer_(std::move(consumer)), watermark_(std::move(watermark)) {}

  const ContainerSpec* Container(const std::string& name) const override;
  Result<std::optional<boost::json::object>> Read(const std::string& container,
                                                  const std::string& partition_key,
                                                  const std::string& id) override;
  Result<ViewQueryPage> Query(const std::string& container, const QuerySpec& spec) override;
  Status Upsert(const std::string& container, boost::json::object item) override;
  // Sets WriteOp::source_lsn: the commit thread checks both conditions.
  Status UpsertIfNewerSource(const std::string& container, boost::json::object item) override;
  Status SetField(const std::string& container, const std::string& partition_key,
                  const std::string& id, const JsonPointer& field,
                  boost::json::value value) override;
  Status Delete(const std::string& container, const std::string& partition_key,
                const std::string& id) override;
  Status Flush() override { return Commit(); }

  // Commits the staged writes (if any) with the watermark.
  Status Commit();
  size_t writes_committed() const { return writes_committed_; }
  // Writes staged or committed through this context so far.
  size_t writes_made() const { return writes_committed_ + staged_ops_; }
  // Committed writes the store found nothing to do for: a delete of a
  // missing item, a field set on a missing item, a conditional upsert of a
  // copy no newer than the stored one.
  size_t writes_without_effect() const { return writes_without_effect_; }

 private:
  void Stage(const std::string& container, const std::string& pk, WriteOp op);
  Status StageUpsert(const std::string& container, boost::json::object item,
                     std::optional<Lsn> source_lsn);

  DocumentStore* const store_;
  const std::string consumer_;
  const std::function<Lsn()> watermark_;
  // (container, partition key) -> requests of at most kMaxBatchOperations ops.
  std::map<std::pair<std::string, std::string>, std::vector<WriteRequest>> staged_;
  size_t writes_committed_ = 0;
  size_t writes_without_effect_ = 0;
  size_t staged_ops_ = 0;
};

}  // namespace feedd
