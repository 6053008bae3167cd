#include "storage/patch.h"

#include <boost/json.hpp>
#include <cmath>
#include <cstdint>

#include "util/json_parse.h"

namespace feedd {
namespace {

inline constexpr size_t kMaxPatchOperations = 100;

Status PatchError(size_t index, const std::string& what) {
  return Status(ErrorCode::kInvalidPatch, "operation " + std::to_string(index) + ": " + what);
}

bool ParseKind(std::string_view name, PatchOpKind* kind) {
  if (name == "add")
    *kind = PatchOpKind::kAdd;
  else if (name == "set")
    *kind = PatchOpKind::kSet;
  else if (name == "replace")
    *kind = PatchOpKind::kReplace;
  else if (name == "remove")
    *kind = PatchOpKind::kRemove;
  else if (name == "incr")
    *kind = PatchOpKind::kIncr;
  else
    return false;
  return true;
}

// Canonical array index ("0", "12"), as in JsonPointer.
bool ArrayIndex(const std::string& token, size_t* index) {
  if (token.empty() || token.size() > 9 || (token.size() > 1 && token[0] == '0')) return false;
  size_t n = 0;
  for (char c : token) {
    if (c < '0' || c > '9') return false;
    n = n * 10 + static_cast<size_t>(c - '0');
  }
  *index = n;
  return true;
}

__int128 AsInteger(const boost::json::value& v) {
  return v.is_int64() ? __int128{v.get_int64()} : __int128{v.get_uint64()};
}

// a + b, exact for integers (docs/api.md "Patch"): integer + integer is an
// integer when the sum fits int64 or uint64; with a double, a finite double.
// Anything else is invalid_number, never a silent Infinity or rounding.
Result<boost::json::value> Add(size_t index, const std::string& path, const boost::json::value& a,
                               const boost::json::value& b) {
  if (!a.is_number()) return PatchError(index, path + " is not a number");
  if (!a.is_double() && !b.is_double()) {
    const __int128 sum = AsInteger(a) + AsInteger(b);
    if (sum >= INT64_MIN && sum <= INT64_MAX) return boost::json::value(static_cast<int64_t>(sum));
    if (sum > 0 && sum <= UINT64_MAX) return boost::json::value(static_cast<uint64_t>(sum));
    return Status(ErrorCode::kInvalidNumber, "operation " + std::to_string(index) + ": incr of " +
                                                 path + " overflows the integer range");
  }
  const double sum = a.to_number<double>() + b.to_number<double>();
  if (!std::isfinite(sum)) {
    return Status(ErrorCode::kInvalidNumber, "operation " + std::to_string(index) + ": incr of " +
                                                 path + " is not a finite number");
  }
  return boost::json::value(sum);
}

Status ApplyOne(size_t index, const PatchOp& op, boost::json::value& root) {
  const auto& tokens = op.path.tokens();
  boost::json::value* parent = &root;
  for (size_t i = 0; i + 1 < tokens.size(); ++i) {
    if (parent->is_object()) {
      auto* next = parent->as_object().if_contains(tokens[i]);
      if (next == nullptr)
        return PatchError(index, "the parent of " + op.path.text() + " does not exist");
      parent = next;
    } else if (parent->is_array()) {
      size_t at;
      if (!ArrayIndex(tokens[i], &at) || at >= parent->as_array().size()) {
        return PatchError(index, "the parent of " + op.path.text() + " does not exist");
      }
      parent = &parent->as_array()[at];
    } else {
      return PatchError(index, "the parent of " + op.path.text() + " is not an object or array");
    }
  }
  const std::string& key = tokens.back();

  if (parent->is_object()) {
    auto& obj = parent->as_object();
    boost::json::value* target = obj.if_contains(key);
    switch (op.kind) {
      case PatchOpKind::kAdd:
      case PatchOpKind::kSet:
        obj[key] = op.value;
        return Status::Ok();
      case PatchOpKind::kReplace:
        if (target == nullptr) return PatchError(index, op.path.text() + " does not exist");
        *target = op.value;
        return Status::Ok();
      case PatchOpKind::kRemove:
        if (target == nullptr) return PatchError(index, op.path.text() + " does not exist");
        obj.erase(key);
        return Status::Ok();
      case PatchOpKind::kIncr: {
        if (target == nullptr) {
          obj[key] = op.value;
          return Status::Ok();
        }
        auto sum = Add(index, op.path.text(), *target, op.value);
        if (!sum.ok()) return sum.status();
        *target = std::move(*sum);
        return Status::Ok();
      }
    }
  }
  if (parent->is_array()) {
    auto& arr = parent->as_array();
    size_t at = arr.size();
    bool append = key == "-";
    if (!append && !ArrayIndex(key, &at)) {
      return PatchError(index, "'" + key + "' is not an array index");
    }
    bool exists = !append && at < arr.size();
    switch (op.kind) {
      case PatchOpKind::kAdd:
        if (at > arr.size()) return PatchError(index, "index " + key + " is out of range");
        arr.insert(arr.begin() + static_cast<std::ptrdiff_t>(at), op.value);
        return Status::Ok();
      case PatchOpKind::kSet:
        if (exists)
          arr[at] = op.value;
        else if (at == arr.size())
          arr.push_back(op.value);
        else
          return PatchError(index, "index " + key + " is out of range");
        return Status::Ok();
      case PatchOpKind::kReplace:
        if (!exists) return PatchError(index, op.path.text() + " does not exist");
        arr[at] = op.value;
        return Status::Ok();
      case PatchOpKind::kRemove:
        if (!exists) return PatchError(index, op.path.text() + " does not exist");
        arr.erase(arr.begin() + static_cast<std::ptrdiff_t>(at));
        return Status::Ok();
      case PatchOpKind::kIncr: {
        if (!exists) return PatchError(index, op.path.text() + " does not exist");
        auto sum = Add(index, op.path.text(), arr[at], op.value);
        if (!sum.ok()) return sum.status();
        arr[at] = std::move(*sum);
        return Status::Ok();
      }
    }
  }
  return PatchError(index, "the parent of " + op.path.text() + " is not an object or array");
}

}  // namespace

Result<std::vector<PatchOp>> ParsePatchOperations(const ContainerSpec& spec,
                                                  const boost::json::value& operations) {
  if (!operations.is_array()) {
    return Status(ErrorCode::kInvalidPatch, "'operations' must be an array");
  }
  const auto& list = operations.get_array();
  if (list.empty()) return Status(ErrorCode::kInvalidPatch, "'operations' is empty");
  if (list.size() > kMaxPatchOperations) {
    return Status(ErrorCode::kInvalidPatch, "at most 100 patch operations are allowed");
  }
  auto pk_path = JsonPointer::Parse(spec.partition_key_path);
  auto id_path = JsonPointer::Parse("/id");
  if (!pk_path.ok()) return pk_path.status();

  std::vector<PatchOp> ops;
  ops.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    const auto* obj = list[i].if_object();
    if (obj == nullptr) return PatchError(i, "must be an object");
    const auto* name = obj->if_contains("op");
    const auto* path = obj->if_contains("path");
    if (name == nullptr || !name->is_string()) return PatchError(i, "'op' must be a string");
    PatchOp op;
    if (!ParseKind(name->get_string(), &op.kind)) {
      return PatchError(i, "unknown op '" + std::string(name->get_string()) +
                               "' (add, set, replace, remove, incr)");
    }
    if (path == nullptr || !path->is_string()) return PatchError(i, "'path' must be a string");
    auto pointer = JsonPointer::Parse(path->get_string());
    if (!pointer.ok()) return PatchError(i, pointer.status().message());
    if (pointer->is_root()) return PatchError(i, "the path must name a field");
    op.path = std::move(*pointer);
    if (op.path.IsSameOrUnder(*id_path)) return PatchError(i, "a patch may not change 'id'");
    if (op.path.IsSameOrUnder(*pk_path) || pk_path->IsSameOrUnder(op.path)) {
      return PatchError(i, "a patch may not change the partition key " + spec.partition_key_path);
    }
    if (!op.path.tokens()[0].empty() && op.path.tokens()[0][0] == '_') {
      return PatchError(i, "a patch may not change system properties");
    }
    const auto* value = obj->if_contains("value");
    if (op.kind != PatchOpKind::kRemove) {
      if (value == nullptr) return PatchError(i, "'value' is required");
      if (op.kind == PatchOpKind::kIncr && !value->is_number()) {
        return PatchError(i, "incr needs a numeric 'value'");
      }
      op.value = *value;
    }
    ops.push_back(std::move(op));
  }
  return ops;
}

Status ApplyPatch(const std::vector<PatchOp>& ops, boost::json::value& item) {
  for (size_t i = 0; i < ops.size(); ++i) {
    if (Status s = ApplyOne(i, ops[i], item); !s.ok()) return s;
  }
  return CheckItemDepth(item, "the patched item");
}

}  // namespace feedd
