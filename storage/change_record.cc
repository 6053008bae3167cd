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

}  // namespace feedd
