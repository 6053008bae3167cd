#include "daemon/systemd_notifier.h"

#include <systemd/sd-daemon.h>

#include <cstdlib>
#include <cstring>
#include <utility>

#include "util/logging.h"

namespace feedd {

SystemdNotifier::SystemdNotifier() {
  const char* socket = std::getenv("NOTIFY_SOCKET");
  enabled_ = socket != nullptr && socket[0] != '\0';
  if (!enabled_) return;
  uint64_t usec = 0;
  // > 0: a watchdog is configured for this process (checks WATCHDOG_PID).
  if (sd_watchdog_enabled(/*unset_environment=*/0, &usec) > 0 && usec > 0) {
    watchdog_interval_ = std::chrono::microseconds(usec);
  }
}

SystemdNotifier::~SystemdNotifier() { StopWatchdog(); }

void SystemdNotifier::Send(const std::string& message) {
  if (!enabled_) return;
  int r = sd_notify(/*unset_environment=*/0, message.c_str());
  if (r < 0) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!send_failed_) {
      send_failed_ = true;
      FEEDD_LOG(kWarning, "systemd")
          << "sd_notify failed: " << std::strerror(-r) << " (further failures are not logged)";
    }
  }
}

void SystemdNotifier::StartWatchdog(std::function<bool()> healthy) {
  if (!enabled_ || watchdog_interval_.count() == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (started_ || stop_) return;
  started_ = true;
  FEEDD_LOG(kInfo, "systemd") << "watchdog every " << watchdog_interval_.count() / 2000
                              << " ms (WatchdogSec " << watchdog_interval_.count() / 1000 << " ms)";
  thread_ = std::thread([this, healthy = std::move(healthy)] { WatchdogLoop(healthy); });
}

void SystemdNotifier::WatchdogLoop(const std::function<bool()>& healthy) {
  const auto period = watchdog_interval_ / 2;
  bool was_healthy = true;
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    lock.unlock();
    bool ok = healthy();
    if (ok) {
      Send("WATCHDOG=1");
      if (!was_healthy) {
        FEEDD_LOG(kInfo, "systemd") << "healthy again, watchdog pings resumed";
        Send("STATUS=serving");
      }
    } else if (was_healthy) {
      FEEDD_LOG(kError, "systemd")
          << "health check failed: watchdog pings suspended (systemd restarts feedd "
             "after WatchdogSec unless it recovers)";
      Send("STATUS=unhealthy: storage health check failed, watchdog pings suspended");
    }
    was_healthy = ok;
    lock.lock();
    cv_.wait_for(lock, period, [this] { return stop_; });
  }
}

void SystemdNotifier::StopWatchdog() {
  std::thread thread;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    thread = std::move(thread_);
  }
  cv_.notify_all();
  if (thread.joinable()) thread.join();
}

void SystemdNotifier::Ready(const std::string& status) { Send("READY=1\nSTATUS=" + status); }

void SystemdNotifier::Status(const std::string& status) { Send("STATUS=" + status); }

void SystemdNotifier::Stopping() {
  StopWatchdog();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  Send("STOPPING=1\nSTATUS=stopping");
}

}  // namespace feedd
