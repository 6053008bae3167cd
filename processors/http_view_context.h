// HttpViewContext: the ViewContext of a processor running outside the daemon
// (feedd worker). Reads and queries go to the daemon's HTTP API; staged
// writes are sent by Commit() as one transactional batch per (container,
// partition key) - at most 100 ops each - using the batch extensions of
// docs/api.md: an upsert of an item with _sourceLsn carries "sourceLsn"
// (it never overwrites a copy of a newer source version), and SetField /
// Delete carry "ifExists" and, as "sourceLsn", the LSN of the change they
// apply: every op is a processor's (storage/derived_items.h). Batches of different partitions are
// not atomic together; every write is idempotent, so a retry after a partial commit converges.
//
// Thread-safety: one instance per apply, used by one thread.
// Ownership: borrows the client and the container list.
#pragma once

#include <boost/json/array.hpp>
#include <map>
#include <utility>
#include <vector>

#include "processors/view_context.h"
#include "storage/write_request.h"
#include "util/http_client.h"

namespace feedd {

class HttpViewContext : public ViewContext {
 public:
  // `change_lsn`: the change the staged writes apply (0 when nothing is written).
  HttpViewContext(HttpClient* client, const std::vector<ContainerSpec>* containers, Lsn change_lsn)
      : client_(client), containers_(containers), change_lsn_(change_lsn) {}

  const ContainerSpec* Container(const std::string& name) const override;
  Result<std::optional<boost::json::object>> Read(const std::string& container,
                                                  const std::string& partition_key,
                                                  const std::string& id) override;
  Result<ViewQueryPage> Query(const std::string& container, const QuerySpec& spec) override;
  Status Upsert(const std::string& container, boost::json::object item) override;
  // Upsert() already sends both conditions for an item with _sourceLsn.
  Status UpsertIfNewerSource(const std::string& container, boost::json::object item) override;
  Status SetField(const std::string& container, const std::string& partition_key,
                  const std::string& id, const JsonPointer& field,
                  boost::json::value value) override;
  Status Delete(const std::string& container, const std::string& partition_key,
                const std::string& id) override;
  Status Flush() override { return Commit(); }

  // Sends the staged writes. Superseded upserts (a newer source version is
  // stored) and deletes of missing items are not errors.
  Status Commit();
  // Items written (not counting superseded or missing ones).
  size_t writes_committed() const { return writes_committed_; }

 private:
  Status Stage(const std::string& container, const std::string& pk, boost::json::object op);

  HttpClient* const client_;
  const std::vector<ContainerSpec>* const containers_;
  const Lsn change_lsn_;
  std::map<std::pair<std::string, std::string>, boost::json::array> staged_;
  size_t writes_committed_ = 0;
};

// The container list of a running daemon (GET /v1/containers).
Result<std::vector<ContainerSpec>> FetchContainers(HttpClient& client);

}  // namespace feedd
