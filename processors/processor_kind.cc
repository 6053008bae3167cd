#include "processors/processor_kind.h"

#include <cstdio>
#include <cstdlib>

namespace feedd {
namespace {

std::map<std::string, ProcessorFactory>& Factories() {
  static std::map<std::string, ProcessorFactory> factories;
  return factories;
}

}  // namespace

Result<std::string> ProcessorSettings::Required(const std::string& key) const {
  auto it = values.find(key);
  if (it == values.end() || it->second.empty()) return Error(key, "is required");
  return it->second;
}

std::string ProcessorSettings::Optional(const std::string& key, const std::string& fallback) const {
  auto it = values.find(key);
  return it == values.end() ? fallback : it->second;
}

Status ProcessorSettings::Error(const std::string& key, const std::string& what) const {
  return Status(ErrorCode::kInvalidRequest, "processor." + name + "." + key + " " + what);
}

bool ProcessorRegistry::Register(const std::string& kind, ProcessorFactory factory) {
  if (!Factories().emplace(kind, std::move(factory)).second) {
    // Two kinds under one name: which one a configuration gets would depend
    // on the link order. A build with this bug must not start.
    std::fprintf(stderr, "feedd: processor kind '%s' is registered twice\n", kind.c_str());
    std::abort();
  }
  return true;
}

Result<std::unique_ptr<ProcessorKind>> ProcessorRegistry::Create(
    const std::string& kind, const ProcessorSettings& settings,
    const std::vector<ContainerSpec>& containers) {
  auto it = Factories().find(kind);
  if (it == Factories().end()) {
    std::string known;
    for (const auto& name : Kinds()) known += (known.empty() ? "" : ", ") + name;
    return settings.Error("kind", "'" + kind + "' is not a processor kind (" + known + ")");
  }
  return it->second(settings, containers);
}

std::vector<std::string> ProcessorRegistry::Kinds() {
  std::vector<std::string> names;
  for (const auto& [name, _] : Factories()) names.push_back(name);
  return names;
}

}  // namespace feedd
