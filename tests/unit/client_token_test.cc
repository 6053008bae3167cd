// Tests of ClientBearerToken (util/http_client.h): where feedctl and feedd
// worker take their bearer token from, in order: the given file, the file
// named by $FEEDD_TOKEN_FILE, $FEEDD_TOKEN.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "util/http_client.h"

namespace feedd {
namespace {

class ClientTokenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("FEEDD_TOKEN_FILE");
    unsetenv("FEEDD_TOKEN");
  }
  void TearDown() override { SetUp(); }

  std::string Write(const std::string& name, const std::string& content) {
    std::string path = ::testing::TempDir() + "feedd_client_token_" + name;
    std::ofstream(path, std::ios::trunc) << content;
    return path;
  }
};

TEST_F(ClientTokenTest, FirstLineOfTheFileTrimmed) {
  std::string path = Write("file", "  s3cret.token\t\r\nsecond line\n");
  Result<std::string> token = ClientBearerToken(path);
  ASSERT_TRUE(token.ok()) << token.status().ToString();
  EXPECT_EQ(*token, "s3cret.token");
}

TEST_F(ClientTokenTest, TheFileWinsOverTheEnvironment) {
  std::string path = Write("wins", "from-file\n");
  setenv("FEEDD_TOKEN_FILE", Write("env_file", "from-env-file\n").c_str(), 1);
  setenv("FEEDD_TOKEN", "from-env", 1);
  EXPECT_EQ(*ClientBearerToken(path), "from-file");
  EXPECT_EQ(*ClientBearerToken(""), "from-env-file");
  unsetenv("FEEDD_TOKEN_FILE");
  EXPECT_EQ(*ClientBearerToken(""), "from-env");
  unsetenv("FEEDD_TOKEN");
  EXPECT_EQ(*ClientBearerToken(""), "");  // no token: requests go without one
}

TEST_F(ClientTokenTest, AnEmptyOrMissingFileIsAnError) {
  for (const std::string& path : {Write("empty", ""), Write("blank", "  \n"),
                                  ::testing::TempDir() + "feedd_client_token_missing"}) {
    Result<std::string> token = ClientBearerToken(path);
    ASSERT_FALSE(token.ok()) << path;
    EXPECT_EQ(token.status().code(), ErrorCode::kInvalidRequest);
    EXPECT_NE(token.status().message().find(path), std::string::npos) << token.status().message();
  }
}

}  // namespace
}  // namespace feedd
