// QueryEngine: runs a QuerySpec against one container on a consistent
// RocksDB snapshot and accounts for what it read (docs/api.md, "Query").
//
// Access paths, in order of preference: a scan of one logical partition
// (partitionKey given), a secondary-index lookup (the first filter on an
// indexed path), a full scan of the container.
//
// Thread-safety: stateless apart from the borrowed database; Run() may be
// called from any number of threads. Internal to storage/.
#pragma once

#include "storage/query.h"
#include "storage/rocks_database.h"

namespace feedd {

class QueryEngine {
 public:
  explicit QueryEngine(const RocksDatabase* db) : db_(db) {}

  Result<QueryResult> Run(const ContainerHandle& container, const QuerySpec& spec) const;

 private:
  const RocksDatabase* const db_;
};

}  // namespace feedd
