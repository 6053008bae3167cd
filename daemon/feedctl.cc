// feedctl: the command-line companion of a running feedd.
//
//   feedctl [--api HOST:PORT | --ready-file PATH] [--token-file PATH]
//           [--ca-file PATH [--cert-file PATH --key-file PATH]] COMMAND [ARGS]
//
//   processors             list processors: state, applied LSN, lag, parked
//   verify [NAME...]       recompute views from their sources and print every
//                          difference; exit 0 only when all views are right
//   rebuild NAME           derive NAME's view from scratch
//   parked NAME            list NAME's parked changes
//   replay NAME            retry NAME's parked changes
//   pause NAME             stop NAME taking changes (its view stands still)
//   resume NAME            let NAME take changes again
//
// The API address defaults to $FEEDCTL_API, else 127.0.0.1:8080. The bearer
// token is the first line of --token-file, else of $FEEDD_TOKEN_FILE, else
// $FEEDD_TOKEN (never an argument, which `ps` shows). --ca-file switches to
// HTTPS, trusting those CAs; --cert-file and --key-file present a client
// certificate (mTLS).
// Exit codes: 0 ok, 1 differences found or the daemon answered an error,
// 2 usage error or the daemon is unreachable.
#include <boost/json.hpp>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "util/http_client.h"
#include "util/json_parse.h"
#include "util/tls_context.h"

namespace {

constexpr int kOk = 0;
constexpr int kFailed = 1;
constexpr int kUsage = 2;
// A verification recomputes whole views: allow it time.
constexpr std::chrono::minutes kTimeout(30);

struct Reply {
  int status = 0;
  boost::json::value body;
  feedd::Status error;  // of a non-2xx answer (feedd::StatusOfReply)
};

class Client {
 public:
  Client(std::string api, feedd::HttpClientSecurity security)
      : http_(std::move(api), kTimeout, std::move(security)) {}
  const std::string& api() const { return http_.address(); }

  // Throws std::runtime_error when the daemon cannot be reached.
  Reply Call(std::string_view method, const std::string& target) {
    auto reply = http_.Send(method, target, method == "POST" ? "{}" : "");
    if (!reply.ok()) throw std::runtime_error(reply.status().ToString());
    Reply out;
    out.status = reply->status;
    feedd::Result<boost::json::value> body = feedd::ParseJson(reply->body);
    if (body.ok()) out.body = std::move(*body);
    out.error = feedd::StatusOfReply(*reply);
    return out;
  }

 private:
  feedd::HttpClient http_;
};

std::vector<std::string> ProcessorNames(Client& client) {
  Reply r = client.Call("GET", "/v1/processors");
  std::vector<std::string> names;
  for (const auto& p : r.body.at("processors").as_array()) {
    names.emplace_back(p.at("name").as_string());
  }
  return names;
}

int Processors(Client& client) {
  Reply r = client.Call("GET", "/v1/processors");
  if (r.status != 200) {
    std::cerr << "feedctl: " << r.error.ToString() << "\n";
    return kFailed;
  }
  std::printf("%-16s %-12s %-6s %-10s %12s %10s %8s %8s\n", "NAME", "KIND", "SOURCE", "STATE",
              "APPLIED_LSN", "LAG", "LAG_S", "PARKED");
  for (const auto& v : r.body.at("processors").as_array()) {
    const auto& p = v.as_object();
    const auto& lag = p.at("lag").as_object();
    std::printf("%-16s %-12s %-6s %-10s %12llu %10llu %8.3f %8llu\n",
                std::string(p.at("name").as_string()).c_str(),
                std::string(p.at("kind").as_string()).c_str(),
                std::string(p.at("source").as_string()).c_str(),
                std::string(p.at("state").as_string()).c_str(),
                static_cast<unsigned long long>(p.at("appliedLsn").to_number<uint64_t>()),
                static_cast<unsigned long long>(lag.at("changes").to_number<uint64_t>()),
                lag.at("seconds").to_number<double>(),
                static_cast<unsigned long long>(p.at("parked").to_number<uint64_t>()));
  }
  return kOk;
}

int Verify(Client& client, std::vector<std::string> names) {
  if (names.empty()) names = ProcessorNames(client);
  int rc = kOk;
  for (const auto& name : names) {
    Reply r = client.Call("POST", "/v1/processors/" + name + "/verify");
    if (r.status != 200) {
      std::cout << name << ": cannot verify: " << r.error.ToString() << "\n";
      rc = kFailed;
      continue;
    }
    const auto& differences = r.body.at("differences").as_array();
    if (differences.empty()) {
      std::cout << name << ": ok (applied LSN " << r.body.at("appliedLsn") << ")\n";
      continue;
    }
    rc = kFailed;
    std::cout << name << ": " << differences.size() << " difference(s)\n";
    for (const auto& d : differences) std::cout << "  " << d.as_string() << "\n";
  }
  return rc;
}

int Simple(Client& client, std::string_view method, const std::string& target) {
  Reply r = client.Call(method, target);
  std::cout << boost::json::serialize(r.body) << "\n";
  return r.status == 200 ? kOk : kFailed;
}

int Usage() {
  std::cerr << "usage: feedctl [--api HOST:PORT | --ready-file PATH] [--token-file PATH] "
               "[--ca-file PATH [--cert-file PATH --key-file PATH]] "
               "processors | verify [NAME...] | rebuild NAME | parked NAME | replay NAME | "
               "pause NAME | resume NAME\n";
  return kUsage;
}

}  // namespace

