// QueryEngine: runs a QuerySpec against one container and accounts for what
// it read (docs/api.md, "Query"). A query reads through one RocksDB
// iterator, a consistent view of the point it was made; an index scan then
// reads each entry's item as it is when read, and checks the filters on it.
// No query takes an explicit snapshot: in RocksDB 7.8 releasing one has
// every bottommost file whose sequence numbers are not zeroed rewritten
// (the change feed's reach the last level by trivial moves).
//
// Access paths, in order of preference: a scan of one logical partition
// (partitionKey given), a secondary-index lookup (the first filter on an
// indexed path), a full scan of the container.
//
// Limits (spec.limits): a query with too many filters does not run; one that
// reads past its items or bytes budget stops with query_too_expensive; a page
// ends before its items exceed max_page_bytes (it always holds at least one
// item, and its continuation resumes right after its last item).
//
// Thread-safety: stateless apart from the borrowed database; Run() may be
// called from any number of threads. Internal to storage/.
#pragma once

#include <vector>

#include "storage/query.h"
#include "storage/rocks_database.h"

namespace feedd {

class QueryEngine {
 public:
  explicit QueryEngine(const RocksDatabase* db) : db_(db) {}

  // Whether `spec` may run at all: its limit, and its filters against
  // spec.limits.max_filters (query_too_expensive). Reads nothing.
  static Status Admit(const QuerySpec& spec);
  // Admit(), then the query. Past spec.limits' budget it stops with
  // query_too_expensive. *spent, when given, is set to what the query cost,
  // on failure too (zero when nothing was read). *rows, when given, is set
  // to the row of each item of the answer, in its order (for the query
  // cache, which keeps an answer current with them).
  Result<QueryResult> Run(const ContainerHandle& container, const QuerySpec& spec,
                          QueryCost* spent = nullptr, std::vector<QueryRow>* rows = nullptr) const;

 private:
  const RocksDatabase* const db_;
};

}  // namespace feedd
