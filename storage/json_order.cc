#include "storage/json_order.h"

#include <boost/json.hpp>

namespace feedd {
namespace {

int Rank(const boost::json::value* v) {
  if (v == nullptr) return 0;
  switch (v->kind()) {
    case boost::json::kind::null:
      return 1;
    case boost::json::kind::bool_:
      return v->get_bool() ? 3 : 2;
    case boost::json::kind::int64:
    case boost::json::kind::uint64:
    case boost::json::kind::double_:
      return 4;
    case boost::json::kind::string:
      return 5;
    default:
      return 6;
  }
}

int CompareNumbers(const boost::json::value& a, const boost::json::value& b) {
  if (a.is_int64() && b.is_int64()) {
    return a.get_int64() < b.get_int64() ? -1 : (a.get_int64() > b.get_int64() ? 1 : 0);
  }
  double x = a.to_number<double>(), y = b.to_number<double>();
  return x < y ? -1 : (x > y ? 1 : 0);
}

}  // namespace

int CompareJson(const boost::json::value* a, const boost::json::value* b) {
  int ra = Rank(a), rb = Rank(b);
  if (ra != rb) return ra < rb ? -1 : 1;
  switch (ra) {
    case 4:
      return CompareNumbers(*a, *b);
    case 5: {
      std::string_view x = a->get_string(), y = b->get_string();
      return x.compare(y) < 0 ? -1 : (x == y ? 0 : 1);
    }
    case 6: {
      std::string x = boost::json::serialize(*a), y = boost::json::serialize(*b);
      return x.compare(y) < 0 ? -1 : (x == y ? 0 : 1);
    }
    default:
      return 0;
  }
}

bool JsonEquals(const boost::json::value& a, const boost::json::value& b) {
  if (a.is_number() && b.is_number()) return CompareNumbers(a, b) == 0;
  return a == b;
}

}  // namespace feedd
