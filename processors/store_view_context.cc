#include "processors/store_view_context.h"

#include <boost/json.hpp>

#include "processors/kinds/view_helpers.h"
#include "util/json_parse.h"

namespace feedd {
namespace {

Result<boost::json::object> ParseItem(const std::string& json) {
  Result<boost::json::value> v = ParseJson(json);
  if (!v.ok()) return Status(ErrorCode::kStorageError, "stored item: " + v.status().message());
  if (!v->is_object()) return Status(ErrorCode::kStorageError, "stored item is not an object");
  return std::move(v->as_object());
}

}  // namespace

const ContainerSpec* StoreViewContext::Container(const std::string& name) const {
  return store_->FindContainer(name);
}

Result<std::optional<boost::json::object>> StoreViewContext::Read(const std::string& container,
                                                                  const std::string& partition_key,
                                                                  const std::string& id) {
  std::string json;
  Status s = store_->Read(container, partition_key, id, &json);
  if (s.code() == ErrorCode::kNotFound) return std::optional<boost::json::object>();
  if (!s.ok()) return s;
  auto item = ParseItem(json);
  if (!item.ok()) return item.status();
  return std::optional<boost::json::object>(std::move(*item));
}

Result<ViewQueryPage> StoreViewContext::Query(const std::string& container, const QuerySpec& spec) {
  auto result = store_->Query(container, spec);
  if (!result.ok()) return result.status();
  ViewQueryPage page;
  page.continuation = result->continuation;
  for (const auto& json : result->items) {
    auto item = ParseItem(json);
    if (!item.ok()) return item.status();
    page.items.push_back(std::move(*item));
  }
  return page;
}

void StoreViewContext::Stage(const std::string& container, const std::string& pk, WriteOp op) {
  auto& requests = staged_[{container, pk}];
  if (requests.empty() || requests.back().ops.size() >= kMaxBatchOperations) {
    requests.push_back(WriteRequest{container, pk, {}});
  }
  op.origin = WriteOrigin::kProcessor;
  requests.back().ops.push_back(std::move(op));
  ++staged_ops_;
}

Status StoreViewContext::Upsert(const std::string& container, boost::json::object item) {
  return StageUpsert(container, std::move(item), std::nullopt);
}

Status StoreViewContext::UpsertIfNewerSource(const std::string& container,
                                             boost::json::object item) {
  Result<uint64_t> source_lsn = views::RequiredSourceLsn(container, item);
  if (!source_lsn.ok()) return source_lsn.status();
  return StageUpsert(container, std::move(item), Lsn{*source_lsn});
}

Status StoreViewContext::StageUpsert(const std::string& container, boost::json::object item,
                                     std::optional<Lsn> source_lsn) {
  const ContainerSpec* spec = store_->FindContainer(container);
  if (spec == nullptr) {
    return Status(ErrorCode::kContainerNotFound, "container '" + container + "' does not exist");
  }
  auto prepared = PrepareDerivedItem(*spec, std::move(item), store_->options().max_item_bytes);
  if (!prepared.ok()) return prepared.status();
  WriteOp op;
  op.kind = WriteOpKind::kUpsert;
  op.id = prepared->id;
  op.source_lsn = source_lsn;
  std::string pk = prepared->partition_key;
  op.item = std::move(*prepared);
  Stage(container, pk, std::move(op));
  return Status::Ok();
}

Status StoreViewContext::SetField(const std::string& container, const std::string& partition_key,
                                  const std::string& id, const JsonPointer& field,
                                  boost::json::value value) {
  WriteOp op;
  op.kind = WriteOpKind::kPatch;
  op.id = id;
  op.if_exists = true;
  op.patch.push_back(PatchOp{PatchOpKind::kSet, field, std::move(value)});
  Stage(container, partition_key, std::move(op));
  return Status::Ok();
}

Status StoreViewContext::Delete(const std::string& container, const std::string& partition_key,
                                const std::string& id) {
  WriteOp op;
  op.kind = WriteOpKind::kDelete;
  op.id = id;
  op.if_exists = true;
  Stage(container, partition_key, std::move(op));
  return Status::Ok();
}

Status StoreViewContext::Commit() {
  if (staged_.empty()) return Status::Ok();
  ViewWrite view;
  view.consumer = consumer_;
  view.consumer_acked = watermark_();
  size_t ops = 0;
  for (auto& [key, requests] : staged_) {
    for (auto& r : requests) {
      ops += r.ops.size();
      view.requests.push_back(std::move(r));
    }
  }
  staged_.clear();
  staged_ops_ = 0;
  WriteResult result = store_->WriteView(std::move(view));
  if (!result.status.ok()) return result.status;
  writes_committed_ += ops;
  for (const OpResult& op : result.results) {
    if (op.lsn == 0) ++writes_without_effect_;
  }
  return Status::Ok();
}

}  // namespace feedd
