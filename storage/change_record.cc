#include "storage/change_record.h"

namespace feedd {

std::string_view ChangeOpName(ChangeOp op) {
  switch (op) {
    case ChangeOp::kCreate:
      return "create";
    case ChangeOp::kReplace:
      return "replace";
    case ChangeOp::kDelete:
      return "delete";
  }
  return "create";
}

std::optional<std::string_view> ChangeRecord::KnownAfterImage() const {
  static constexpr std::string_view kAfterMember = ",\"after\":";
  const std::string_view envelope = envelope_json;
  if (after_offset < kAfterMember.size() || after_offset >= envelope.size() ||
      !envelope.ends_with('}') ||
      envelope.substr(after_offset - kAfterMember.size(), kAfterMember.size()) != kAfterMember) {
    return std::nullopt;
  }
  return envelope.substr(after_offset, envelope.size() - 1 - after_offset);
}

}  // namespace feedd
