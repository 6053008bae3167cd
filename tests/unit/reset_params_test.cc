// ParseResetLsn(): the query string of POST /v1/processors/{name}/reset.
#include "daemon/reset_params.h"

#include <gtest/gtest.h>

namespace feedd {
namespace {

TEST(ParseResetLsnTest, TakesANumberOrOldest) {
  Result<Lsn> lsn = ParseResetLsn("lsn=42", 100);
  ASSERT_TRUE(lsn.ok()) << lsn.status().ToString();
  EXPECT_EQ(*lsn, 42u);
  lsn = ParseResetLsn("lsn=0", 100);
  ASSERT_TRUE(lsn.ok()) << lsn.status().ToString();
  EXPECT_EQ(*lsn, 0u);
  lsn = ParseResetLsn("lsn=oldest", 100);
  ASSERT_TRUE(lsn.ok()) << lsn.status().ToString();
  EXPECT_EQ(*lsn, 99u) << "every retained change (100 and after) is applied again";
  lsn = ParseResetLsn("lsn=%6fldest", 1);
  ASSERT_TRUE(lsn.ok()) << lsn.status().ToString();
  EXPECT_EQ(*lsn, 0u);
}

TEST(ParseResetLsnTest, RefusesWhatIsNotOneLsn) {
  struct Case {
    const char* query;
    const char* why;
  };
  for (const Case& c :
       {Case{"", "lsn is required"}, Case{"from=3", "unknown parameter 'from'"},
        Case{"lsn=3&lsn=4", "more than once"}, Case{"lsn=-1", "non-negative"},
        Case{"lsn=1e3", "non-negative"}, Case{"lsn=", "non-negative"},
        Case{"lsn=18446744073709551616", "non-negative"}, Case{"lsn=%zz", "escape"}}) {
    Result<Lsn> lsn = ParseResetLsn(c.query, 100);
    ASSERT_FALSE(lsn.ok()) << c.query;
    EXPECT_EQ(lsn.status().code(), ErrorCode::kInvalidRequest) << c.query;
    EXPECT_NE(lsn.status().message().find(c.why), std::string::npos)
        << c.query << ": " << lsn.status().message();
  }
}

}  // namespace
}  // namespace feedd