int main(int argc, char** argv) {
  std::string api = std::getenv("FEEDCTL_API") ? std::getenv("FEEDCTL_API") : "127.0.0.1:8080";
  std::string token_file;
  feedd::TlsClientFiles tls_files;
  std::vector<std::string> args(argv + 1, argv + argc);
  while (!args.empty() && args[0].rfind("--", 0) == 0) {
    if (args.size() < 2) return Usage();
    if (args[0] == "--api") {
      api = args[1];
    } else if (args[0] == "--ready-file") {
      std::ifstream in(args[1]);
      std::stringstream text;
      text << in.rdbuf();
      auto ready = feedd::ParseJson(text.str());
      const boost::json::object* o = ready.ok() ? ready->if_object() : nullptr;
      const boost::json::value* address = o != nullptr ? o->if_contains("api") : nullptr;
      if (address == nullptr || !address->is_string()) {
        std::cerr << "feedctl: cannot read the API address from " << args[1] << "\n";
        return kUsage;
      }
      api = std::string(address->get_string());
    } else if (args[0] == "--token-file") {
      token_file = args[1];
    } else if (args[0] == "--ca-file") {
      tls_files.ca_file = args[1];
    } else if (args[0] == "--cert-file") {
      tls_files.cert_file = args[1];
    } else if (args[0] == "--key-file") {
      tls_files.key_file = args[1];
    } else {
      return Usage();
    }
    args.erase(args.begin(), args.begin() + 2);
  }
  if (args.empty()) return Usage();
  feedd::HttpClientSecurity security;
  feedd::Result<std::string> token = feedd::ClientBearerToken(token_file);
  if (!token.ok()) {
    std::cerr << "feedctl: " << token.status().message() << "\n";
    return kUsage;
  }
  security.bearer_token = std::move(*token);
  if (!tls_files.ca_file.empty()) {
    auto tls = feedd::MakeClientTlsContext(tls_files);
    if (!tls.ok()) {
      std::cerr << "feedctl: " << tls.status().message() << "\n";
      return kUsage;
    }
    security.tls = std::move(*tls);
  } else if (!tls_files.cert_file.empty() || !tls_files.key_file.empty()) {
    return Usage();
  }
  Client client(api, std::move(security));
  try {
    const std::string& command = args[0];
    if (command == "processors" && args.size() == 1) return Processors(client);
    if (command == "verify") return Verify(client, {args.begin() + 1, args.end()});
    if (args.size() != 2) return Usage();
    const std::string base = "/v1/processors/" + args[1];
    if (command == "rebuild") return Simple(client, "POST", base + "/rebuild");
    if (command == "parked") return Simple(client, "GET", base + "/parked");
    if (command == "replay") return Simple(client, "POST", base + "/parked/replay");
    if (command == "pause") return Simple(client, "POST", base + "/pause");
    if (command == "resume") return Simple(client, "POST", base + "/resume");
    return Usage();
  } catch (const std::exception& e) {
    std::cerr << "feedctl: " << client.api() << ": " << e.what() << "\n";
    return kUsage;
  }
}
