// mock_kafka_broker: librdkafka's mock Kafka cluster as a standalone process,
// for tests that need a broker which outlives feedd (crash tests).
//
//   mock_kafka_broker [--brokers N] [--topics t1,t2 --partitions P]
//
// Prints the bootstrap address on stdout's first line, then serves until
// SIGTERM/SIGINT.
#include <signal.h>

#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>

#include "feed/embedded_broker.h"

int main(int argc, char** argv) {
  int brokers = 1;
  int partitions = 3;
  std::string topics;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--brokers") == 0)
      brokers = std::atoi(argv[i + 1]);
    else if (std::strcmp(argv[i], "--partitions") == 0)
      partitions = std::atoi(argv[i + 1]);
    else if (std::strcmp(argv[i], "--topics") == 0)
      topics = argv[i + 1];
  }
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);  // before librdkafka starts threads

  auto broker = feedd::EmbeddedBroker::Start(brokers);
  if (!broker.ok()) {
    std::fprintf(stderr, "mock_kafka_broker: %s\n", broker.status().ToString().c_str());
    return 1;
  }
  std::stringstream list(topics);
  std::string topic;
  while (std::getline(list, topic, ',')) {
    if (topic.empty()) continue;
    if (auto s = (*broker)->CreateTopic(topic, partitions); !s.ok()) {
      std::fprintf(stderr, "mock_kafka_broker: %s\n", s.ToString().c_str());
      return 1;
    }
  }
  std::printf("%s\n", (*broker)->bootstrap().c_str());
  std::fflush(stdout);
  int sig = 0;
  sigwait(&set, &sig);
  return 0;
}
