#include "processors/view_context.h"

namespace feedd {

Result<std::vector<boost::json::object>> QueryAll(ViewContext& ctx, const std::string& container,
                                                  QuerySpec spec) {
  std::vector<boost::json::object> all;
  spec.limit = kMaxQueryLimit;
  spec.continuation.clear();
  for (;;) {
    auto page = ctx.Query(container, spec);
    if (!page.ok()) return page.status();
    for (auto& item : page->items) all.push_back(std::move(item));
    if (!page->continuation) return all;
    spec.continuation = *page->continuation;
  }
}

Result<ViewContext::SharedItem> ViewContext::ReadShared(const std::string& container,
                                                        const std::string& partition_key,
                                                        const std::string& id) {
  auto item = Read(container, partition_key, id);
  if (!item.ok()) return item.status();
  if (!*item) return SharedItem();
  return SharedItem(std::make_shared<const boost::json::object>(std::move(**item)));
}

Result<ViewContext::SharedItems> ViewContext::QueryAllShared(const std::string& container,
                                                             const QuerySpec& spec) {
  auto items = QueryAll(*this, container, spec);
  if (!items.ok()) return items.status();
  auto shared = std::make_shared<std::vector<SharedItem>>();
  shared->reserve(items->size());
  for (boost::json::object& item : *items) {
    shared->push_back(std::make_shared<const boost::json::object>(std::move(item)));
  }
  return SharedItems(std::move(shared));
}

}  // namespace feedd
