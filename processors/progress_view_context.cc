#include "processors/progress_view_context.h"

#include <utility>

namespace feedd {

ProgressViewContext::ProgressViewContext(ViewContext* inner,
                                         const std::vector<std::string>& source_containers,
                                         AdminRun run)
    : inner_(inner),
      sources_(source_containers.begin(), source_containers.end()),
      run_(std::move(run)) {}

Status ProgressViewContext::Stopped() const {
  if (!run_.stop.stop_requested()) return Status::Ok();
  return Status(ErrorCode::kCancelled, "the job was cancelled");
}

void ProgressViewContext::Count(const std::string& container, uint64_t items) {
  if (items == 0 || sources_.count(container) == 0) return;
  source_items_read_ += items;
  if (run_.on_source_items) run_.on_source_items(items);
}

const ContainerSpec* ProgressViewContext::Container(const std::string& name) const {
  return inner_->Container(name);
}

Result<std::optional<boost::json::object>> ProgressViewContext::Read(
    const std::string& container, const std::string& partition_key, const std::string& id) {
  if (Status s = Stopped(); !s.ok()) return s;
  auto item = inner_->Read(container, partition_key, id);
  if (item.ok() && item->has_value()) Count(container, 1);
  return item;
}

Result<ViewQueryPage> ProgressViewContext::Query(const std::string& container,
                                                 const QuerySpec& spec) {
  if (Status s = Stopped(); !s.ok()) return s;
  auto page = inner_->Query(container, spec);
  if (page.ok()) Count(container, page->items.size());
  return page;
}

Status ProgressViewContext::Upsert(const std::string& container, boost::json::object item) {
  if (Status s = Stopped(); !s.ok()) return s;
  return inner_->Upsert(container, std::move(item));
}

Status ProgressViewContext::UpsertIfNewerSource(const std::string& container,
                                                boost::json::object item) {
  if (Status s = Stopped(); !s.ok()) return s;
  return inner_->UpsertIfNewerSource(container, std::move(item));
}

Status ProgressViewContext::SetField(const std::string& container, const std::string& partition_key,
                                     const std::string& id, const JsonPointer& field,
                                     boost::json::value value) {
  if (Status s = Stopped(); !s.ok()) return s;
  return inner_->SetField(container, partition_key, id, field, std::move(value));
}

Status ProgressViewContext::Delete(const std::string& container, const std::string& partition_key,
                                   const std::string& id) {
  if (Status s = Stopped(); !s.ok()) return s;
  return inner_->Delete(container, partition_key, id);
}

Status ProgressViewContext::Flush() {
  if (Status s = Stopped(); !s.ok()) return s;
  return inner_->Flush();
}

}  // namespace feedd
