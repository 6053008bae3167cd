// The write routes of ApiRouter: create, upsert/replace, patch and delete of
// one item, and the transactional batch.
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <optional>
#include <string_view>

#include "daemon/api_router.h"
#include "daemon/http_util.h"
#include "storage/etag.h"
#include "storage/patch.h"
#include "storage/prepared_item.h"

namespace feedd {
namespace {

// The optional If-Match header, normalised (see NormalizeIfMatch).
Result<std::optional<std::string>> IfMatchHeader(const HttpRequest& request) {
  std::optional<std::string_view> header = request.Header("If-Match");
  if (!header) return std::optional<std::string>();
  Result<std::string> normalized = NormalizeIfMatch(*header);
  if (!normalized.ok()) return normalized.status();
  return std::optional<std::string>(std::move(*normalized));
}

// The body of a write request: JSON (415 for another media type) and an
// object (`not_object` otherwise).
Result<boost::json::object> ObjectBody(const HttpRequest& request, ErrorCode not_object,
                                       std::string_view what) {
  Result<boost::json::value> body = ParseRequestJson(request);
  if (!body.ok()) return body.status();
  if (!body->is_object()) {
    return Status(not_object, std::string(what) + " must be a JSON object");
  }
  return std::move(body->as_object());
}

// The "operations" list of a patch body, parsed for `spec`.
Result<std::vector<PatchOp>> PatchOperations(const ContainerSpec& spec,
                                             const boost::json::object& body) {
  const boost::json::value* operations = body.if_contains("operations");
  if (operations == nullptr) {
    return Status(ErrorCode::kInvalidPatch, "a patch needs an \"operations\" array");
  }
  return ParsePatchOperations(spec, *operations);
}

HttpResponse SingleWriteResponse(WriteResult& result) {
  if (!result.status.ok()) return ErrorResponse(result.status);
  if (result.results.size() != 1) {
    return ErrorResponse(Status(ErrorCode::kInternal, "storage answered " +
                                                          std::to_string(result.results.size()) +
                                                          " results for one operation"));
  }
  OpResult& op = result.results.front();
  HttpResponse response = JsonResponse(op.http_status, std::move(op.item_json));
  if (op.lsn != 0) response.headers.push_back({"X-Feedd-Lsn", std::to_string(op.lsn)});
  if (op.item_lsn != 0) response.headers.push_back({"ETag", EtagOf(op.item_lsn)});
  return response;
}

// {"error":{...},"failedIndex":i} with the failing op's status.
HttpResponse BatchErrorResponse(const Status& status, int failed_index) {
  HttpResponse response = ErrorResponse(status);
  if (failed_index >= 0) {
    response.body.pop_back();  // the closing '}'
    response.body += ",\"failedIndex\":" + std::to_string(failed_index) + "}";
  }
  return response;
}

HttpResponse BatchResponse(WriteResult& result) {
  if (!result.status.ok()) return BatchErrorResponse(result.status, result.failed_index);
  std::string body = R"({"results":[)";
  for (size_t i = 0; i < result.results.size(); ++i) {
    const OpResult& op = result.results[i];
    if (i > 0) body += ',';
    body += R"({"status":)" + std::to_string(op.http_status);
    if (!op.item_json.empty()) {
      body += R"(,"item":)";
      body += op.item_json;
    }
    body += '}';
  }
  body += "]}";
  HttpResponse response = JsonResponse(200, std::move(body));
  if (result.last_lsn != 0) {
    response.headers.push_back({"X-Feedd-Lsn", std::to_string(result.last_lsn)});
  }
  return response;
}

std::optional<uint64_t> PositiveInteger(const boost::json::value& value) {
  if (value.is_uint64() && value.as_uint64() > 0) return value.as_uint64();
  if (value.is_int64() && value.as_int64() > 0) return static_cast<uint64_t>(value.as_int64());
  return std::nullopt;
}

struct BatchOpKind {
  std::string_view name;
  WriteOpKind kind;
};
constexpr BatchOpKind kBatchOpKinds[] = {
    {"create", WriteOpKind::kCreate},   {"upsert", WriteOpKind::kUpsert},
    {"replace", WriteOpKind::kReplace}, {"delete", WriteOpKind::kDelete},
    {"patch", WriteOpKind::kPatch},     {"read", WriteOpKind::kRead},
};

// One element of a batch's "operations" (docs/api.md, "Batch").
Result<WriteOp> ParseBatchOp(const ContainerSpec& spec, const std::string& pk,
                             boost::json::value& value, size_t max_item_bytes, WriteOrigin origin) {
  if (!value.is_object()) {
    return Status(ErrorCode::kInvalidRequest, "a batch operation must be a JSON object");
  }
  boost::json::object& object = value.as_object();

  WriteOp op;
  const boost::json::value* name = object.if_contains("op");
  const BatchOpKind* kind = nullptr;
  if (name != nullptr && name->is_string()) {
    for (const BatchOpKind& candidate : kBatchOpKinds) {
      if (name->as_string() == candidate.name) kind = &candidate;
    }
  }
  if (kind == nullptr) {
    return Status(ErrorCode::kInvalidRequest,
                  "\"op\" must be one of create, upsert, replace, delete, patch, read");
  }
  op.kind = kind->kind;

  std::optional<std::string> id;
  if (const boost::json::value* id_value = object.if_contains("id")) {
    if (!id_value->is_string()) return Status(ErrorCode::kInvalidId, "\"id\" must be a string");
    id = std::string(id_value->as_string());
    Status status = ValidateId(*id);
    if (!status.ok()) return status;
  }
  bool needs_id = op.kind == WriteOpKind::kReplace || op.kind == WriteOpKind::kDelete ||
                  op.kind == WriteOpKind::kPatch || op.kind == WriteOpKind::kRead;
  if (needs_id && !id) {
    return Status(ErrorCode::kInvalidId, "\"id\" is required for " + std::string(kind->name));
  }

  if (const boost::json::value* if_match = object.if_contains("ifMatch")) {
    if (!if_match->is_string()) {
      return Status(ErrorCode::kInvalidRequest, "\"ifMatch\" must be a string");
    }
    Result<std::string> normalized = NormalizeIfMatch(if_match->as_string());
    if (!normalized.ok()) return normalized.status();
    op.if_match = std::move(*normalized);
  }

  // Extensions for processors running outside the daemon (docs/api.md).
  if (const boost::json::value* if_exists = object.if_contains("ifExists")) {
    if (!if_exists->is_bool() ||
        (op.kind != WriteOpKind::kReplace && op.kind != WriteOpKind::kDelete &&
         op.kind != WriteOpKind::kPatch)) {
      return Status(ErrorCode::kInvalidRequest,
                    "\"ifExists\" must be a boolean, on replace, delete or patch");
    }
    op.if_exists = if_exists->as_bool();
  }
  // "sourceLsn" makes the op a processor's (storage/derived_items.h); on an
  // upsert it also conditions the write on the stored _sourceLsn.
  op.origin = origin;
  if (const boost::json::value* source_lsn = object.if_contains("sourceLsn")) {
    op.source_lsn = PositiveInteger(*source_lsn);
    if ((op.kind != WriteOpKind::kUpsert && op.kind != WriteOpKind::kDelete &&
         op.kind != WriteOpKind::kPatch) ||
        !op.source_lsn) {
      return Status(ErrorCode::kInvalidRequest,
                    "\"sourceLsn\" must be a positive integer, on upsert, delete or patch");
    }
    op.origin = WriteOrigin::kProcessor;
  }

  switch (op.kind) {
    case WriteOpKind::kCreate:
    case WriteOpKind::kUpsert:
    case WriteOpKind::kReplace: {
      boost::json::value* body = object.if_contains("body");
      if (body == nullptr || !body->is_object()) {
        return Status(ErrorCode::kInvalidItem,
                      "\"body\" must be a JSON object for " + std::string(kind->name));
      }
      std::optional<Lsn> source_lsn;
      if (op.kind == WriteOpKind::kUpsert) source_lsn = op.source_lsn;
      Result<PreparedItem> item =
          PrepareItem(spec, std::move(body->as_object()), pk, id, max_item_bytes, source_lsn);
      if (!item.ok()) return item.status();
      op.id = item->id;
      op.item = std::move(*item);
      break;
    }
    case WriteOpKind::kPatch: {
      Result<std::vector<PatchOp>> patch = PatchOperations(spec, object);
      if (!patch.ok()) return patch.status();
      op.id = std::move(*id);
      op.patch = std::move(*patch);
      break;
    }
    case WriteOpKind::kDelete:
    case WriteOpKind::kRead:
      op.id = std::move(*id);
      break;
  }
  return op;
}

// Who a client's request writes as: X-Feedd-Override: derived asks to
// override the rule on derived items (docs/api.md, "Derived items"). There is
// no authentication yet; roles will gate WriteOrigin::kOverride here.
Result<WriteOrigin> OriginOf(const HttpRequest& request) {
  std::optional<std::string_view> value = request.Header("X-Feedd-Override");
  if (!value) return WriteOrigin::kClient;
  if (*value == "derived") return WriteOrigin::kOverride;
  return Status(ErrorCode::kInvalidRequest, "X-Feedd-Override must be 'derived'");
}

WriteRequest SingleOpRequest(const ContainerSpec& spec, std::string pk, WriteOp op) {
  WriteRequest request;
  request.container = spec.name;
  request.partition_key = std::move(pk);
  request.ops.push_back(std::move(op));
  return request;
}

}  // namespace

void ApiRouter::SubmitWrite(WriteRequest request, Responder responder, WriteAnswer answer) {
  auto pending = std::make_shared<Responder>(std::move(responder));
  store_->Submit(std::move(request), [pending, answer](WriteResult result) {
    // On the commit thread: build and send the response on the connection's
    // thread.
    pending->Post(
        [pending, answer, result = std::move(result)]() mutable { pending->Send(answer(result)); });
  });
}

void ApiRouter::CreateItem(const ContainerSpec& spec, const HttpRequest& request,
                           Responder responder) {
  Result<boost::json::object> body = ObjectBody(request, ErrorCode::kInvalidItem, "the item");
  if (!body.ok()) return responder.Send(ErrorResponse(body.status()));
  Result<PreparedItem> item = PrepareItem(spec, std::move(*body), std::nullopt, std::nullopt,
                                          store_->options().max_item_bytes);
  if (!item.ok()) return responder.Send(ErrorResponse(item.status()));

  WriteOp op;
  op.kind = WriteOpKind::kCreate;
  op.id = item->id;
  std::string pk = item->partition_key;
  op.item = std::move(*item);
  Result<WriteOrigin> origin = OriginOf(request);
  if (!origin.ok()) return responder.Send(ErrorResponse(origin.status()));
  op.origin = *origin;
  SubmitWrite(SingleOpRequest(spec, std::move(pk), std::move(op)), std::move(responder),
              &SingleWriteResponse);
}

void ApiRouter::PutItem(const ContainerSpec& spec, const std::string& pk, const std::string& id,
                        const HttpRequest& request, Responder responder) {
  Result<std::optional<std::string>> if_match = IfMatchHeader(request);
  if (!if_match.ok()) return responder.Send(ErrorResponse(if_match.status()));
  bool create_only = false;
  if (std::optional<std::string_view> none_match = request.Header("If-None-Match")) {
    if (*none_match != "*") {
      return responder.Send(ErrorResponse(
          Status(ErrorCode::kInvalidRequest, "If-None-Match supports only '*' (create only)")));
    }
    if (*if_match) {
      return responder.Send(ErrorResponse(Status(
          ErrorCode::kInvalidRequest, "If-Match and If-None-Match cannot be used together")));
    }
    create_only = true;
  }

  Result<boost::json::object> body = ObjectBody(request, ErrorCode::kInvalidItem, "the item");
  if (!body.ok()) return responder.Send(ErrorResponse(body.status()));
  Result<PreparedItem> item =
      PrepareItem(spec, std::move(*body), pk, id, store_->options().max_item_bytes);
  if (!item.ok()) return responder.Send(ErrorResponse(item.status()));

  WriteOp op;
  // If-Match replaces only that version (412 when it or the item is gone).
  op.kind = create_only ? WriteOpKind::kCreate
                        : (*if_match ? WriteOpKind::kReplace : WriteOpKind::kUpsert);
  op.id = id;
  op.item = std::move(*item);
  op.if_match = std::move(*if_match);
  Result<WriteOrigin> origin = OriginOf(request);
  if (!origin.ok()) return responder.Send(ErrorResponse(origin.status()));
  op.origin = *origin;
  SubmitWrite(SingleOpRequest(spec, pk, std::move(op)), std::move(responder), &SingleWriteResponse);
}

void ApiRouter::PatchItem(const ContainerSpec& spec, const std::string& pk, const std::string& id,
                          const HttpRequest& request, Responder responder) {
  Result<std::optional<std::string>> if_match = IfMatchHeader(request);
  if (!if_match.ok()) return responder.Send(ErrorResponse(if_match.status()));
  Result<boost::json::object> body =
      ObjectBody(request, ErrorCode::kInvalidRequest, "the patch body");
  if (!body.ok()) return responder.Send(ErrorResponse(body.status()));
  Result<std::vector<PatchOp>> patch = PatchOperations(spec, *body);
  if (!patch.ok()) return responder.Send(ErrorResponse(patch.status()));

  WriteOp op;
  op.kind = WriteOpKind::kPatch;
  op.id = id;
  op.patch = std::move(*patch);
  op.if_match = std::move(*if_match);
  Result<WriteOrigin> origin = OriginOf(request);
  if (!origin.ok()) return responder.Send(ErrorResponse(origin.status()));
  op.origin = *origin;
  SubmitWrite(SingleOpRequest(spec, pk, std::move(op)), std::move(responder), &SingleWriteResponse);
}

void ApiRouter::DeleteItem(const ContainerSpec& spec, const std::string& pk, const std::string& id,
                           const HttpRequest& request, Responder responder) {
  Result<std::optional<std::string>> if_match = IfMatchHeader(request);
  if (!if_match.ok()) return responder.Send(ErrorResponse(if_match.status()));

  WriteOp op;
  op.kind = WriteOpKind::kDelete;
  op.id = id;
  op.if_match = std::move(*if_match);
  Result<WriteOrigin> origin = OriginOf(request);
  if (!origin.ok()) return responder.Send(ErrorResponse(origin.status()));
  op.origin = *origin;
  SubmitWrite(SingleOpRequest(spec, pk, std::move(op)), std::move(responder), &SingleWriteResponse);
}

void ApiRouter::Batch(const ContainerSpec& spec, const std::string& pk, const HttpRequest& request,
                      Responder responder) {
  Result<boost::json::object> body = ObjectBody(request, ErrorCode::kInvalidRequest, "a batch");
  if (!body.ok()) return responder.Send(ErrorResponse(body.status()));
  boost::json::value* operations = body->if_contains("operations");
  if (operations == nullptr || !operations->is_array()) {
    return responder.Send(
        ErrorResponse(Status(ErrorCode::kInvalidRequest, "a batch needs an \"operations\" array")));
  }
  boost::json::array& list = operations->as_array();
  if (list.empty()) {
    return responder.Send(
        ErrorResponse(Status(ErrorCode::kInvalidRequest, "a batch needs at least one operation")));
  }
  if (list.size() > kMaxBatchOperations) {
    return responder.Send(
        ErrorResponse(Status(ErrorCode::kTooManyOperations,
                             "a batch has at most " + std::to_string(kMaxBatchOperations) +
                                 " operations, got " + std::to_string(list.size()))));
  }

  Result<WriteOrigin> origin = OriginOf(request);
  if (!origin.ok()) return responder.Send(ErrorResponse(origin.status()));
  WriteRequest write;
  write.container = spec.name;
  write.partition_key = pk;
  write.ops.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    Result<WriteOp> op = ParseBatchOp(spec, pk, list[i], store_->options().max_item_bytes, *origin);
    if (!op.ok()) {
      return responder.Send(BatchErrorResponse(op.status(), static_cast<int>(i)));
    }
    write.ops.push_back(std::move(*op));
  }
  SubmitWrite(std::move(write), std::move(responder), &BatchResponse);
}

}  // namespace feedd
