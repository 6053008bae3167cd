"""Opt-in: the .deb under a real systemd, sandbox and all.

Runs only with FEEDD_SYSTEMD_BOOT_TEST=1 (ctest reports it skipped
otherwise), as root with CAP_SYS_ADMIN, on a host whose cgroup v2 hierarchy
is writable. It boots systemd as PID 1 of private pid/mount/uts/net/cgroup
namespaces, in container mode, with:
  - overlays on /usr, /etc and /var (the host's files are never written),
    a tmpfs on /run and a file over /dev/console;
  - every .wants/.requires directory, default.target, the host's
    /etc/systemd/system and every generator hidden, so systemd starts only
    journald (nothing touches the host's devices, sysctls, modules or /tmp);
  - its cgroup tree under a child of the test's own cgroup v2 group.
Then, inside: `dpkg -i` the package (postinst enables and starts feedd), and
checks that the sandboxed unit serves (READY=1, dynamic user, seccomp, no
capabilities, state in /var/lib/private/feedd across a restart), that the
watchdog restarts a stopped feedd, that SIGTERM stops it with status 0, and
that `dpkg -r` stops it and `dpkg -P` drops the conffile and the enable link.
Everything is killed and removed afterwards.
"""

import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

from test_deb import BUILD_DIR, CPACK, run

ENABLED = os.environ.get("FEEDD_SYSTEMD_BOOT_TEST") == "1"
SKIP_CODE = 77  # SKIP_RETURN_CODE of the ctest

INNER = textwrap.dedent("""\
    #!/bin/sh
    # PID 1 of the namespaces: private overlays, then systemd.
    set -e
    T="$1"
    mount -t cgroup2 cgroup2 /sys/fs/cgroup
    for d in usr etc var; do
      mount -t overlay overlay \\
        -o lowerdir=/$d,upperdir=$T/upper/$d,workdir=$T/work/$d /$d
    done
    mount -t tmpfs -o mode=755 tmpfs /run
    mount --bind "$T/console" /dev/console
    rm -rf /usr/lib/systemd/system/*.wants /usr/lib/systemd/system/*.requires \\
           /usr/lib/systemd/system/default.target /etc/systemd/system/* \\
           /usr/lib/systemd/system-generators/* \\
           /usr/lib/systemd/system-environment-generators/* \\
           /usr/local/lib/systemd/system
    printf '[Unit]\\nDescription=feedd packaging check\\nWants=systemd-journald.socket systemd-journald.service\\n' \\
      > /etc/systemd/system/feedd-check.target
    echo feedd-check > /etc/hostname
    exec env -i container=feedd-check PATH=/usr/sbin:/usr/bin:/sbin:/bin \\
      /lib/systemd/systemd --unit=feedd-check.target --show-status=no --log-target=console
    """)

PROBE = textwrap.dedent("""\
    import http.client, json, sys
    port, method, path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    body = sys.argv[4] if len(sys.argv) > 4 else None
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request(method, path, body=body, headers={"Content-Type": "application/json"})
    r = c.getresponse()
    print(json.dumps({"status": r.status, "body": r.read().decode()}))
    """)


def own_cgroup_v2_dir():
    with open("/proc/self/cgroup") as f:
        for line in f:
            if line.startswith("0::"):
                path = line.strip()[3:]
                break
        else:
            return None
    for base in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
        if os.path.exists(os.path.join(base, "cgroup.procs")) and \
                subprocess.run(["stat", "-fc", "%T", base], capture_output=True,
                               text=True).stdout.strip() == "cgroup2fs":
            return os.path.normpath(base + path)
    return None


