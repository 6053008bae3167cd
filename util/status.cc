#include "util/status.h"

namespace feedd {
namespace {

struct CodeInfo {
  std::string_view name;
  int http_status;
};

CodeInfo Info(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk:
      return {"ok", 200};
    case ErrorCode::kInvalidJson:
      return {"invalid_json", 400};
    case ErrorCode::kInvalidItem:
      return {"invalid_item", 400};
    case ErrorCode::kInvalidId:
      return {"invalid_id", 400};
    case ErrorCode::kInvalidPartitionKey:
      return {"invalid_partition_key", 400};
    case ErrorCode::kPartitionKeyMismatch:
      return {"partition_key_mismatch", 400};
    case ErrorCode::kInvalidPatch:
      return {"invalid_patch", 400};
    case ErrorCode::kInvalidQuery:
      return {"invalid_query", 400};
    case ErrorCode::kInvalidRequest:
      return {"invalid_request", 400};
    case ErrorCode::kTooManyOperations:
      return {"too_many_operations", 400};
    case ErrorCode::kContainerNotFound:
      return {"container_not_found", 404};
    case ErrorCode::kNotFound:
      return {"not_found", 404};
    case ErrorCode::kMethodNotAllowed:
      return {"method_not_allowed", 405};
    case ErrorCode::kConflict:
      return {"conflict", 409};
    case ErrorCode::kLsnNotRetained:
      return {"lsn_not_retained", 410};
    case ErrorCode::kPreconditionFailed:
      return {"precondition_failed", 412};
    case ErrorCode::kPayloadTooLarge:
      return {"payload_too_large", 413};
    case ErrorCode::kUnsupportedMediaType:
      return {"unsupported_media_type", 415};
    case ErrorCode::kInternal:
      return {"internal", 500};
    case ErrorCode::kStorageError:
      return {"storage_error", 500};
    case ErrorCode::kUnavailable:
      return {"unavailable", 503};
    case ErrorCode::kLsnWaitTimeout:
      return {"lsn_wait_timeout", 504};
    case ErrorCode::kInvalidNumber:
      return {"invalid_number", 400};
    case ErrorCode::kQueryTooExpensive:
      return {"query_too_expensive", 400};
    case ErrorCode::kDerivedItem:
      return {"derived_item", 403};
    case ErrorCode::kDerivedContainer:
      return {"derived_container", 403};
    case ErrorCode::kOperationInProgress:
      return {"operation_in_progress", 409};
    case ErrorCode::kTooManyRequests:
      return {"too_many_requests", 429};
    case ErrorCode::kNotImplemented:
      return {"not_implemented", 501};
    case ErrorCode::kInsufficientStorage:
      return {"insufficient_storage", 507};
    case ErrorCode::kCancelled:
      return {"cancelled", 409};
    case ErrorCode::kUnauthorized:
      return {"unauthorized", 401};
    case ErrorCode::kForbidden:
      return {"forbidden", 403};
  }
  return {"internal", 500};
}

}  // namespace

std::string_view ErrorCodeName(ErrorCode code) { return Info(code).name; }

ErrorCode ErrorCodeFromName(std::string_view name) {
  for (int i = 0; i <= static_cast<int>(ErrorCode::kForbidden); ++i) {
    if (Info(static_cast<ErrorCode>(i)).name == name) return static_cast<ErrorCode>(i);
  }
  return ErrorCode::kInternal;
}

int ErrorCodeHttpStatus(ErrorCode code) { return Info(code).http_status; }

std::string Status::ToString() const {
  if (ok()) return "ok";
  std::string out(ErrorCodeName(code_));
  out += ": ";
  out += message_;
  return out;
}

}  // namespace feedd
