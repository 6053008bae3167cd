// ProgressViewContext: a ViewContext decorator for a kind's long runs
// (ProcessorKind::Rebuild and Verify, run as jobs: docs/api.md, "Jobs").
// It passes every call to the inner context, and
//   - counts the items of the kind's source containers that Read() (an item
//     found) and Query() (the items of each page) return, and reports each
//     count to AdminRun::on_source_items as it goes;
//   - checks AdminRun::stop before every call: once a stop is requested,
//     every call fails with kCancelled and passes nothing on, so a Flush()
//     commits nothing more and the kind returns the error at its next call.
// Collisions the kind reports go to this context (ViewContext::collisions()).
//
// Thread-safety: one instance per run, used by one thread; on_source_items
// is called on that thread.
// Ownership: borrows the inner context.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <stop_token>
#include <string>
#include <vector>

#include "processors/view_context.h"

namespace feedd {

// What a rebuild or verify listens to and reports to (both optional).
struct AdminRun {
  std::stop_token stop;  // a requested stop ends the run with kCancelled
  std::function<void(uint64_t items)> on_source_items;  // source items read
};

class ProgressViewContext : public ViewContext {
 public:
  ProgressViewContext(ViewContext* inner, const std::vector<std::string>& source_containers,
                      AdminRun run);

  const ContainerSpec* Container(const std::string& name) const override;
  Result<std::optional<boost::json::object>> Read(const std::string& container,
                                                  const std::string& partition_key,
                                                  const std::string& id) override;
  Result<ViewQueryPage> Query(const std::string& container, const QuerySpec& spec) override;
  Status Upsert(const std::string& container, boost::json::object item) override;
  Status UpsertIfNewerSource(const std::string& container, boost::json::object item) override;
  Status SetField(const std::string& container, const std::string& partition_key,
                  const std::string& id, const JsonPointer& field,
                  boost::json::value value) override;
  Status Delete(const std::string& container, const std::string& partition_key,
                const std::string& id) override;
  Status Flush() override;

  // Source items read so far.
  uint64_t source_items_read() const { return source_items_read_; }

 private:
  // kCancelled once a stop is requested, else OK.
  Status Stopped() const;
  void Count(const std::string& container, uint64_t items);

  ViewContext* const inner_;
  const std::set<std::string> sources_;
  const AdminRun run_;
  uint64_t source_items_read_ = 0;
};

}  // namespace feedd