@unittest.skipUnless(ENABLED, "set FEEDD_SYSTEMD_BOOT_TEST=1 to boot systemd in namespaces")
class SystemdBootTest(unittest.TestCase):
    maxDiff = 4000

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="feedd-boot-")
        cls.cgroup = None
        cls.launcher = None
        cls.init_pid = None
        try:
            cls._boot()
        except BaseException:
            cls._teardown()
            raise

    @classmethod
    def _boot(cls):
        if os.geteuid() != 0:
            raise AssertionError("needs root")
        for tool in ("unshare", "nsenter", "dpkg-shlibdeps"):
            if shutil.which(tool) is None:
                raise AssertionError("%s is missing" % tool)
        parent = own_cgroup_v2_dir()
        if parent is None:
            raise AssertionError("no writable cgroup v2 hierarchy")
        out_dir = os.path.join(cls.tmp, "out")
        run([CPACK, "-G", "DEB", "--config", os.path.join(BUILD_DIR, "CPackConfig.cmake"),
             "-B", out_dir])
        cls.deb = glob.glob(os.path.join(out_dir, "feedd_*.deb"))[0]
        root = os.path.join(cls.tmp, "ns")
        for d in ("usr", "etc", "var"):
            os.makedirs(os.path.join(root, "upper", d))
            os.makedirs(os.path.join(root, "work", d))
        open(os.path.join(root, "console"), "w").close()
        inner = os.path.join(root, "inner.sh")
        with open(inner, "w") as f:
            f.write(INNER)
        os.chmod(inner, 0o755)
        with open(os.path.join(cls.tmp, "probe.py"), "w") as f:
            f.write(PROBE)
        cls.cgroup = os.path.join(parent, "feedd-boot-%d" % os.getpid())
        os.mkdir(cls.cgroup)
        cls.log = open(os.path.join(cls.tmp, "launcher.log"), "wb")
        cls.launcher = subprocess.Popen(
            ["sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec unshare --mount --pid --fork '
             '--uts --net --cgroup --propagation private --mount-proc "$1" "$2"',
             cls.cgroup, inner, root],
            stdin=subprocess.DEVNULL, stdout=cls.log, stderr=cls.log, start_new_session=True)
        deadline = time.monotonic() + 30
        while cls.init_pid is None:
            if cls.launcher.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("systemd did not start: %s" % cls._file("launcher.log"))
            children = subprocess.run(["pgrep", "-P", str(cls.launcher.pid)],
                                      capture_output=True, text=True).stdout.split()
            for pid in children:
                try:
                    with open("/proc/%s/comm" % pid) as f:
                        if f.read().strip() == "systemd":
                            cls.init_pid = int(pid)
                except OSError:
                    pass
            time.sleep(0.1)
        state = cls.inside("timeout", "60", "systemctl", "is-system-running", "--wait",
                           check=False)
        if state.stdout.strip() not in ("running", "degraded"):
            raise AssertionError("systemd: %r\n%s" % (state.stdout, cls.console()))

    @classmethod
    def _file(cls, name):
        try:
            with open(os.path.join(cls.tmp, name), errors="replace") as f:
                return f.read()[-8000:]
        except OSError as e:
            return str(e)

    @classmethod
    def console(cls):
        return cls._file(os.path.join("ns", "console"))

    @classmethod
    def inside(cls, *cmd, check=True, timeout=180):
        proc = subprocess.run(["nsenter", "-t", str(cls.init_pid), "-m", "-p", "-u", "-n",
                               "-C", "--"] + list(cmd),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=timeout)
        if check and proc.returncode != 0:
            raise AssertionError("%s failed (%d):\n%s" % (" ".join(cmd), proc.returncode,
                                                          proc.stdout))
        return proc

    @classmethod
    def _teardown(cls):
        if cls.init_pid is not None:
            try:
                os.kill(cls.init_pid, signal.SIGKILL)  # the whole pid namespace dies
            except ProcessLookupError:
                pass
        if cls.launcher is not None:
            try:
                cls.launcher.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(cls.launcher.pid, signal.SIGKILL)
                cls.launcher.wait()
        if cls.cgroup and os.path.isdir(cls.cgroup):
            for dirpath, _, _ in sorted(os.walk(cls.cgroup), key=lambda w: -len(w[0])):
                try:
                    os.rmdir(dirpath)
                except OSError as e:
                    sys.stderr.write("cannot remove cgroup %s: %s\n" % (dirpath, e))
        shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def tearDownClass(cls):
        cls._teardown()

    # ---- helpers ----
    def show(self, *props):
        out = self.inside("systemctl", "show", "feedd.service",
                          *["-p" + p for p in props]).stdout
        return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)

    def http(self, method, path, body=None, port=8080):
        args = ["python3", os.path.join(self.tmp, "probe.py"), str(port), method, path]
        if body is not None:
            args.append(json.dumps(body))
        return json.loads(self.inside(*args).stdout)

    def journal(self):
        return self.inside("journalctl", "-u", "feedd", "--no-pager", "-n", "60",
                           check=False).stdout

    def wait_for(self, predicate, timeout, what):
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                self.fail("%s: not within %d s\n%s" % (what, timeout, self.journal()))
            time.sleep(0.2)

    # ---- one scenario, in order ----
    def test_package_under_systemd(self):
        # postinst starts feedd through deb-systemd-invoke, which obeys
        # policy-rc.d: a container image's "exit 101" (no service starts)
        # would keep it stopped. The booted system models a host without one
        # (the /usr overlay keeps the host's file).
        self.inside("rm", "-f", "/usr/sbin/policy-rc.d")
        out = self.inside("dpkg", "-i", self.deb).stdout
        s = self.show("ActiveState", "SubState", "MainPID", "StatusText", "UnitFileState",
                      "WatchdogUSec", "Type")
        self.assertEqual((s["ActiveState"], s["SubState"]), ("active", "running"),
                         out + self.journal())
        self.assertEqual(s["UnitFileState"], "enabled")
        self.assertEqual(s["Type"], "notify")
        self.assertEqual(s["WatchdogUSec"], "30s")
        self.assertIn("api on 127.0.0.1:8080", s["StatusText"])

        # The sandbox as the kernel sees it.
        status = self.inside("cat", "/proc/%s/status" % s["MainPID"]).stdout
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        self.assertNotEqual(fields["Uid"].split()[0], "0")
        self.assertEqual(fields["NoNewPrivs"].strip(), "1")
        self.assertEqual(fields["Seccomp"].strip(), "2")
        self.assertEqual(int(fields["CapEff"], 16), 0)
        self.assertEqual(int(fields["CapBnd"], 16), 0)

        # It serves; the data outlives a restart (StateDirectory).
        self.assertEqual(self.http("GET", "/readyz")["status"], 200)
        # The metrics, including those read from /proc, work in the sandbox.
        metrics = self.http("GET", "/metrics", port=9464)
        self.assertEqual(metrics["status"], 200, metrics)
        for name in ("process_start_time_seconds", "process_open_fds", "feedd_storage_healthy"):
            line = [l for l in metrics["body"].splitlines() if l.startswith(name + " ")]
            self.assertTrue(line, "%s missing from /metrics" % name)
            self.assertGreater(float(line[0].split()[1]), 0, line[0])
        item = {"id": "u1", "userId": "u1", "type": "user", "username": "ana"}
        self.assertEqual(self.http("POST", "/v1/containers/users/items", item)["status"], 201)
        self.inside("systemctl", "restart", "feedd")
        got = self.http("GET", "/v1/containers/users/items/u1/u1")
        self.assertEqual(got["status"], 200, got)
        self.assertEqual(json.loads(got["body"])["username"], "ana")
        uid = self.inside("sh", "-c", "stat -c %%u /proc/%s" % self.show("MainPID")["MainPID"]
                          ).stdout.strip()
        owner = self.inside("stat", "-c", "%u %a", "/var/lib/private/feedd").stdout.split()
        self.assertEqual(owner, [uid, "750"])

        # Watchdog: with WatchdogSec=2 a stopped feedd is aborted and restarted.
        self.inside("sh", "-c", "mkdir -p /etc/systemd/system/feedd.service.d && printf "
                    "'[Service]\\nWatchdogSec=2\\nTimeoutAbortSec=2\\nRestartSec=1\\n' "
                    "> /etc/systemd/system/feedd.service.d/check.conf && "
                    "systemctl daemon-reload && systemctl restart feedd")
        first = self.show("MainPID", "WatchdogTimestampMonotonic")
        self.wait_for(lambda: self.show("WatchdogTimestampMonotonic")["WatchdogTimestampMonotonic"]
                      != first["WatchdogTimestampMonotonic"], 5, "a WATCHDOG=1 ping")
        self.inside("kill", "-STOP", first["MainPID"])
        self.wait_for(lambda: self.show("NRestarts")["NRestarts"] == "1", 20,
                      "a restart after the watchdog timeout")
        self.wait_for(lambda: self.show("ActiveState")["ActiveState"] == "active", 30,
                      "active again")
        self.assertNotEqual(self.show("MainPID")["MainPID"], first["MainPID"])
        self.inside("sh", "-c", "rm -r /etc/systemd/system/feedd.service.d && "
                    "systemctl daemon-reload && systemctl restart feedd")

        # SIGTERM: a clean stop, exit status 0.
        self.inside("systemctl", "stop", "feedd")
        s = self.show("ActiveState", "Result", "ExecMainStatus", "ExecMainCode")
        self.assertEqual((s["ActiveState"], s["Result"], s["ExecMainStatus"]),
                         ("inactive", "success", "0"), self.journal())
        self.assertIn("stopped", self.journal())
        self.inside("systemctl", "start", "feedd")

        # remove stops it; purge drops the conffile and the enable link.
        self.inside("dpkg", "-r", "feedd")
        self.assertEqual(self.inside("systemctl", "is-active", "feedd",
                                     check=False).stdout.strip(), "inactive")
        self.inside("dpkg", "-P", "feedd")
        self.assertFalse(self.inside("test", "-e", "/etc/feedd/feedd.conf",
                                     check=False).returncode == 0)
        self.assertFalse(self.inside(
            "test", "-L", "/etc/systemd/system/multi-user.target.wants/feedd.service",
            check=False).returncode == 0)
        # The data stays.
        self.assertEqual(self.inside("test", "-d", "/var/lib/private/feedd",
                                     check=False).returncode, 0)


if __name__ == "__main__":
    if not ENABLED:
        print("skipped: set FEEDD_SYSTEMD_BOOT_TEST=1 to boot systemd in namespaces")
        sys.exit(SKIP_CODE)
    unittest.main()
