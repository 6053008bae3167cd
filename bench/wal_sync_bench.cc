// wal_sync_bench: what one durable commit's fdatasync costs on this disk,
// by the state of the file it appends to - the floor under the commit
// thread's WAL sync (docs/benchmarks.md).
//
//   wal_sync_bench [--dir DIR] [--writes N] [--bytes B] [--rounds R]
//
// Each round writes N records of B bytes, each followed by fdatasync(), into
// a fresh file in DIR (default: the current directory), once per mode, the
// modes in turns:
//   append        the file grows with every record (RocksDB's WAL today: a
//                 sync must also write the inode, whose size changed);
//   overwrite     the blocks were written and synced before, and are
//                 written again in place (a recycled or pre-zeroed WAL);
//   falloc        fallocate()d beforehand, size set: the blocks are unwritten
//                 extents, and the first write of each changes metadata;
//   falloc_keep   the same with FALLOC_FL_KEEP_SIZE (the size still grows).
// Prints, per mode, the median over the rounds of the wall time and of this
// process's CPU time (user + system) per fdatasync, in microseconds, and
// the command. Numbers, not a test: nothing is asserted.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/machine_load.h"
#include "bench/median.h"

namespace {

using feedd::bench::Median;

double CpuSeconds() { return feedd::bench::ReadCpuTimes().self; }

bool WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = write(fd, data, size);
    if (n < 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

struct Sample {
  double wall_us = 0, cpu_us = 0;
};

// One round of one mode; false (and a message) on an I/O error.
bool RunMode(const std::string& mode, const std::string& path, size_t writes, size_t bytes,
             Sample* out) {
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    std::perror(path.c_str());
    return false;
  }
  std::vector<char> record(bytes, 'x');
  const off_t total = static_cast<off_t>(writes * bytes);
  bool ok = true;
  if (mode == "overwrite") {
    for (size_t i = 0; ok && i < writes; ++i) ok = WriteAll(fd, record.data(), bytes);
    ok = ok && fsync(fd) == 0 && lseek(fd, 0, SEEK_SET) == 0;
  } else if (mode == "falloc" || mode == "falloc_keep") {
    ok = fallocate(fd, mode == "falloc" ? 0 : FALLOC_FL_KEEP_SIZE, 0, total) == 0 && fsync(fd) == 0;
  }
  const auto started = std::chrono::steady_clock::now();
  const double cpu_started = CpuSeconds();
  for (size_t i = 0; ok && i < writes; ++i) {
    ok = WriteAll(fd, record.data(), bytes) && fdatasync(fd) == 0;
  }
  const double cpu = CpuSeconds() - cpu_started;
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (!ok) std::perror(mode.c_str());
  close(fd);
  unlink(path.c_str());
  out->wall_us = wall / static_cast<double>(writes) * 1e6;
  out->cpu_us = cpu / static_cast<double>(writes) * 1e6;
  return ok;
}

int Usage(const char* argv0) {
  std::fprintf(stderr, "usage: %s [--dir DIR] [--writes N] [--bytes B] [--rounds R]\n", argv0);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = ".";
  size_t writes = 2000, bytes = 4096, rounds = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--dir") {
      dir = argv[i + 1];
    } else if (flag == "--writes") {
      writes = std::strtoul(argv[i + 1], nullptr, 10);
    } else if (flag == "--bytes") {
      bytes = std::strtoul(argv[i + 1], nullptr, 10);
    } else if (flag == "--rounds") {
      rounds = std::strtoul(argv[i + 1], nullptr, 10);
    } else {
      return Usage(argv[0]);
    }
  }
  if ((argc - 1) % 2 != 0 || writes == 0 || bytes == 0 || rounds == 0) return Usage(argv[0]);
  const std::vector<std::string> modes = {"append", "overwrite", "falloc", "falloc_keep"};
  std::vector<std::vector<Sample>> samples(modes.size());
  const std::string path = dir + "/wal_sync_bench." + std::to_string(getpid());
  for (size_t r = 0; r < rounds; ++r) {
    for (size_t m = 0; m < modes.size(); ++m) {
      Sample s;
      if (!RunMode(modes[m], path, writes, bytes, &s)) return 1;
      samples[m].push_back(s);
    }
  }
  std::string command;
  for (int i = 0; i < argc; ++i) command += (i ? " " : "") + std::string(argv[i]);
  std::printf("# %s\n# %zu writes of %zu bytes, each fdatasync()ed; medians of %zu rounds\n",
              command.c_str(), writes, bytes, rounds);
  std::printf("%-12s %14s %14s\n", "mode", "wall us/sync", "cpu us/sync");
  for (size_t m = 0; m < modes.size(); ++m) {
    std::vector<double> wall, cpu;
    for (const Sample& s : samples[m]) {
      wall.push_back(s.wall_us);
      cpu.push_back(s.cpu_us);
    }
    std::printf("%-12s %14.1f %14.1f\n", modes[m].c_str(), Median(wall), Median(cpu));
  }
  return 0;
}
