// Status and Result<T>: how errors cross module boundaries in feedd.
//
// A Status is either OK or carries an ErrorCode and a human-readable message.
// Every ErrorCode has one stable snake_case name and one HTTP status; both are
// part of the public API (docs/api.md, "Errors"), so the
// HTTP layer turns a Status into an error body without a translation table of
// its own. Exceptions never cross the storage/, feed/ or processors/
// interfaces: callers get a Status or a Result<T>.
//
// Thread-safety: values; safe to copy and move between threads.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace feedd {

enum class ErrorCode {
  kOk = 0,
  // 400: the request is malformed.
  kInvalidJson,
  kInvalidItem,
  kInvalidId,
  kInvalidPartitionKey,
  kPartitionKeyMismatch,
  kInvalidPatch,
  kInvalidQuery,
  kInvalidRequest,
  kTooManyOperations,
  // 404 / 405 / 409 / 410 / 412 / 413 / 415.
  kContainerNotFound,
  kNotFound,
  kMethodNotAllowed,
  kConflict,
  kLsnNotRetained,
  kPreconditionFailed,
  kPayloadTooLarge,
  kUnsupportedMediaType,
  // 5xx: the daemon could not do it; the request may be retried.
  kInternal,
  kStorageError,
  kUnavailable,
  kLsnWaitTimeout,
  // Added after the first release; kept at the end so values stay stable.
  kInvalidNumber,        // 400: a non-finite number, or an integer incr overflow
  kQueryTooExpensive,    // 400: a query over its filter or work budget
  kDerivedItem,          // 403: a client write to an item a processor derived
  kDerivedContainer,     // 403: a client write to a container only processors fill
  kOperationInProgress,  // 409: the same administrative operation is already running
  kTooManyRequests,      // 429: a bounded resource (admin executor, waits) is full
  kNotImplemented,       // 501: e.g. a transfer coding other than chunked
  kInsufficientStorage,  // 507: the disk is below its free-space reserve
  kCancelled,            // 409: a job was cancelled before it finished
  kUnauthorized,         // 401: no bearer token, a malformed one, or one not in auth.tokens_file
  kForbidden,            // 403: the token's role may not use the route
};

// The stable snake_case name of `code`, e.g. "partition_key_mismatch".
std::string_view ErrorCodeName(ErrorCode code);
// The code named `name`, or kInternal when no code has that name.
ErrorCode ErrorCodeFromName(std::string_view name);
// The HTTP status that reports `code`, e.g. 400.
int ErrorCodeHttpStatus(ErrorCode code);

class Status {
 public:
  Status() = default;  // OK
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "code_name: message", for logs.
  std::string ToString() const;

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

// Either a value or a non-OK Status.
template <typename T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}          // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {}  // NOLINT: implicit by design

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() { return *value_; }
  const T& value() const { return *value_; }
  T& operator*() { return *value_; }
  const T& operator*() const { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace feedd
