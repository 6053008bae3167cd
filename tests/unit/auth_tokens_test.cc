// Tests of daemon/auth_tokens.h (the tokens file, the Authorization header,
// constant-time lookup, file permissions) and of the role table: which role
// may use which route (ApiRouter::Match with RoleAllows).
#include "daemon/auth_tokens.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <string>

#include "daemon/api_router.h"

namespace feedd {
namespace {

// SHA-256("s3cret"), as `printf %s s3cret | sha256sum` prints it.
constexpr char kSecretHex[] = "1ec1c26b50d5d3c58d9583181af8076655fe00756bf7285940ba3670f99fcba0";

std::string Hex(const Sha256Digest& digest) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (uint8_t byte : digest) {
    out += kDigits[byte >> 4];
    out += kDigits[byte & 15];
  }
  return out;
}

TEST(AuthTokensTest, Sha256MatchesTheCommandLineTool) {
  EXPECT_EQ(Hex(Sha256("s3cret")), kSecretHex);
}

TEST(AuthTokensTest, ParsesNamesRolesDigestsCommentsAndBlankLines) {
  std::string text = "# tokens of the staging cluster\n\n";
  text += "app  write\tsha256:" + std::string(kSecretHex) + "   # the web application\r\n";
  text += "ops admin sha256:" + Hex(Sha256("other")) + "\n";
  text += "   \t \n";
  text += "dash read sha256:" + Hex(Sha256("third"));  // no final newline
  Result<std::vector<TokenEntry>> entries = ParseTokensFile(text);
  ASSERT_TRUE(entries.ok()) << entries.status().ToString();
  ASSERT_EQ(entries->size(), 3u);
  EXPECT_EQ((*entries)[0].name, "app");
  EXPECT_EQ((*entries)[0].role, Role::kWrite);
  EXPECT_EQ(Hex((*entries)[0].digest), kSecretHex);
  EXPECT_EQ((*entries)[1].name, "ops");
  EXPECT_EQ((*entries)[1].role, Role::kAdmin);
  EXPECT_EQ((*entries)[2].name, "dash");
  EXPECT_EQ((*entries)[2].role, Role::kRead);
}

TEST(AuthTokensTest, EmptyFileHasNoTokens) {
  Result<std::vector<TokenEntry>> entries = ParseTokensFile("# nobody yet\n");
  ASSERT_TRUE(entries.ok());
  EXPECT_TRUE(entries->empty());
}

void ExpectLineError(const std::string& text, const std::string& needle) {
  Result<std::vector<TokenEntry>> entries = ParseTokensFile(text);
  ASSERT_FALSE(entries.ok()) << "accepted: " << text;
  EXPECT_EQ(entries.status().code(), ErrorCode::kInvalidRequest);
  EXPECT_NE(entries.status().message().find(needle), std::string::npos)
      << entries.status().message();
}

TEST(AuthTokensTest, RefusesMalformedLinesNamingTheLine) {
  const std::string digest = std::string("sha256:") + kSecretHex;
  ExpectLineError("\n\napp write\n", "line 3: expected NAME ROLE sha256:HEX");
  ExpectLineError("app write " + digest + " extra\n", "line 1: expected NAME ROLE");
  ExpectLineError("app owner " + digest, "role must be read, write or admin");
  ExpectLineError("app Write " + digest, "role must be read, write or admin");
  ExpectLineError("app write " + std::string(kSecretHex), "sha256: and 64 lowercase hex");
  ExpectLineError("app write sha256:" + std::string(kSecretHex).substr(1), "64 lowercase hex");
  std::string upper = kSecretHex;
  upper[0] = 'E';
  ExpectLineError("app write sha256:" + upper, "64 lowercase hex");
  std::string not_hex = kSecretHex;
  not_hex[10] = 'g';
  ExpectLineError("app write sha256:" + not_hex, "64 lowercase hex");
  ExpectLineError("a/b write " + digest, "name must be 1 to 64 characters");
  ExpectLineError(std::string(65, 'n') + " write " + digest, "name must be 1 to 64");
  ExpectLineError("app write " + digest + "\napp read sha256:" + Hex(Sha256("x")),
                  "line 2: the name 'app' is used twice");
  ExpectLineError("app write " + digest + "\nother read " + digest,
                  "line 2: the same secret is given to 'app' and 'other'");
}

TEST(AuthTokensTest, ParsesBearerHeaders) {
  EXPECT_EQ(*ParseBearer("Bearer abc.DEF-123_~+/=="), "abc.DEF-123_~+/==");
  EXPECT_EQ(*ParseBearer("bearer   tok"), "tok");
  EXPECT_EQ(*ParseBearer("BEARER\ttok  "), "tok");
  for (const char* bad :
       {"", "Bearer", "Bearer ", "Bearer  ", "Basic dXNlcjpwYXNz", "Bearertok", "Bearer a b",
        "Bearer tok,", "Bearer =abc", "Bearer a=b", "Token tok", "Bearer t\xc3\xa9"}) {
    Result<std::string_view> secret = ParseBearer(bad);
    EXPECT_FALSE(secret.ok()) << "accepted '" << bad << "'";
    if (!secret.ok()) {
      EXPECT_EQ(secret.status().code(), ErrorCode::kInvalidRequest);
    }
  }
}

TEST(AuthTokensTest, ParsesBasicHeaders) {
  // base64("prometheus:s3cr:et"), base64("a:"), base64(":b"), base64("ab:c")
  Result<BasicCredentials> creds = ParseBasic("Basic cHJvbWV0aGV1czpzM2NyOmV0");
  ASSERT_TRUE(creds.ok()) << creds.status().ToString();
  EXPECT_EQ(creds->user, "prometheus");
  EXPECT_EQ(creds->password, "s3cr:et");
  EXPECT_EQ(ParseBasic("basic\tYTo=  ")->user, "a");
  EXPECT_EQ(ParseBasic("basic\tYTo=  ")->password, "");
  EXPECT_EQ(ParseBasic("BASIC  OmI=")->password, "b");
  EXPECT_EQ(ParseBasic("Basic YWI6Yw==")->user, "ab");
  for (const char* bad :
       {"", "Basic", "Basic ", "Bearer YTo=", "BasicYTo=", "Basic YWJj",  // "abc": no ':'
        "Basic YTo", "Basic YTo==", "Basic YTp=", "Basic Y=o=", "Basic ====", "Basic YTo=,",
        "Basic YT o=", "Basic YTo=YTo="}) {
    Result<BasicCredentials> parsed = ParseBasic(bad);
    EXPECT_FALSE(parsed.ok()) << "accepted '" << bad << "'";
    if (!parsed.ok()) {
      EXPECT_EQ(parsed.status().code(), ErrorCode::kInvalidRequest);
    }
  }
}

TEST(AuthTokensTest, FindsTheTokenOfASecretOnly) {
  TokenSet tokens({{"app", Role::kWrite, Sha256("s3cret")}, {"ops", Role::kAdmin, Sha256("x")}});
  const TokenEntry* app = tokens.Find("s3cret");
  ASSERT_NE(app, nullptr);
  EXPECT_EQ(app->name, "app");
  ASSERT_NE(tokens.Find("x"), nullptr);
  EXPECT_EQ(tokens.Find("x")->name, "ops");
  EXPECT_EQ(tokens.Find("s3cre"), nullptr);
  EXPECT_EQ(tokens.Find("s3cret "), nullptr);
  EXPECT_EQ(tokens.Find(""), nullptr);
  EXPECT_EQ(TokenSet({}).Find("s3cret"), nullptr);
}

class TokensFileTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& content, mode_t mode) {
    std::string path = ::testing::TempDir() + "feedd_tokens_" +
                       ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::ofstream(path, std::ios::trunc) << content;
    EXPECT_EQ(chmod(path.c_str(), mode), 0);
    return path;
  }
};

