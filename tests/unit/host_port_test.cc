// ParseApiAddress(): the addresses feedctl and feedd worker connect to.
#include "daemon/host_port.h"

#include <gtest/gtest.h>

namespace feedd {
namespace {

TEST(ParseApiAddressTest, AcceptsHostPortAndHttpUrls) {
  struct Case {
    const char* text;
    const char* host;
    uint16_t port;
  };
  for (const Case& c :
       {Case{"127.0.0.1:8080", "127.0.0.1", 8080}, Case{"http://127.0.0.1:8080", "127.0.0.1", 8080},
        Case{"http://localhost:9000/", "localhost", 9000},
        Case{"HTTP://feedd.internal:80", "feedd.internal", 80},
        Case{"http://[::1]:8080", "::1", 8080}}) {
    Result<HostPort> parsed = ParseApiAddress(c.text);
    ASSERT_TRUE(parsed.ok()) << c.text << ": " << parsed.status().ToString();
    EXPECT_EQ(parsed->host, c.host) << c.text;
    EXPECT_EQ(parsed->port, c.port) << c.text;
  }
}

TEST(ParseApiAddressTest, RefusesWhatItCannotConnectTo) {
  struct Case {
    const char* text;
    const char* why;
  };
  for (const Case& c :
       {Case{"https://127.0.0.1:8080", "plain HTTP"}, Case{"ftp://127.0.0.1:8080", "plain HTTP"},
        Case{"http://127.0.0.1:8080/v1", "no path"}, Case{"http://127.0.0.1", "no port"},
        Case{"127.0.0.1:0", "port 0"}, Case{"127.0.0.1:70000", "0..65535"}, Case{"", "no port"}}) {
    Result<HostPort> parsed = ParseApiAddress(c.text);
    ASSERT_FALSE(parsed.ok()) << c.text;
    EXPECT_EQ(parsed.status().code(), ErrorCode::kInvalidRequest) << c.text;
    EXPECT_NE(parsed.status().message().find(c.why), std::string::npos)
        << c.text << ": " << parsed.status().message();
  }
}

}  // namespace
}  // namespace feedd
