// What the rest of the machine is doing, for benchmarks on a shared box:
// CPU time of the whole machine and of this process, and a wait for the
// other processes to go quiet before a measurement starts.
//
// Thread-safety: free functions; call from one thread.
#pragma once

#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

namespace feedd::bench {

// CPU time, in seconds, of the whole machine (busy, from /proc/stat) and of
// this process.
struct CpuTimes {
  double machine = 0, self = 0;
};

inline CpuTimes ReadCpuTimes() {
  CpuTimes t;
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  if (FILE* f = std::fopen("/proc/stat", "r")) {
    unsigned long long user, nice, system, idle, iowait, irq, softirq, steal;
    if (std::fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &user, &nice, &system, &idle,
                    &iowait, &irq, &softirq, &steal) == 8) {
      t.machine = (user + nice + system + irq + softirq) / tick;
    }
    std::fclose(f);
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  t.self = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
  return t;
}

// Waits up to `max_seconds` until other processes use less than a quarter
// of a core for 2 s in a row (sampled every 0.5 s), so a measurement does
// not start in the middle of someone else's build. Says so when it gives up.
inline void WaitForIdle(double max_seconds) {
  using Clock = std::chrono::steady_clock;
  if (max_seconds <= 0) return;
  const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(max_seconds));
  for (int quiet = 0;;) {
    const CpuTimes a = ReadCpuTimes();
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    const CpuTimes b = ReadCpuTimes();
    const double others = ((b.machine - a.machine) - (b.self - a.self)) / 0.5;
    quiet = others < 0.25 ? quiet + 1 : 0;
    if (quiet >= 4) return;  // 2 s in a row
    if (Clock::now() >= until) {
      std::printf(
          "  (the box stayed busy for %g s: other processes use %.2f cores; measuring "
          "anyway)\n",
          max_seconds, others);
      return;
    }
  }
}

}  // namespace feedd::bench
