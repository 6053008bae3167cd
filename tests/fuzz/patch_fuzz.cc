// Fuzzes a PATCH body as the API reads it: ParseJsonBody, then
// ParsePatchOperations of its "operations" and ApplyPatch
// (storage/patch.h) to an item: the body's "item" member when it is an item
// (a fuzz-only extension), else a stored post. The patch is applied twice,
// as two PATCH requests would.
//
// Invariants: an applied patch leaves an object with the same id, partition
// key and system properties; the result serializes to JSON that the API
// reads back unchanged; every refusal is a client error with a JSON error
// body.
#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/http_util.h"
#include "storage/container_spec.h"
#include "storage/patch.h"
#include "tests/fuzz/fuzz_checks.h"

namespace feedd {
namespace {

const ContainerSpec& Posts() {
  static const ContainerSpec spec{"posts", "/postId", {"/userId"}};
  return spec;
}

const boost::json::value& StoredPost() {
  static const boost::json::value post = boost::json::parse(
      R"({"id":"p1","postId":"p1","type":"post","userId":"u1","title":"Hi","content":"...",)"
      R"("creationDate":"2026-11-21T10:00:00Z","commentCount":0,"likeCount":0,"tags":["a","b"],)"
      R"("stats":{"views":9007199254740993,"score":1.5},"_etag":"\"3\"","_lsn":3,"_ts":1700000000})");
  return post;
}

// The members a patch may never change: id, the partition key, '_' members.
boost::json::object Protected(const boost::json::value& item) {
  boost::json::object out;
  for (const auto& member : item.get_object()) {
    std::string_view key = member.key();
    if (key == "id" || key == "postId" || (!key.empty() && key[0] == '_')) {
      out.emplace(key, member.value());
    }
  }
  return out;
}

void Check(const boost::json::object& body) {
  const boost::json::value* operations = body.if_contains("operations");
  if (operations == nullptr) return;
  Result<std::vector<PatchOp>> ops = ParsePatchOperations(Posts(), *operations);
  if (!ops.ok()) return fuzz::CheckClientError(ops.status());

  const boost::json::value* given = body.if_contains("item");
  boost::json::value item = StoredPost();
  if (given != nullptr && given->is_object() && Protected(*given) == Protected(item)) item = *given;
  boost::json::object before = Protected(item);
  for (int round = 0; round < 2; ++round) {
    boost::json::value patched = item;  // the API patches a copy
    Status status = ApplyPatch(*ops, patched);
    if (!status.ok()) return fuzz::CheckClientError(status);
    FUZZ_CHECK(patched.is_object(), "a patch made the item a " + boost::json::serialize(patched));
    FUZZ_CHECK(Protected(patched) == before,
               "a patch changed a protected member: " + boost::json::serialize(patched));
    fuzz::CheckRoundTrips(patched, "a patched item");
    item = std::move(patched);
  }
}

}  // namespace
}  // namespace feedd

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  feedd::Result<boost::json::value> body =
      feedd::ParseJsonBody(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!body.ok()) return 0;  // item_fuzz covers the JSON parser
  if (body->is_object()) feedd::Check(body->get_object());
  return 0;
}
