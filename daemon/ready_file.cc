#include "daemon/ready_file.h"

#include "daemon/http_util.h"

namespace feedd {
namespace {

std::string JsonOrNull(const std::optional<std::string>& value) {
  return value ? JsonString(*value) : "null";
}

}  // namespace

std::string ReadyFileJson(const std::string& api, const std::optional<std::string>& metrics,
                          const std::optional<std::string>& kafka) {
  return "{\"api\":" + JsonString(api) + ",\"metrics\":" + JsonOrNull(metrics) +
         ",\"kafka\":" + JsonOrNull(kafka) + "}\n";
}

}  // namespace feedd
