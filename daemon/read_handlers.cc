// The read routes of ApiRouter: point read and query, with read-your-writes
// on derived views (X-Feedd-Min-Lsn / X-Feedd-Wait-Ms).
#include <boost/json/value.hpp>
#include <optional>

#include "daemon/api_router.h"
#include "daemon/http_util.h"
#include "storage/etag.h"

namespace feedd {
namespace {

constexpr uint64_t kDefaultLsnWaitMs = 5000;
constexpr uint64_t kMaxLsnWaitMs = 60000;

// What a read asked to wait for.
struct ReadAfter {
  std::optional<Lsn> min_lsn;  // X-Feedd-Min-Lsn
  std::chrono::milliseconds wait{kDefaultLsnWaitMs};
};

Result<ReadAfter> ParseReadAfter(const HttpRequest& request) {
  ReadAfter out;
  if (std::optional<std::string_view> header = request.Header("X-Feedd-Min-Lsn")) {
    uint64_t lsn = 0;
    if (!ParseUint64(*header, &lsn)) {
      return Status(
          ErrorCode::kInvalidRequest,
          "X-Feedd-Min-Lsn must be a non-negative integer, got '" + std::string(*header) + "'");
    }
    out.min_lsn = lsn;
  }
  if (std::optional<std::string_view> header = request.Header("X-Feedd-Wait-Ms")) {
    uint64_t ms = 0;
    if (!ParseUint64(*header, &ms) || ms > kMaxLsnWaitMs) {
      return Status(ErrorCode::kInvalidRequest, "X-Feedd-Wait-Ms must be an integer in 0.." +
                                                    std::to_string(kMaxLsnWaitMs) + ", got '" +
                                                    std::string(*header) + "'");
    }
    out.wait = std::chrono::milliseconds(ms);
  }
  return out;
}

// {"itemsRead":n,...}: what a query cost, in a page and in a
// query_too_expensive error.
std::string CostJson(const QueryCost& cost, bool cached) {
  std::string out = R"({"itemsRead":)" + std::to_string(cost.items_read);
  out += R"(,"indexEntriesRead":)" + std::to_string(cost.index_entries_read);
  out += R"(,"bytesRead":)" + std::to_string(cost.bytes_read);
  out += R"(,"partitionsScanned":)" + std::to_string(cost.partitions_scanned);
  out += cached ? R"(,"cached":true})" : R"(,"cached":false})";
  return out;
}

std::string QueryResponseJson(const QueryResult& result) {
  size_t size = 192;
  for (const std::string& item : result.items) size += item.size() + 1;
  std::string body;
  body.reserve(size);
  body += R"({"items":[)";
  for (size_t i = 0; i < result.items.size(); ++i) {
    if (i > 0) body += ',';
    body += result.items[i];
  }
  body += R"(],"continuation":)";
  body += result.continuation ? JsonString(*result.continuation) : "null";
  body += R"(,"cost":)" + CostJson(result.cost, result.cached) + "}";
  return body;
}

// The error body, plus "cost" (what the query read before it was stopped)
// for query_too_expensive.
HttpResponse QueryErrorResponse(const Status& status, const QueryCost& spent) {
  HttpResponse response = ErrorResponse(status);
  if (status.code() == ErrorCode::kQueryTooExpensive) {
    response.body.resize(response.body.size() - 2);  // "}}"
    response.body += R"(,"cost":)" + CostJson(spent, false) + "}}";
  }
  return response;
}

}  // namespace

void ApiRouter::AddParkedHeader(const std::string& container, std::optional<Lsn> min_lsn,
                                HttpResponse* response) const {
  if (!min_lsn) return;
  if (std::optional<std::string> parked = ParkedAtOrBelow(container, *min_lsn)) {
    response->headers.push_back({"X-Feedd-Parked", std::move(*parked)});
  }
}

void ApiRouter::GetItem(const ContainerSpec& spec, const std::string& pk, const std::string& id,
                        const HttpRequest& request, Responder responder) {
  Result<ReadAfter> after = ParseReadAfter(request);
  if (!after.ok()) return responder.Send(ErrorResponse(after.status()));

  auto pending = std::make_shared<Responder>(std::move(responder));
  auto read = [this, container = spec.name, pk, id, min_lsn = after->min_lsn,
               pending](const Status& waited) {
    if (!waited.ok()) return pending->Send(ErrorResponse(waited));
    std::string item;
    Lsn item_lsn = 0;
    Status status = store_->Read(container, pk, id, &item, &item_lsn);
    if (!status.ok()) return pending->Send(ErrorResponse(status));
    HttpResponse response = JsonResponse(200, std::move(item));
    response.headers.push_back({"ETag", EtagOf(item_lsn)});
    AddParkedHeader(container, min_lsn, &response);
    pending->Send(std::move(response));
  };
  if (after->min_lsn) {
    return WaitForDerivedViews(spec.name, *after->min_lsn, after->wait, pending, read);
  }
  read(Status::Ok());
}

void ApiRouter::AnswerQuery(const std::string& container, const QuerySpec& query,
                            std::optional<Lsn> min_lsn, Responder& responder) {
  QueryCost spent;
  Result<QueryResult> result = store_->Query(container, query, &spent);
  if (!result.ok()) return responder.Send(QueryErrorResponse(result.status(), spent));
  HttpResponse response = JsonResponse(200, QueryResponseJson(*result));
  AddParkedHeader(container, min_lsn, &response);
  responder.Send(std::move(response));
}

void ApiRouter::QueryItems(const ContainerSpec& spec, const HttpRequest& request,
                           Responder responder) {
  Result<ReadAfter> after = ParseReadAfter(request);
  if (!after.ok()) return responder.Send(ErrorResponse(after.status()));
  Result<boost::json::value> body = ParseRequestJson(request);
  if (!body.ok()) return responder.Send(ErrorResponse(body.status()));
  if (!body->is_object()) {
    return responder.Send(
        ErrorResponse(Status(ErrorCode::kInvalidRequest, "a query must be a JSON object")));
  }
  Result<QuerySpec> query = ParseQuerySpec(*body);
  if (!query.ok()) return responder.Send(ErrorResponse(query.status()));
  query->limits = options_.query_limits;

  // A query of one partition runs here, on the I/O thread: it reads one
  // partition within its budget, or a kept answer (a thread hop cost it
  // 0.63x the req/s at one connection, bench/query_bench.sh). A query across
  // partitions, which may read a whole container up to its budget, runs on a
  // query thread, so that it never holds an I/O thread.
  auto pending = std::make_shared<Responder>(std::move(responder));
  auto run = [this, container = spec.name, query = std::move(*query), min_lsn = after->min_lsn,
              pending](const Status& waited) {
    if (!waited.ok()) return pending->Send(ErrorResponse(waited));
    if (query.partition_key) return AnswerQuery(container, query, min_lsn, *pending);
    bool queued = queries_.Submit([this, container, query, min_lsn, pending](bool cancelled) {
      if (cancelled) {
        return pending->Send(
            ErrorResponse(Status(ErrorCode::kUnavailable, "the daemon is shutting down")));
      }
      AnswerQuery(container, query, min_lsn, *pending);
    });
    if (queued) return;
    pending->Send(ErrorResponse(
        stopping_ ? Status(ErrorCode::kUnavailable, "the daemon is shutting down")
                  : Status(ErrorCode::kTooManyRequests,
                           "query.max_queued (" + std::to_string(options_.query_max_queued) +
                               ") queries are already waiting; retry later")));
  };
  if (after->min_lsn) {
    return WaitForDerivedViews(spec.name, *after->min_lsn, after->wait, pending, run);
  }
  run(Status::Ok());
}

}  // namespace feedd
