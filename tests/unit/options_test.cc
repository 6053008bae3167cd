// Tests of daemon/options.h: precedence (command line > environment > file >
// default), aliases, validation messages naming the option, containers and
// pass-through keys.
#include "daemon/options.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "daemon/default_config.h"
#include "processors/processor_manager.h"
#include "tests/blog_scenario.h"

namespace feedd {
namespace {

class OptionsTest : public ::testing::Test {
 protected:
  // Loads the configuration from args_ (after "feedd") and env_.
  Result<DaemonConfig> Load() {
    std::vector<const char*> argv{"feedd"};
    for (const std::string& arg : args_) argv.push_back(arg.c_str());
    std::vector<const char*> envp;
    for (const std::string& var : env_) envp.push_back(var.c_str());
    envp.push_back(nullptr);
    return LoadConfig(static_cast<int>(argv.size()), argv.data(), envp.data(), &flags_);
  }

  // Loads and expects success.
  DaemonConfig LoadOk() {
    Result<DaemonConfig> config = Load();
    EXPECT_TRUE(config.ok()) << config.status().ToString();
    return config.ok() ? *config : DaemonConfig();
  }

  // Loads and expects an error whose message contains `needle`.
  void ExpectError(const std::string& needle) {
    Result<DaemonConfig> config = Load();
    ASSERT_FALSE(config.ok()) << "expected an error mentioning " << needle;
    EXPECT_NE(config.status().message().find(needle), std::string::npos)
        << config.status().message();
  }

  // Writes `content` to a config file and adds --config FILE.
  void UseConfigFile(const std::string& content) {
    std::string path = ::testing::TempDir() + "feedd_options_test_" +
                       ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".conf";
    std::ofstream(path) << content;
    args_.push_back("--config=" + path);
  }