TEST_F(TokensFileTest, LoadsAFileOnlyOwnerAndGroupMayRead) {
  std::string path = Write(std::string("app read sha256:") + kSecretHex + "\n", 0640);
  Result<TokenSet> tokens = LoadTokensFile(path);
  ASSERT_TRUE(tokens.ok()) << tokens.status().ToString();
  EXPECT_EQ(tokens->size(), 1u);
  EXPECT_NE(tokens->Find("s3cret"), nullptr);
}

TEST_F(TokensFileTest, RefusesAFileOthersMayReadOrWrite) {
  for (mode_t mode : {0644, 0602, 0604}) {
    std::string path = Write(std::string("app read sha256:") + kSecretHex + "\n", mode);
    Result<TokenSet> tokens = LoadTokensFile(path);
    ASSERT_FALSE(tokens.ok()) << std::oct << mode;
    EXPECT_EQ(tokens.status().code(), ErrorCode::kInvalidRequest);
    EXPECT_NE(tokens.status().message().find("may be read or written by others"), std::string::npos)
        << tokens.status().message();
  }
}

TEST_F(TokensFileTest, NamesThePathOfAFileThatDoesNotParseOrExist) {
  std::string path = Write("app read\n", 0600);
  Result<TokenSet> tokens = LoadTokensFile(path);
  ASSERT_FALSE(tokens.ok());
  EXPECT_NE(tokens.status().message().find(path + ", line 1"), std::string::npos)
      << tokens.status().message();
  Result<TokenSet> missing = LoadTokensFile(path + ".missing");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kUnavailable);
}

