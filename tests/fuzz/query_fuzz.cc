// Fuzzes the body of POST /v1/containers/{c}/query as the API reads it:
// ParseJsonBody, then ParseQuerySpec (storage/query.h), then the
// continuation token the query engine decodes (storage/query_continuation.h).
//
// Invariants: an accepted spec keeps every filter of the body, each on a
// field and with a scalar value, the body's partition key, and a limit in
// 1..kMaxQueryLimit; a second parse of the same body has the same
// CanonicalQueryText (the query cache's key); a continuation decodes or is
// refused as invalid_query, and one that decodes, written again, decodes to
// the same row key and sort value; every refusal is a client error with a
// JSON error body.
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "daemon/http_util.h"
#include "storage/query.h"
#include "storage/query_continuation.h"
#include "tests/fuzz/fuzz_checks.h"

namespace feedd {
namespace {

void Check(const boost::json::value& body) {
  Result<QuerySpec> spec = ParseQuerySpec(body);
  if (!spec.ok()) return fuzz::CheckClientError(spec.status());
  FUZZ_CHECK(spec->limit >= 1 && spec->limit <= kMaxQueryLimit,
             "limit " + std::to_string(spec->limit));
  for (const FieldFilter& filter : spec->filters) {
    FUZZ_CHECK(!filter.value.is_structured(), "filter " + filter.path.text() + " is not a scalar");
    FUZZ_CHECK(!filter.path.is_root(), "a filter on the whole item");
  }
  const boost::json::value* filter = body.get_object().if_contains("filter");
  size_t filters = filter != nullptr && filter->is_object() ? filter->get_object().size() : 0;
  FUZZ_CHECK(spec->filters.size() == filters, "a filter was dropped");
  const boost::json::value* pk = body.get_object().if_contains("partitionKey");
  FUZZ_CHECK(spec->partition_key.has_value() == (pk != nullptr && pk->is_string()),
             "the partition key was dropped or invented");
  std::string canonical = CanonicalQueryText(*spec);
  Result<QuerySpec> again = ParseQuerySpec(body);
  FUZZ_CHECK(again.ok() && CanonicalQueryText(*again) == canonical,
             "the same body gave two canonical texts");

  Result<QueryContinuation> cont = DecodeQueryContinuation(spec->continuation);
  if (!cont.ok()) return fuzz::CheckClientError(cont.status());
  FUZZ_CHECK(cont->present == !spec->continuation.empty(), "a continuation was dropped");
  if (!cont->present) return;
  Result<QueryContinuation> written =
      DecodeQueryContinuation(EncodeQueryContinuation(cont->row_key, cont->sort(), true));
  FUZZ_CHECK(written.ok() && written->present && written->row_key == cont->row_key &&
                 written->sort_value == cont->sort_value,
             "a continuation written again reads back differently");
}

}  // namespace
}  // namespace feedd

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  feedd::Result<boost::json::value> body =
      feedd::ParseJsonBody(std::string_view(reinterpret_cast<const char*>(data), size));
  if (body.ok()) feedd::Check(*body);
  return 0;
}
