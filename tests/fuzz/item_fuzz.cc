// Fuzzes the body of an item write as the API reads it: ParseJsonBody
// (daemon/http_util.h), then PrepareItem and PrepareDerivedItem
// (storage/prepared_item.h) for each of the default containers.
//
// Invariants: what PrepareItem accepts serializes to JSON that the API reads
// back unchanged (the body minus its '_' properties, plus _sourceLsn for a
// processor's write), with the id,
// partition key and index values it reported; naming the same id and partition key in the path
// changes nothing; every refusal is a client error with a JSON error body.
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/http_util.h"
#include "storage/container_spec.h"
#include "storage/json_pointer.h"
#include "storage/prepared_item.h"
#include "tests/blog_scenario.h"
#include "tests/fuzz/fuzz_checks.h"

namespace feedd {
namespace {

constexpr size_t kMaxItemBytes = 2 * 1024 * 1024;  // storage.max_item_bytes' default
constexpr uint64_t kSourceLsn = 7;

void CheckPrepared(const ContainerSpec& spec, const PreparedItem& item,
                   const boost::json::value& expected) {
  FUZZ_CHECK(item.body_json.size() <= kMaxItemBytes, "the item is larger than the limit");
  boost::json::value stored = fuzz::CheckReadsBack(item.body_json, "a prepared item");
  FUZZ_CHECK(stored == expected, "the prepared item differs from its body: " + item.body_json);
  FUZZ_CHECK(ValidateId(item.id).ok(), "an invalid id was accepted");
  const boost::json::value* id = stored.as_object().if_contains("id");
  FUZZ_CHECK(id != nullptr && id->is_string() && id->get_string() == item.id, "the id changed");
  const boost::json::value* pk = JsonPointer::Parse(spec.partition_key_path)->Find(stored);
  FUZZ_CHECK(pk != nullptr && pk->is_string() && pk->get_string() == item.partition_key,
             "the partition key changed");
  FUZZ_CHECK(ExtractIndexValues(spec, expected) == item.index_values,
             "the index values differ from the body's: " + item.body_json);
}

void CheckWrite(const ContainerSpec& spec, const boost::json::object& body,
                std::optional<uint64_t> source_lsn) {
  Result<PreparedItem> item =
      PrepareItem(spec, body, std::nullopt, std::nullopt, kMaxItemBytes, source_lsn);
  if (!item.ok()) {
    return fuzz::CheckClientError(item.status());
  }
  boost::json::object expected = body;
  StripSystemProperties(expected);
  if (source_lsn) expected["_sourceLsn"] = *source_lsn;
  CheckPrepared(spec, *item, expected);

  // PUT /items/{pk}/{id} with the body's own values.
  Result<PreparedItem> put =
      PrepareItem(spec, body, item->partition_key, item->id, kMaxItemBytes, source_lsn);
  FUZZ_CHECK(put.ok() && put->body_json == item->body_json,
             "naming the item's own partition key and id changed the answer");
}

void CheckDerived(const ContainerSpec& spec, const boost::json::object& body) {
  Result<PreparedItem> item = PrepareDerivedItem(spec, body, kMaxItemBytes);
  if (!item.ok()) {
    return fuzz::CheckClientError(item.status());
  }
  boost::json::object expected = body;
  StripStoreProperties(expected);
  CheckPrepared(spec, *item, expected);
}

}  // namespace
}  // namespace feedd

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace feedd;
  static const std::vector<ContainerSpec> containers = [] {
    std::vector<ContainerSpec> specs = BlogContainers();
    // Nested partition key and index paths, an array index among them.
    specs.push_back({"nested", "/key/pk", {"/tags/0", "/a~1b", "/type"}});
    return specs;
  }();
  Result<boost::json::value> body =
      ParseJsonBody(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!body.ok()) {
    fuzz::CheckClientError(body.status());
    return 0;
  }
  if (!body->is_object()) return 0;
  for (const ContainerSpec& spec : containers) {
    CheckWrite(spec, body->get_object(), std::nullopt);
    CheckWrite(spec, body->get_object(), kSourceLsn);
    CheckDerived(spec, body->get_object());
  }
  return 0;
}
