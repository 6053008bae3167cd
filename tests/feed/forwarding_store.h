// ForwardingStore: a DocumentStore that passes every call to another one,
// with a hook run before OnHeadReached() - to put a commit exactly in the
// window between a reader's last read and its head watch.
//
// Thread-safety: as the inner store; set the hook before sharing it.
// Ownership: borrows the inner store.
#pragma once

#include <functional>

#include "storage/document_store.h"

namespace feedd::testutil {

class ForwardingStore : public DocumentStore {
 public:
  explicit ForwardingStore(DocumentStore* inner) : inner_(inner) {}

  std::function<void(Lsn)> before_head_watch;  // called with the awaited LSN

  const std::vector<ContainerSpec>& containers() const override { return inner_->containers(); }
  const ContainerSpec* FindContainer(std::string_view name) const override {
    return inner_->FindContainer(name);
  }
  const StoreOptions& options() const override { return inner_->options(); }
  Status Read(std::string_view c, std::string_view pk, std::string_view id, std::string* json,
              Lsn* lsn) const override {
    return inner_->Read(c, pk, id, json, lsn);
  }
  Result<QueryResult> Query(std::string_view c, const QuerySpec& spec,
                            QueryCost* spent) const override {
    return inner_->Query(c, spec, spent);
  }
  void Submit(WriteRequest r, WriteCallback done) override {
    inner_->Submit(std::move(r), std::move(done));
  }
  void SubmitView(ViewWrite v, WriteCallback done) override {
    inner_->SubmitView(std::move(v), std::move(done));
  }
  void SubmitImport(ImportBatch b, ImportCallback done) override {
    inner_->SubmitImport(std::move(b), std::move(done));
  }
  Lsn HeadLsn() const override { return inner_->HeadLsn(); }
  Lsn OldestRetainedLsn() const override { return inner_->OldestRetainedLsn(); }
  Status ReadFeed(const FeedReadSpec& spec, FeedPage* page) const override {
    return inner_->ReadFeed(spec, page);
  }
  uint64_t OnHeadReached(Lsn lsn, std::function<void()> fn) override {
    if (before_head_watch) before_head_watch(lsn);
    return inner_->OnHeadReached(lsn, std::move(fn));
  }
  void CancelHeadWatch(uint64_t token) override { inner_->CancelHeadWatch(token); }
  uint64_t AddCommitListener(CommitListener listener) override {
    return inner_->AddCommitListener(std::move(listener));
  }
  void RemoveCommitListener(uint64_t token) override { inner_->RemoveCommitListener(token); }
  std::shared_ptr<CommitTailBudget> commit_tail_budget() const override {
    return inner_->commit_tail_budget();
  }
  Status RegisterConsumer(const std::string& name, Lsn acked) override {
    return inner_->RegisterConsumer(name, acked);
  }
  Status AckConsumer(const std::string& name, Lsn acked) override {
    return inner_->AckConsumer(name, acked);
  }
  Status UnregisterConsumer(const std::string& name) override {
    return inner_->UnregisterConsumer(name);
  }
  std::vector<ConsumerWatermark> Consumers() const override { return inner_->Consumers(); }
  Status PutParked(const std::string& consumer, const ParkedRecord& parked) override {
    return inner_->PutParked(consumer, parked);
  }
  Status DeleteParked(const std::string& consumer, Lsn lsn) override {
    return inner_->DeleteParked(consumer, lsn);
  }
  Result<std::vector<ParkedRecord>> ListParked(const std::string& consumer) const override {
    return inner_->ListParked(consumer);
  }
  Status EnforceRetention() override { return inner_->EnforceRetention(); }
  Status Health() const override { return inner_->Health(); }
  StoreStats Stats() const override { return inner_->Stats(); }
  std::vector<ContainerUsage> Usage() const override { return inner_->Usage(); }
  RocksDbHealth RocksHealth() const override { return inner_->RocksHealth(); }
  void Close() override { inner_->Close(); }

 private:
  DocumentStore* const inner_;
};

}  // namespace feedd::testutil
