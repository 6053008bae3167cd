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

}  // namespace feedd