  std::vector<std::string> args_;
  std::vector<std::string> env_;
  CommandFlags flags_;
};

TEST_F(OptionsTest, QueryAndFeedPageLimits) {
  DaemonConfig config = LoadOk();
  EXPECT_EQ(config.query_limits.max_filters, 16u);
  EXPECT_EQ(config.query_limits.max_items_read, 100000u);
  EXPECT_EQ(config.query_limits.max_bytes_read, 64u * 1024 * 1024);
  EXPECT_EQ(config.query_limits.max_page_bytes, 16u * 1024 * 1024);
  EXPECT_EQ(config.query_threads, 2u);
  EXPECT_EQ(config.query_max_queued, 64u);
  EXPECT_EQ(config.feed_max_page_bytes, 16u * 1024 * 1024);

  args_ = {"--query.max_filters=4",       "--query.max_items_read=10",
           "--query.max_bytes_read=4096", "--query.max_page_bytes=2048",
           "--query.threads=3",           "--query.max_queued=5",
           "--feed.max_page_bytes=8192"};
  config = LoadOk();
  EXPECT_EQ(config.query_limits.max_filters, 4u);
  EXPECT_EQ(config.query_limits.max_items_read, 10u);
  EXPECT_EQ(config.query_limits.max_bytes_read, 4096u);
  EXPECT_EQ(config.query_limits.max_page_bytes, 2048u);
  EXPECT_EQ(config.query_threads, 3u);
  EXPECT_EQ(config.query_max_queued, 5u);
  EXPECT_EQ(config.feed_max_page_bytes, 8192u);

  args_ = {"--query.max_filters=0"};
  ExpectError("query.max_filters");
  args_ = {"--feed.max_page_bytes=10"};
  ExpectError("feed.max_page_bytes");
}

// Sizes given in MiB are stored in bytes, within their bounds.
TEST_F(OptionsTest, SizesInMiBAreStoredInBytes) {
  DaemonConfig config = LoadOk();
  EXPECT_EQ(config.store.max_total_wal_bytes, 256u * 1024 * 1024);
  EXPECT_EQ(config.store.wal_recycle_files, 8u);
  EXPECT_EQ(config.import_batch_bytes, 4u * 1024 * 1024);

  args_ = {"--storage.max_wal_mb=16", "--storage.wal_recycle_files=0", "--import.batch_mb=8",
           "--storage.block_cache_mb=32"};
  config = LoadOk();
  EXPECT_EQ(config.store.max_total_wal_bytes, 16u * 1024 * 1024);
  EXPECT_EQ(config.store.wal_recycle_files, 0u);
  EXPECT_EQ(config.import_batch_bytes, 8u * 1024 * 1024);
  EXPECT_EQ(config.store.block_cache_bytes, 32u * 1024 * 1024);

  args_ = {"--storage.max_wal_mb=15"};
  ExpectError("storage.max_wal_mb");
  args_ = {"--storage.wal_recycle_files=65"};
  ExpectError("storage.wal_recycle_files");
}

TEST_F(OptionsTest, DefaultsWithoutAnySource) {
  DaemonConfig config = LoadOk();
  EXPECT_EQ(config.store.data_dir, "./data");
  EXPECT_TRUE(config.store.sync);
  EXPECT_EQ(config.store.max_item_bytes, 2097152u);
  EXPECT_TRUE(config.store.before_images);
  EXPECT_EQ(config.store.block_cache_bytes, 256u * 1024 * 1024);
  EXPECT_EQ(config.store.retention_ms, 168ull * 3600 * 1000);
  EXPECT_EQ(config.store.retention_bytes, 0u);
  EXPECT_EQ(config.store.retention_interval_ms, 10000u);
  EXPECT_EQ(config.http_listen.ToString(), "127.0.0.1:8080");
  EXPECT_EQ(config.http_threads, 2u);
  EXPECT_EQ(config.http_max_request_bytes, 8388608u);
  EXPECT_EQ(config.http_idle_timeout_seconds, 60u);
  EXPECT_EQ(config.http_shutdown_grace_seconds, 10u);
  EXPECT_EQ(config.http_max_connections, 512u);
  EXPECT_EQ(config.http_max_buffered_bytes, 268435456u);
  EXPECT_EQ(config.metrics_request_timeout_ms, 3000u);
  EXPECT_EQ(config.metrics_listen.ToString(), "127.0.0.1:9464");
  EXPECT_EQ(config.log_level, LogLevel::kInfo);
  EXPECT_EQ(config.kafka.brokers, KafkaBrokers::kEmbedded);
  EXPECT_EQ(config.kafka.bootstrap, "");
  EXPECT_EQ(config.kafka.topic_prefix, "feedd.");
  EXPECT_TRUE(config.kafka.properties.empty());
  EXPECT_EQ(config.ready_file, "");
  EXPECT_EQ(config.instance_name, "feedd");
  ASSERT_EQ(config.store.containers.size(), BlogContainers().size());
  EXPECT_EQ(config.store.containers[1].name, "posts");
  EXPECT_FALSE(flags_.help || flags_.version || flags_.check_config);
}

TEST_F(OptionsTest, BufferedBytesHoldAtLeastOneRequest) {
  args_.push_back("--http.max_request_bytes=100000");
  args_.push_back("--http.max_buffered_bytes=99999");
  ExpectError("http.max_buffered_bytes: 99999 is less than http.max_request_bytes (100000)");
  args_.back() = "--http.max_buffered_bytes=100000";
  EXPECT_EQ(LoadOk().http_max_buffered_bytes, 100000u);
}

TEST_F(OptionsTest, CommandLineOverEnvironmentOverFileOverDefault) {
  UseConfigFile("[http]\nthreads = 3\n");
  env_ = {"FEEDD_HTTP_THREADS=4"};
  args_.push_back("--http.threads=5");
  EXPECT_EQ(LoadOk().http_threads, 5u);

  args_.pop_back();
  EXPECT_EQ(LoadOk().http_threads, 4u);

  env_.clear();
  EXPECT_EQ(LoadOk().http_threads, 3u);

  args_.clear();
  EXPECT_EQ(LoadOk().http_threads, 2u);
}

TEST_F(OptionsTest, EnvironmentNamesDeriveFromOptionNames) {
  env_ = {"FEEDD_STORAGE_DATA_DIR=/env/data", "FEEDD_READY_FILE=/run/ready",
          "FEEDD_LOG_LEVEL=debug", "FEEDD_UNRELATED=1", "PATH=/bin"};
  DaemonConfig config = LoadOk();
  EXPECT_EQ(config.store.data_dir, "/env/data");
  EXPECT_EQ(config.ready_file, "/run/ready");
  EXPECT_EQ(config.log_level, LogLevel::kDebug);
}

TEST_F(OptionsTest, ContractAliases) {
  args_ = {"--data-dir",
           "/d",
           "--listen=0.0.0.0:0",
           "--auth.allow_unauthenticated=true",
           "--metrics-listen=127.0.0.1:0",
           "--ready-file=/tmp/ready",
           "--kafka.brokers=k1:9092,k2:9092"};
  DaemonConfig config = LoadOk();
  EXPECT_EQ(config.store.data_dir, "/d");
  EXPECT_EQ(config.http_listen.host, "0.0.0.0");
  EXPECT_EQ(config.http_listen.port, 0);
  EXPECT_EQ(config.metrics_listen.port, 0);
  EXPECT_EQ(config.ready_file, "/tmp/ready");
  EXPECT_EQ(config.kafka.brokers, KafkaBrokers::kCluster);
  EXPECT_EQ(config.kafka.bootstrap, "k1:9092,k2:9092");
}

TEST_F(OptionsTest, KafkaBrokersIsEmbeddedNoneOrACluster) {
  args_ = {"--kafka.brokers=none"};
  DaemonConfig none = LoadOk();
  EXPECT_EQ(none.kafka.brokers, KafkaBrokers::kNone);
  EXPECT_EQ(none.kafka.bootstrap, "");
  args_ = {"--kafka.brokers=embedded"};
  EXPECT_EQ(LoadOk().kafka.brokers, KafkaBrokers::kEmbedded);
  args_ = {"--kafka.brokers=k1:9092, k2:9092"};
  DaemonConfig cluster = LoadOk();
  EXPECT_EQ(cluster.kafka.brokers, KafkaBrokers::kCluster);
  EXPECT_EQ(cluster.kafka.bootstrap, "k1:9092, k2:9092");
  args_ = {"--kafka.brokers=k1:9092,"};
  ExpectError("kafka.brokers");
  args_ = {"--kafka.brokers="};
  ExpectError("kafka.brokers");
}

TEST_F(OptionsTest, AliasAndOptionTogetherIsAnError) {
  args_ = {"--data-dir=/a", "--storage.data_dir=/b"};
  ExpectError("storage.data_dir");
}

TEST_F(OptionsTest, Flags) {
  args_ = {"--check-config"};
  EXPECT_TRUE(Load().ok());
  EXPECT_TRUE(flags_.check_config);

  args_ = {"--help", "--http.threads=0"};  // help does not validate
  EXPECT_TRUE(Load().ok());
  EXPECT_TRUE(flags_.help);

  args_ = {"--version"};
  EXPECT_TRUE(Load().ok());
  EXPECT_TRUE(flags_.version);
  EXPECT_FALSE(flags_.help);
}

TEST_F(OptionsTest, InvalidValuesNameTheOption) {
  args_ = {"--check-config", "--http.threads=0"};
  ExpectError("invalid value for http.threads: expected an integer in 1..64, got '0'");
  EXPECT_TRUE(flags_.check_config);

  args_ = {"--http.threads=65"};
  ExpectError("http.threads");
  args_ = {"--storage.max_item_bytes=12x"};
  ExpectError("storage.max_item_bytes");
  args_ = {"--storage.sync=maybe"};
  ExpectError("storage.sync");
  args_ = {"--log.level=verbose"};
  ExpectError("log.level");
  args_ = {"--kafka.brokers=host"};
  ExpectError("kafka.brokers");
  args_ = {"--kafka.topic_prefix=a b"};
  ExpectError("kafka.topic_prefix");
  args_ = {"--instance.name="};
  ExpectError("instance.name");

  env_ = {"FEEDD_FEED_RETENTION_HOURS=-1"};
  args_.clear();
  ExpectError("feed.retention_hours");

  env_.clear();
  UseConfigFile("[http]\nidle_timeout_seconds = 0\n");
  ExpectError("http.idle_timeout_seconds");
}

TEST_F(OptionsTest, TlsFilesGoTogether) {
  for (std::string section : {"http", "metrics"}) {
    args_ = {"--" + section + ".tls_cert_file=c.pem"};
    ExpectError(section + ".tls_key_file: " + section + ".tls_cert_file and " + section +
                ".tls_key_file go together");
    args_ = {"--" + section + ".tls_key_file=k.pem"};
    ExpectError(section + ".tls_key_file");
    args_ = {"--" + section + ".tls_client_ca_file=ca.pem"};
    ExpectError(section + ".tls_client_ca_file: client certificates need HTTPS");
  }
  args_ = {"--metrics.tls_cert_file=c.pem", "--metrics.tls_key_file=k.pem",
           "--metrics.tls_client_ca_file=ca.pem"};
  DaemonConfig config = LoadOk();
  EXPECT_EQ(config.metrics_tls_cert_file, "c.pem");
  EXPECT_EQ(config.metrics_tls_key_file, "k.pem");
  EXPECT_EQ(config.metrics_tls_client_ca_file, "ca.pem");
  EXPECT_EQ(config.http_tls_cert_file, "");
}

TEST_F(OptionsTest, Booleans) {
  for (const char* yes : {"true", "1", "yes", "on", "TRUE", "On"}) {
    args_ = {std::string("--storage.before_images=") + yes};
    EXPECT_TRUE(LoadOk().store.before_images) << yes;
  }
  for (const char* no : {"false", "0", "no", "off", "False"}) {
    args_ = {std::string("--storage.sync=") + no};
    EXPECT_FALSE(LoadOk().store.sync) << no;
  }
}

TEST_F(OptionsTest, HostPortValidation) {
  for (const char* good : {"127.0.0.1:0", "localhost:8080", "[::1]:65535", "127.1.2.3:1"}) {
    args_ = {std::string("--http.listen=") + good};
    EXPECT_TRUE(Load().ok()) << good;
  }
  args_ = {"--listen=[::1]:80"};
  EXPECT_EQ(LoadOk().http_listen.host, "::1");
  for (const char* bad :
       {"localhost", "1.2.3.4:65536", ":80", "::1:80", "host:", "host:-1", "[::1:80", "a b:1"}) {
    args_ = {std::string("--http.listen=") + bad};
    ExpectError("invalid value for http.listen");
  }
  args_ = {"--metrics-listen=127.0.0.1:8080"};  // the same as http.listen
  ExpectError("metrics.listen");
}

// Without auth.tokens_file only loopback addresses are served, unless
// auth.allow_unauthenticated says otherwise (docs/security.md).
TEST_F(OptionsTest, NonLoopbackListenNeedsAuthentication) {
  for (const char* open : {"0.0.0.0:0", "[::]:8080", "10.1.2.3:80", "[::ffff:10.0.0.1]:80",
                           "db.example:8080", "128.0.0.1:80"}) {
    args_ = {std::string("--http.listen=") + open};
    ExpectError("is not a loopback address");
    args_.push_back("--auth.allow_unauthenticated=true");
    EXPECT_TRUE(Load().ok()) << open;
    args_ = {std::string("--http.listen=") + open, "--auth.tokens_file=/etc/feedd/tokens"};
    DaemonConfig config = LoadOk();
    EXPECT_EQ(config.auth_tokens_file, "/etc/feedd/tokens");
    EXPECT_FALSE(config.auth_allow_unauthenticated);
  }
  for (const char* loopback : {"127.0.0.1:0", "[::1]:0", "localhost:1", "[::ffff:127.0.0.1]:1"}) {
    args_ = {std::string("--http.listen=") + loopback};
    EXPECT_TRUE(Load().ok()) << loopback;
  }
}

// The metrics port too: a non-loopback metrics.listen needs basic
// authentication or client certificates, or the explicit open switch.
TEST_F(OptionsTest, NonLoopbackMetricsListenNeedsAuthentication) {
  const std::string open = "--metrics.listen=0.0.0.0:9464";
  args_ = {open};
  ExpectError("metrics.listen: 0.0.0.0:9464 is not a loopback address");
  args_ = {open, "--auth.tokens_file=/etc/feedd/tokens"};
  ExpectError("metrics.listen: 0.0.0.0:9464 is not a loopback address");
  args_ = {open, "--auth.tokens_file=/etc/feedd/tokens", "--metrics.authenticate=true"};
  EXPECT_TRUE(LoadOk().metrics_authenticate);
  args_ = {open, "--metrics.tls_cert_file=c.pem", "--metrics.tls_key_file=k.pem",
           "--metrics.tls_client_ca_file=ca.pem"};
  EXPECT_EQ(LoadOk().metrics_tls_client_ca_file, "ca.pem");
  args_ = {open, "--auth.allow_unauthenticated=true"};
  EXPECT_TRUE(LoadOk().auth_allow_unauthenticated);
  args_ = {"--metrics.listen=[::1]:9464"};
  EXPECT_TRUE(Load().ok());
}

// And the worker's: worker.metrics_listen under the same rule. The options
// do not know whether they configure `feedd worker`, so it holds in every
// mode.
TEST_F(OptionsTest, NonLoopbackWorkerMetricsListenNeedsAuthentication) {
  const std::string open = "--worker.metrics_listen=[::]:9465";
  args_ = {open};
  ExpectError("worker.metrics_listen: [::]:9465 is not a loopback address");
  args_ = {open, "--auth.tokens_file=/etc/feedd/tokens"};
  ExpectError("worker.metrics_listen: [::]:9465 is not a loopback address");
  args_ = {open, "--auth.tokens_file=/etc/feedd/tokens", "--metrics.authenticate=true"};
  EXPECT_EQ(LoadOk().worker_metrics_listen.ToString(), "[::]:9465");
  args_ = {open, "--metrics.tls_cert_file=c.pem", "--metrics.tls_key_file=k.pem",
           "--metrics.tls_client_ca_file=ca.pem"};
  EXPECT_EQ(LoadOk().metrics_tls_client_ca_file, "ca.pem");
  args_ = {open, "--auth.allow_unauthenticated=true"};
  EXPECT_TRUE(LoadOk().auth_allow_unauthenticated);
  args_ = {"--worker.metrics_listen=127.0.0.1:0"};
  EXPECT_TRUE(Load().ok());
}

TEST_F(OptionsTest, WorkerApiTakesHostPortOrHttpUrl) {
  args_ = {"--worker.api=http://10.0.0.5:8080/"};
  EXPECT_EQ(LoadOk().worker_api, "10.0.0.5:8080");
  args_ = {"--worker.api=10.0.0.5:8080"};
  EXPECT_EQ(LoadOk().worker_api, "10.0.0.5:8080");
  args_ = {"--worker.api=https://10.0.0.5:8080"};
  ExpectError("invalid value for worker.api");
}

TEST_F(OptionsTest, UnitConversions) {
  args_ = {"--feed.retention_hours=2", "--feed.retention_mb=3", "--storage.block_cache_mb=4"};
  DaemonConfig config = LoadOk();
  EXPECT_EQ(config.store.retention_ms, 2ull * 3600 * 1000);
  EXPECT_EQ(config.store.retention_bytes, 3ull * 1024 * 1024);
  EXPECT_EQ(config.store.block_cache_bytes, 4u * 1024 * 1024);
}

TEST_F(OptionsTest, ContainersFromIniReplaceTheDefaults) {
  UseConfigFile(
      "[storage]\ndata_dir = /srv/feedd\n"
      "[container.users]\npartition_key = /userId\n"
      "[container.posts]\npartition_key = /postId\nindexes = /userId, /meta/lang\n");
  DaemonConfig config = LoadOk();
  EXPECT_EQ(config.store.data_dir, "/srv/feedd");
  ASSERT_EQ(config.store.containers.size(), 2u);
  EXPECT_EQ(config.store.containers[0].name, "users");
  EXPECT_EQ(config.store.containers[0].partition_key_path, "/userId");
  EXPECT_TRUE(config.store.containers[0].index_paths.empty());
  EXPECT_EQ(config.store.containers[1].name, "posts");
  EXPECT_EQ(config.store.containers[1].index_paths,
            (std::vector<std::string>{"/userId", "/meta/lang"}));
}

TEST_F(OptionsTest, ContainersFromTheCommandLineOverrideTheFile) {
  UseConfigFile("[container.users]\npartition_key = /userId\n");
  args_.push_back("--container.users.partition_key=/uid");
  args_.push_back("--container.likes.partition_key=/postId");
  args_.push_back("--container.likes.indexes=/userId");
  DaemonConfig config = LoadOk();
  ASSERT_EQ(config.store.containers.size(), 2u);
  EXPECT_EQ(config.store.containers[0].partition_key_path, "/uid");
  EXPECT_EQ(config.store.containers[1].name, "likes");
  EXPECT_EQ(config.store.containers[1].index_paths, std::vector<std::string>{"/userId"});
}

TEST_F(OptionsTest, ContainerWriters) {
  EXPECT_EQ(LoadOk().store.containers[2].writers, ContainerWriters::kProcessors)
      << "the default feed is filled by processors only";
  UseConfigFile(
      "[container.users]\npartition_key = /userId\n"
      "[container.feed]\npartition_key = /type\nwriters = processors\n");
  DaemonConfig config = LoadOk();
  ASSERT_EQ(config.store.containers.size(), 2u);
  EXPECT_EQ(config.store.containers[0].writers, ContainerWriters::kAny);
  EXPECT_EQ(config.store.containers[1].writers, ContainerWriters::kProcessors);
  args_.push_back("--container.feed.writers=any");
  EXPECT_EQ(LoadOk().store.containers[1].writers, ContainerWriters::kAny);
  args_ = {"--container.feed.partition_key=/type", "--container.feed.writers=nobody"};
  ExpectError("container.feed.writers must be 'any' or 'processors'");
}

// ---- The scenario rule (options.h): declared whole, or the built-in one ----

std::string SourceConfigsFile() { return std::string(FEEDD_SOURCE_DIR) + "/configs/feedd.conf"; }

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << path;
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void ExpectContainersEqual(const std::vector<ContainerSpec>& got,
                           const std::vector<ContainerSpec>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(want[i].name);
    EXPECT_EQ(got[i].name, want[i].name);
    EXPECT_EQ(got[i].partition_key_path, want[i].partition_key_path);
    EXPECT_EQ(got[i].index_paths, want[i].index_paths);
    EXPECT_EQ(got[i].writers, want[i].writers);
  }
}

TEST_F(OptionsTest, TheBuiltInConfigurationIsConfigsFeeddConf) {
  EXPECT_EQ(DefaultConfigText(), ReadFile(SourceConfigsFile()))
      << "the binary was built from another configs/feedd.conf";
}

TEST_F(OptionsTest, WithoutDeclarationsTheScenarioIsTheBlog) {
  DaemonConfig config = LoadOk();
  EXPECT_TRUE(config.default_scenario);
  ExpectContainersEqual(config.store.containers, BlogContainers());
  EXPECT_EQ(config.processor_settings, BlogProcessorSettings());
  // A table option elsewhere in the file or on the command line changes nothing.
  UseConfigFile("[http]\nthreads = 3\n");
  args_.push_back("--kafka.linger.ms=1");
  config = LoadOk();
  EXPECT_TRUE(config.default_scenario);
  ExpectContainersEqual(config.store.containers, BlogContainers());
  EXPECT_EQ(config.processor_settings, BlogProcessorSettings());
}

TEST_F(OptionsTest, NoConfigFileIsConfigsFeeddConf) {
  DaemonConfig bare = LoadOk();
  args_ = {"--config=" + SourceConfigsFile()};
  DaemonConfig file = LoadOk();
  EXPECT_FALSE(file.default_scenario) << "the file declares its scenario";
  ExpectContainersEqual(file.store.containers, bare.store.containers);
  EXPECT_EQ(file.processor_settings, bare.processor_settings);
  EXPECT_EQ(file.store.data_dir, bare.store.data_dir);
  EXPECT_EQ(file.http_listen.ToString(), bare.http_listen.ToString());
  EXPECT_EQ(file.metrics_listen.ToString(), bare.metrics_listen.ToString());
  EXPECT_EQ(file.kafka.properties, bare.kafka.properties);
}

TEST_F(OptionsTest, DeclaredContainersRunOnlyDeclaredProcessors) {
  // The blog's containers declared by hand, as configs/feedd.conf has them,
  // without its [processor.*] sections: no processor.
  UseConfigFile(
      "[container.users]\npartition_key = /userId\n"
      "[container.posts]\npartition_key = /postId\nindexes = /userId\n"
      "[container.feed]\npartition_key = /type\nwriters = processors\n");
  DaemonConfig config = LoadOk();
  EXPECT_FALSE(config.default_scenario);
  ExpectContainersEqual(config.store.containers, BlogContainers());
  EXPECT_TRUE(config.processor_settings.empty());
  // feed is written by processors only, and none is declared: an error that
  // says what to declare.
  Status status =
      ProcessorManager::Validate(config.processor_settings, config.store.containers, true);
  EXPECT_EQ(status.code(), ErrorCode::kInvalidRequest);
  EXPECT_NE(status.message().find("container feed is written by processors only"),
            std::string::npos)
      << status.message();
  EXPECT_NE(status.message().find("target_container = feed"), std::string::npos)
      << status.message();

  // With the processor that fills feed, only that one.
  args_.push_back("--processor.feed.kind=top_n");
  for (const char* key : {"source_container", "source_filter", "target_container", "order_by",
                          "cap", "truncate_field", "truncate_chars"}) {
    args_.push_back("--processor.feed." + std::string(key) + "=" +
                    BlogProcessorSettings().at("feed." + std::string(key)));
  }
  config = LoadOk();
  EXPECT_EQ(config.processor_settings.size(), 8u);
  EXPECT_EQ(config.processor_settings.count("usernames.kind"), 0u);
  EXPECT_TRUE(
      ProcessorManager::Validate(config.processor_settings, config.store.containers, true).ok());
}

TEST_F(OptionsTest, DeclaredProcessorsComeWithoutTheBlogContainers) {
  args_ = {"--processor.copies.kind=projection", "--processor.copies.source_container=posts",
           "--processor.copies.target_container=users"};
  DaemonConfig config = LoadOk();
  EXPECT_FALSE(config.default_scenario);
  EXPECT_TRUE(config.store.containers.empty());
  EXPECT_EQ(config.processor_settings.size(), 3u);
  Status status =
      ProcessorManager::Validate(config.processor_settings, config.store.containers, true);
  EXPECT_NE(status.message().find("names no declared container: 'posts'"), std::string::npos)
      << status.message();
}

TEST_F(OptionsTest, OneContainerOnTheCommandLineIsTheWholeScenario) {
  args_ = {"--container.notes.partition_key=/g"};
  DaemonConfig config = LoadOk();
  EXPECT_FALSE(config.default_scenario);
  ASSERT_EQ(config.store.containers.size(), 1u);
  EXPECT_EQ(config.store.containers[0].name, "notes");
  EXPECT_TRUE(config.processor_settings.empty());
}

TEST_F(OptionsTest, TuningABuiltInProcessorKeepsTheBlogScenario) {
  // Keys of built-in processors other than kind tune them: the blog runs,
  // with those keys over its own, from the command line or the file.
  args_ = {"--processor.feed.parallelism=1", "--processor.usernames.max_attempts=9",
           "--processor.usernames.read_memo_mb=16"};
  UseConfigFile("[processor.user_posts]\ntruncate_chars = 20\n");
  DaemonConfig config = LoadOk();
  EXPECT_TRUE(config.default_scenario);
  ExpectContainersEqual(config.store.containers, BlogContainers());
  std::map<std::string, std::string> want = BlogProcessorSettings();
  want["feed.parallelism"] = "1";
  want["usernames.max_attempts"] = "9";
  want["usernames.read_memo_mb"] = "16";
  want["user_posts.truncate_chars"] = "20";
  EXPECT_EQ(config.processor_settings, want);
  EXPECT_TRUE(
      ProcessorManager::Validate(config.processor_settings, config.store.containers, true).ok());
  want["usernames.read_memo_mb"] = "65537";
  Status too_much = ProcessorManager::Validate(want, config.store.containers, true);
  EXPECT_FALSE(too_much.ok());
  EXPECT_NE(too_much.message().find("read_memo_mb"), std::string::npos) << too_much.ToString();
}

TEST_F(OptionsTest, AKindOrANewProcessorDeclaresTheScenario) {
  for (const char* key : {"--processor.feed.kind=top_n", "--processor.copies.parallelism=1",
                          "--processor.feedx.parallelism=1"}) {
    args_ = {"--processor.feed.parallelism=1", key};
    DaemonConfig config = LoadOk();
    EXPECT_FALSE(config.default_scenario) << key;
    EXPECT_TRUE(config.store.containers.empty()) << key;
    EXPECT_EQ(config.processor_settings.count("usernames.kind"), 0u) << key;
  }
}

TEST_F(OptionsTest, HelpAndVersionHoldTheBlogScenario) {
  args_ = {"--version", "--container.notes.partition_key=/g"};
  DaemonConfig config = LoadOk();
  EXPECT_TRUE(flags_.version);
  ExpectContainersEqual(config.store.containers, BlogContainers());
  EXPECT_EQ(config.processor_settings, BlogProcessorSettings());
}

TEST_F(OptionsTest, BadContainers) {
  args_ = {"--container.users.indexes=/a"};
  ExpectError("container.users.partition_key is required");
  args_ = {"--container.Users.partition_key=/id"};
  ExpectError("invalid container Users");
  args_ = {"--container.users.partition_key=userId"};
  ExpectError("invalid container users");
  args_ = {"--container.users.color=blue"};
  ExpectError("unknown option container.users.color");
  args_ = {"--container.users.partition_key", "/id"};  // needs --KEY=VALUE
  ExpectError("container.users.partition_key needs a value");
}

TEST_F(OptionsTest, UnknownOptionsAreErrors) {
  args_ = {"--bogus=1"};
  ExpectError("unknown option --bogus");
  args_ = {"--http.thread=2"};
  ExpectError("unknown option --http.thread");
  args_ = {"--data=/x"};  // no guessing of abbreviations
  ExpectError("--data");
  args_ = {"stray"};
  ExpectError("unexpected argument 'stray'");
  args_.clear();
  UseConfigFile("[http]\nfoo = 1\n");
  ExpectError("unknown option http.foo");
}

TEST_F(OptionsTest, KafkaAndProcessorKeysArePassedThrough) {
  UseConfigFile(
      "[kafka]\nbrokers = k:9092\nlinger.ms = 5\nacks = 1\n[processor.views]\nkind = copy\n");
  args_.push_back("--kafka.acks=all");
  DaemonConfig config = LoadOk();
  EXPECT_EQ(config.kafka.brokers, KafkaBrokers::kCluster);
  EXPECT_EQ(config.kafka.bootstrap, "k:9092");
  EXPECT_EQ(config.kafka.properties,
            (std::map<std::string, std::string>{{"acks", "all"}, {"linger.ms", "5"}}));
  EXPECT_EQ(config.processor_settings,
            (std::map<std::string, std::string>{{"views.kind", "copy"}}));
}

// A pass-through key librdkafka does not know used to pass --check-config and
// then stop the daemon at start (exit 1, a restart loop under systemd).
TEST_F(OptionsTest, UnknownKafkaPropertiesAreRejectedAtLoad) {
  args_ = {"--check-config", "--kafka.max_inflight_bytes=1000"};
  ExpectError("kafka.max_inflight_bytes");
  args_.clear();
  UseConfigFile("[kafka]\nlinger.ms = 5\nno.such.property = 1\n");
  ExpectError("invalid option kafka.no.such.property");
  args_ = {"--kafka.linger.ms=soon"};  // a known property with a bad value
  ExpectError("kafka.linger.ms");
}

// Feedd options, not librdkafka properties (which would reject them).
TEST_F(OptionsTest, ResolvedIntervalAndEmbeddedPort) {
  DaemonConfig defaults = LoadOk();
  EXPECT_EQ(defaults.kafka.resolved_interval_ms, 0u);
  EXPECT_EQ(defaults.kafka.heartbeat_interval_ms, 0u);
  EXPECT_EQ(defaults.kafka.embedded_port, 0u);
  args_ = {"--kafka.resolved_interval_ms=1000", "--kafka.embedded_port=39092",
           "--kafka.heartbeat_interval_ms=250"};
  DaemonConfig config = LoadOk();
  EXPECT_EQ(config.kafka.resolved_interval_ms, 1000u);
  EXPECT_EQ(config.kafka.embedded_port, 39092u);
  EXPECT_EQ(config.kafka.heartbeat_interval_ms, 250u);
  EXPECT_TRUE(config.kafka.properties.empty());
  args_ = {"--kafka.embedded_port=65536"};
  ExpectError("kafka.embedded_port");
  args_ = {"--kafka.resolved_interval_ms=-1"};
  ExpectError("kafka.resolved_interval_ms");
  args_ = {"--kafka.heartbeat_interval_ms=3600001"};
  ExpectError("kafka.heartbeat_interval_ms");
}

TEST_F(OptionsTest, MessageKeyAndTombstones) {
  EXPECT_EQ(LoadOk().kafka.message_key, MessageKey::kPartitionKey);
  args_ = {"--kafka.message_key=item", "--kafka.tombstones=true"};
  DaemonConfig config = LoadOk();
  EXPECT_EQ(config.kafka.message_key, MessageKey::kItem);
  EXPECT_TRUE(config.kafka.tombstones);
  args_ = {"--kafka.message_key=id"};
  ExpectError("kafka.message_key");
  // Tombstones keyed by partition key would compact away whole partitions.
  args_ = {"--kafka.tombstones=true"};
  ExpectError("kafka.message_key=item");
  args_ = {"--check-config", "--kafka.tombstones=true", "--kafka.message_key=partition_key"};
  ExpectError("kafka.tombstones");
}

TEST_F(OptionsTest, MaxAdminTasks) {
  EXPECT_EQ(LoadOk().processors_max_admin_tasks, 2u);
  args_ = {"--processors.max_admin_tasks=5"};
  EXPECT_EQ(LoadOk().processors_max_admin_tasks, 5u);
  args_ = {"--processors.max_admin_tasks=0"};
  ExpectError("processors.max_admin_tasks");
  args_ = {"--processors.max_admin_tasks=65"};
  ExpectError("processors.max_admin_tasks");
}

TEST_F(OptionsTest, MissingConfigFile) {
  args_ = {"--config=/nonexistent/feedd.conf"};
  ExpectError("cannot open config file /nonexistent/feedd.conf");
}

TEST_F(OptionsTest, RepeatedOptionInTheFile) {
  UseConfigFile("[http]\nthreads = 3\nthreads = 4\n");
  ExpectError("http.threads");
}

TEST_F(OptionsTest, HelpListsEveryOption) {
  std::string help = OptionsHelp();
  for (const char* name : {"storage.data_dir",
                           "storage.sync",
                           "storage.max_item_bytes",
                           "storage.before_images",
                           "storage.block_cache_mb",
                           "feed.retention_hours",
                           "feed.retention_mb",
                           "feed.retention_interval_ms",
                           "http.listen",
                           "http.threads",
                           "http.max_request_bytes",
                           "http.idle_timeout_seconds",
                           "http.shutdown_grace_seconds",
                           "auth.tokens_file",
                           "auth.allow_unauthenticated",
                           "metrics.listen",
                           "metrics.authenticate",
                           "metrics.tls_cert_file",
                           "metrics.tls_client_ca_file",
                           "log.level",
                           "kafka.brokers",
                           "kafka.topic_prefix",
                           "ready_file",
                           "instance.name",
                           "--data-dir",
                           "--check-config",
                           "container.<name>.partition_key"}) {
    EXPECT_NE(help.find(name), std::string::npos) << name;
  }
}

}  // namespace
}  // namespace feedd
