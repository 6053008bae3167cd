// ProcessorKind: the logic of one kind of derived view, behind a small
// interface; kinds register by name (ProcessorRegistry) and are configured
// per instance ([processor.<name>] kind = ... plus the kind's settings).
// docs/processors.md explains how to add one.
//
// Contract for implementations
//   - Apply() is level-triggered: it reads the CURRENT state of the items the
//     change touches and recomputes the derived items, so duplicated,
//     replayed or reordered changes converge to the same views.
//   - Changes with the same OrderingKey() are applied in LSN order, one at a
//     time; changes with different keys may be applied concurrently.
//   - Apply() only stages writes through the ViewContext; a non-OK Status
//     discards them and the runtime retries (then parks) the change.
//
// Thread-safety: Apply(), Rebuild() and Verify() may run concurrently on
// different threads; implementations keep no mutable state.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "processors/change.h"
#include "processors/view_context.h"
#include "storage/query.h"

namespace feedd {

class ProcessorKind {
 public:
  virtual ~ProcessorKind() = default;

  // Containers whose changes this kind consumes.
  virtual std::vector<std::string> SourceContainers() const = 0;
  // Containers this kind writes (read-your-writes waits on them).
  virtual std::vector<std::string> TargetContainers() const = 0;
  // Changes with equal keys are applied in order, one at a time.
  virtual std::string OrderingKey(const Change& change) const = 0;

  // Whether several processes may apply changes of different partition
  // keys at the same time (feedd worker) and the view still converges. Not
  // so for a kind that keeps one view for all changes (top_n).
  virtual bool Distributable() const { return true; }

  // How many queued changes the runtime may apply in a row before committing
  // them together (one commit instead of one each). A batch may hold changes
  // of several ordering keys; those of one key are in order. Reads then see
  // the writes staged by the earlier changes of the batch
  // (StagedReadsViewContext): a kind may batch when its Apply() reads its
  // own views only through Read() and Query() and does not rely on _lsn,
  // _etag or _ts of items it wrote. If a batch fails, its changes are
  // applied again one at a time, so retries and parking stay per change.
  virtual size_t MaxBatch() const { return 1; }

  // The filter an image of a change to `container` (one of
  // SourceContainers()) must match for Apply() to have anything to do with
  // it (a view of posts: type=post; a comment is nothing to it), or none
  // when any change there may matter. The runtime counts a change that
  // carries the images its op implies, none of them matching, as applied
  // without an applier, and mostly without parsing it
  // (processors/concern_filter.h). Apply() must then indeed do nothing.
  virtual std::vector<FieldFilter> ConcernFilters(const std::string& container) const {
    (void)container;
    return {};
  }

  // True when Apply() of the change in `record` would stage nothing, told
  // from the record's text (storage/change_record.h: a compact, canonical
  // envelope) and from the current state read through `ctx`, without
  // parsing the record: a comment whose copy of its author's name is
  // already right, say. False whenever it cannot tell; the change then goes
  // to an applier. The in-daemon runtime asks this on the source pump for
  // a change its ConcernFilters() let through, and only while no earlier
  // change of the instance is still being applied, so `ctx` reads the state
  // Apply() would read in order; true counts the change as applied.
  // Implementations only read through `ctx`, and must answer as Apply()
  // would for the same current state (Apply() is level-triggered).
  virtual bool AppliedAlready(const ChangeRecord& record, ViewContext& ctx) const {
    (void)record;
    (void)ctx;
    return false;
  }

  virtual Status Apply(const Change& change, ViewContext& ctx) const = 0;
  // Derives the whole view from the current source state, writing only its
  // difference from the current view (views::RebuildWriter).
  virtual Status Rebuild(ViewContext& ctx) const = 0;
  // Recomputes the view from the sources and describes every difference.
  virtual Status Verify(ViewContext& ctx, std::vector<std::string>* differences) const = 0;
};

// The settings of one instance: [processor.<name>] key = value.
struct ProcessorSettings {
  std::string name;
  std::map<std::string, std::string> values;

  // The value of `key`, or an error naming processor.<name>.<key>.
  Result<std::string> Required(const std::string& key) const;
  std::string Optional(const std::string& key, const std::string& fallback) const;
  Status Error(const std::string& key, const std::string& what) const;
};

using ProcessorFactory = std::function<Result<std::unique_ptr<ProcessorKind>>(
    const ProcessorSettings& settings, const std::vector<ContainerSpec>& containers)>;

// Name -> factory. Kinds register at static-initialization time with
// FEEDD_REGISTER_PROCESSOR_KIND; lookups happen after main() starts.
// Register() refuses a name registered already: it prints which and aborts,
// so a build with two kinds under one name never starts. It returns true
// (the macro keeps it in a static).
class ProcessorRegistry {
 public:
  static bool Register(const std::string& kind, ProcessorFactory factory);
  static Result<std::unique_ptr<ProcessorKind>> Create(
      const std::string& kind, const ProcessorSettings& settings,
      const std::vector<ContainerSpec>& containers);
  static std::vector<std::string> Kinds();
};

#define FEEDD_REGISTER_PROCESSOR_KIND(kind, factory) \
  static const bool feedd_registered_##factory = ::feedd::ProcessorRegistry::Register(kind, factory)

}  // namespace feedd
