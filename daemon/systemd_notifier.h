// SystemdNotifier: feedd's side of the systemd service notification protocol
// (sd_notify(3), used by the unit's Type=notify and WatchdogSec=).
//
// What it sends, over the datagram socket named by $NOTIFY_SOCKET:
//   Ready(status)    READY=1 and STATUS=<status>; main calls it once the API
//                    listens (and the ready file is written).
//   Stopping()       STOPPING=1 and STATUS=stopping; main calls it first
//                    thing when shutdown starts. It also stops the watchdog.
//   StartWatchdog(h) when sd_watchdog_enabled() reports a watchdog interval
//                    ($WATCHDOG_USEC, for this pid when $WATCHDOG_PID is
//                    set), a thread sends WATCHDOG=1 every half interval, but
//                    ONLY while h() returns true. A process whose storage is
//                    unhealthy stops pinging and systemd restarts it after
//                    WatchdogSec (it is killed with SIGABRT, a failure, so
//                    Restart=on-failure applies).
// Everything is a no-op when $NOTIFY_SOCKET is unset (not run by systemd):
// no message, no thread. Send errors are logged once and otherwise ignored:
// notification is advisory, it never stops the daemon.
//
// Thread-safety: all methods may be called from any thread. The health
// check runs on the watchdog thread only; it must be thread-safe with the
// rest of the daemon (DocumentStore::Health() is).
// Ownership: the notifier owns its watchdog thread. The health check (and
// whatever it references) must stay valid until Stopping() or the
// destructor returns, both of which join the thread; declare the notifier
// after the objects the check uses, so it is destroyed before them.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace feedd {

class SystemdNotifier {
 public:
  // Reads $NOTIFY_SOCKET once; enabled() is whether it was set.
  SystemdNotifier();
  ~SystemdNotifier();  // stops the watchdog thread (no STOPPING=1)

  SystemdNotifier(const SystemdNotifier&) = delete;
  SystemdNotifier& operator=(const SystemdNotifier&) = delete;

  bool enabled() const { return enabled_; }

  // The interval systemd expects pings in, or zero when no watchdog is
  // configured for this process (or notification is disabled).
  std::chrono::microseconds watchdog_interval() const { return watchdog_interval_; }

  // Starts the watchdog thread when a watchdog is configured. At most once;
  // later calls are ignored. `healthy` must not be empty.
  void StartWatchdog(std::function<bool()> healthy);

  // READY=1 with a STATUS= line.
  void Ready(const std::string& status);

  // A free-form STATUS= line (shown by `systemctl status`).
  void Status(const std::string& status);

  // Stops and joins the watchdog thread, then sends STOPPING=1. Idempotent.
  void Stopping();

 private:
  void Send(const std::string& message);
  void StopWatchdog();
  void WatchdogLoop(const std::function<bool()>& healthy);

  bool enabled_ = false;
  std::chrono::microseconds watchdog_interval_{0};

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;         // guarded by mu_
  bool started_ = false;      // guarded by mu_
  bool stopping_ = false;     // guarded by mu_: STOPPING=1 sent
  bool send_failed_ = false;  // guarded by mu_: a send error was logged
  std::thread thread_;
};

}  // namespace feedd
