#include "daemon/process_probe.h"

#include <dirent.h>
#include <librdkafka/rdkafka.h>
#include <rocksdb/version.h>
#include <sys/resource.h>
#include <unistd.h>

#include <ctime>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "util/metric_families.h"

namespace feedd {
namespace {

using metrics::Families;

void CollectBuild(Families& f) {
  f.Gauge("feedd_up", "1 while the daemon serves", 1);
  f.Gauge("feedd_build_info", "Build information", 1,
          {{"version", FEEDD_VERSION},
           {"rocksdb", std::to_string(ROCKSDB_MAJOR) + "." + std::to_string(ROCKSDB_MINOR) + "." +
                           std::to_string(ROCKSDB_PATCH)},
           {"librdkafka", rd_kafka_version_str()}});
}

// CPU time, memory and start time from /proc/self/stat (proc(5)).
void CollectStat(Families& f) {
  static const long ticks = sysconf(_SC_CLK_TCK);
  static const long page = sysconf(_SC_PAGESIZE);
  std::ifstream stat("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  // Fields after the command name (which may hold spaces) start past ')'.
  std::istringstream fields(text.substr(text.rfind(')') + 2));
  std::vector<std::string> v;
  for (std::string s; fields >> s;) v.push_back(s);
  if (v.size() <= 21) return;  // the families are left out
  double cpu = (std::stod(v[11]) + std::stod(v[12])) / static_cast<double>(ticks);
  f.Counter("process_cpu_seconds_total", "User and system CPU time, seconds", cpu);
  f.Gauge("process_virtual_memory_bytes", "Virtual memory size, bytes", std::stod(v[20]));
  f.Gauge("process_resident_memory_bytes", "Resident set size, bytes",
          std::stod(v[21]) * static_cast<double>(page));
  std::ifstream uptime("/proc/uptime");
  double up = 0;
  uptime >> up;
  double boot = static_cast<double>(time(nullptr)) - up;
  f.Gauge("process_start_time_seconds", "Start time of the process, Unix epoch seconds",
          boot + std::stod(v[19]) / static_cast<double>(ticks));
}

void CollectFds(Families& f) {
  int fds = 0;
  if (DIR* dir = opendir("/proc/self/fd")) {
    while (readdir(dir) != nullptr) ++fds;
    closedir(dir);
    fds -= 3;  // ".", ".." and the directory's own descriptor
  }
  f.Gauge("process_open_fds", "Open file descriptors", fds);
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0) {
    f.Gauge("process_max_fds", "The open-files limit", static_cast<double>(limit.rlim_cur));
  }
}

}  // namespace

std::vector<prometheus::MetricFamily> ProcessProbe::Collect() const {
  Families f;
  CollectBuild(f);
  CollectStat(f);
  CollectFds(f);
  return f.Take();
}

}  // namespace feedd