// The role table of docs/security.md.
TEST(RoleTableTest, EachRoleAgainstEachAccessClass) {
  EXPECT_TRUE(RoleAllows(Role::kRead, Access::kOpen));
  EXPECT_TRUE(RoleAllows(Role::kRead, Access::kRead));
  EXPECT_FALSE(RoleAllows(Role::kRead, Access::kWrite));
  EXPECT_FALSE(RoleAllows(Role::kRead, Access::kAdmin));
  EXPECT_TRUE(RoleAllows(Role::kWrite, Access::kRead));
  EXPECT_TRUE(RoleAllows(Role::kWrite, Access::kWrite));
  EXPECT_FALSE(RoleAllows(Role::kWrite, Access::kAdmin));
  EXPECT_TRUE(RoleAllows(Role::kAdmin, Access::kRead));
  EXPECT_TRUE(RoleAllows(Role::kAdmin, Access::kWrite));
  EXPECT_TRUE(RoleAllows(Role::kAdmin, Access::kAdmin));
  EXPECT_EQ(ParseRole("admin"), Role::kAdmin);
  EXPECT_EQ(ParseRole("root"), std::nullopt);
  EXPECT_EQ(RoleName(Role::kWrite), "write");
}

TEST(RoleTableTest, EveryRouteHasItsClass) {
  struct Case {
    HttpMethod method;
    const char* target;
    Access access;
  };
  const Case cases[] = {
      {HttpMethod::kGet, "/healthz", Access::kOpen},
      {HttpMethod::kGet, "/readyz", Access::kOpen},
      {HttpMethod::kPost, "/healthz", Access::kOpen},  // 405 for anyone
      {HttpMethod::kGet, "/v1/containers", Access::kRead},
      {HttpMethod::kGet, "/v1/containers/users/items/u1/u1", Access::kRead},
      {HttpMethod::kPost, "/v1/containers/users/query", Access::kRead},
      {HttpMethod::kGet, "/v1/changefeed?from=now&waitMs=10", Access::kRead},
      {HttpMethod::kGet, "/v1/feed", Access::kRead},
      {HttpMethod::kGet, "/v1/processors", Access::kRead},
      {HttpMethod::kGet, "/v1/processors/usernames", Access::kRead},
      {HttpMethod::kGet, "/v1/processors/usernames/parked", Access::kRead},
      {HttpMethod::kPost, "/v1/containers/users/items", Access::kWrite},
      {HttpMethod::kPut, "/v1/containers/users/items/u1/u1", Access::kWrite},
      {HttpMethod::kPatch, "/v1/containers/users/items/u1/u1", Access::kWrite},
      {HttpMethod::kDelete, "/v1/containers/users/items/u1/u1", Access::kWrite},
      {HttpMethod::kPost, "/v1/containers/posts/partitions/p1/batch", Access::kWrite},
      {HttpMethod::kPost, "/v1/containers/users/import", Access::kWrite},
      {HttpMethod::kPost, "/v1/processors/usernames/rebuild", Access::kAdmin},
      {HttpMethod::kPost, "/v1/processors/usernames/verify", Access::kAdmin},
      {HttpMethod::kPost, "/v1/processors/usernames/parked/replay", Access::kAdmin},
      {HttpMethod::kPost, "/v1/processors/usernames/pause", Access::kAdmin},
      {HttpMethod::kPost, "/v1/processors/usernames/resume", Access::kAdmin},
      {HttpMethod::kPost, "/v1/processors/usernames/reset?lsn=1", Access::kAdmin},
      {HttpMethod::kGet, "/v1/jobs", Access::kRead},
      {HttpMethod::kGet, "/v1/jobs/7", Access::kRead},
      {HttpMethod::kPost, "/v1/jobs/7/cancel", Access::kAdmin},
      // Unknown paths and methods need a token; the router then says 404/405.
      {HttpMethod::kGet, "/v1/nothing", Access::kRead},
      {HttpMethod::kGet, "/healthz/x", Access::kRead},
      {HttpMethod::kDelete, "/v1/containers", Access::kRead},
      {HttpMethod::kGet, "/v1/processors/usernames/rebuild", Access::kRead},
      {HttpMethod::kGet, "/v1/containers/%zz", Access::kRead},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ApiRouter::Match(c.target, c.method).access, c.access)
        << HttpMethodName(c.method) << " " << c.target;
  }
}

}  // namespace
}  // namespace feedd
