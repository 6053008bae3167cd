"""A full disk: writes stop at the free-space reserve, reads go on, writes resume.

feedd runs on a 64 MiB tmpfs that the test mounts (root only: the test is
skipped with the reason when mount is not permitted), with
storage.min_free_mb=8 and a 32 MiB ballast file beside the data directory.
Writes of 256 KiB items go on until feedd answers 507 insufficient_storage,
before RocksDB meets ENOSPC. Then:

  * reads and queries still answer 200, /healthz 200, /readyz 503;
  * the daemon stays up through seconds of refused writes (RocksDB 7.8 used
    to abort on an assertion about 5 s after the disk filled);
  * once the ballast is deleted, writes are accepted again without a restart,
    /readyz is 200, and the refusals are counted in
    feedd_storage_writes_refused_total{reason="no_space"};
  * every acknowledged write survives a restart, under contiguous LSNs.

With the reserve disabled (storage.min_free_mb=0) on a 160 MiB tmpfs with a
90 MiB ballast, RocksDB itself meets ENOSPC: writes answer 503, and once the
ballast is deleted (RocksDB wants 64 MiB free to clear the error) they are
accepted again without a restart, with no LSN lost or repeated.

An import job (?job=true) whose body the disk cannot hold while it is
spooled is answered 507 insufficient_storage, counted in
feedd_imports_total{outcome="no_space"}, and leaves no spool; a body that
fits is then imported as a job (the daemon runs no processors here, so it
keeps its own jobs).
"""

import http.client
import os
import subprocess
import tempfile
import time
import unittest

from feedd_harness import FeeddDaemon, FeeddTestCase
from test_import import post_import

MiB = 1024 * 1024
PAD = "x" * (256 * 1024)


def user(i):
    uid = "u%d" % i
    return {"id": uid, "userId": uid, "type": "user", "pad": PAD}


class DiskFullTest(FeeddTestCase):
    def start_on_tmpfs(self, size_mib, ballast_mib, min_free_mb):
        """feedd on a fresh tmpfs of size_mib holding a ballast file."""
        self.mount_point = tempfile.mkdtemp(prefix="feedd-tmpfs-")
        self.addCleanup(os.rmdir, self.mount_point)
        try:
            subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%dm" % size_mib, "tmpfs",
                            self.mount_point], check=True, capture_output=True)
        except (OSError, subprocess.CalledProcessError) as e:
            self.skipTest("cannot mount a tmpfs (needs root): %s"
                          % (getattr(e, "stderr", b"") or str(e)))
        self.addCleanup(subprocess.run, ["umount", "-l", self.mount_point], check=False)
        self.ballast = os.path.join(self.mount_point, "ballast")
        with open(self.ballast, "wb") as f:
            for _ in range(ballast_mib):
                f.write(b"\0" * MiB)
        self.daemon = FeeddDaemon(
            extra_args=["--storage.min_free_mb=%d" % min_free_mb, "--kafka.brokers=none",
                        "--processors.enabled=false"],
            sync=True)
        self.addCleanup(self.daemon.cleanup)
        self.daemon.data_dir = os.path.join(self.mount_point, "data")
        os.mkdir(self.daemon.data_dir)
        self.daemon.start()

    def check_after_restart(self, acknowledged):
        """Every acknowledged write is there after a restart, LSNs 1..head."""
        self.daemon.restart()
        c = self.daemon.client()
        changes = c.all_changes()
        self.assertEqual([ch["lsn"] for ch in changes], list(range(1, len(acknowledged) + 1)))
        self.assertEqual([ch["id"] for ch in changes], ["u%d" % i for i in acknowledged])
        for i in acknowledged:
            self.assertStatus(c.read("users", "u%d" % i, "u%d" % i), 200, "read after restart")

    def write_until_refused(self, count):
        """Writes users u0, u1, ... of 256 KiB until one is refused or `count`
        are written; returns (the acknowledged indexes, the refusal or None)."""
        c = self.daemon.client()
        acknowledged = []
        for i in range(count):
            resp = c.upsert("users", "u%d" % i, "u%d" % i, user(i))
            if resp[0] not in (200, 201):
                return acknowledged, resp
            acknowledged.append(i)
        return acknowledged, None

    def metric(self, name):
        host, _, port = self.daemon.ready["metrics"].rpartition(":")
        conn = http.client.HTTPConnection(host.strip("[]"), int(port), timeout=30)
        try:
            conn.request("GET", "/metrics")
            text = conn.getresponse().read().decode()
        finally:
            conn.close()
        for line in text.splitlines():
            if line.startswith(name + " "):
                return float(line.split()[-1])
        self.fail("no %s in /metrics" % name)

    def test_an_import_job_spool_the_disk_cannot_hold_is_refused(self):
        self.start_on_tmpfs(size_mib=64, ballast_mib=32, min_free_mb=8)
        c = self.daemon.client()
        line = b'{"id":"x","userId":"x","type":"user","pad":"%s"}\n' % (b"x" * 1000)
        status, error = post_import(self.daemon, "users", line * 40_000, query="job=true",
                                    piece=1 << 20)  # about 40 MiB: more than is free
        self.assertEqual(status, 507, error)
        self.assertEqual(error["error"]["code"], "insufficient_storage")
        self.assertEqual(self.metric('feedd_imports_total{outcome="no_space"}'), 1)
        self.assertEqual(os.listdir(os.path.join(self.daemon.data_dir, "import-spool")), [])
        self.assertTrue(self.daemon.alive())
        self.assertEqual(c.request("GET", "/v1/jobs")[2]["jobs"], [])

        body = b"".join(b'{"id":"u%d","userId":"u%d","type":"user"}\n' % (i, i)
                        for i in range(100))
        status, job = post_import(self.daemon, "users", body, query="job=true")
        self.assertEqual(status, 202, job)
        deadline = time.monotonic() + 60
        while job["state"] == "running":
            self.assertLess(time.monotonic(), deadline, "the import job did not end")
            time.sleep(0.01)
            job = c.request("GET", "/v1/jobs/%s" % job["id"])[2]
        self.assertEqual(job["state"], "succeeded", job)
        self.assertEqual(job["result"]["created"], 100, job)

    def test_writes_stop_at_the_reserve_and_resume_once_space_is_freed(self):
        self.start_on_tmpfs(size_mib=64, ballast_mib=32, min_free_mb=8)
        c = self.daemon.client()
        acknowledged, refused = self.write_until_refused(400)
        self.assertIsNotNone(refused, "400 writes of 256 KiB fitted on a 64 MiB tmpfs")
        self.assertError(refused, 507, "insufficient_storage", "write below the reserve")
        self.assertGreater(len(acknowledged), 10)

        # Reads go on; the daemon is alive but not ready for writes.
        self.assertStatus(c.read("users", "u0", "u0"), 200, "read while full")
        self.assertStatus(c.query("users", {"partitionKey": "u1"}), 200, "query while full")
        self.assertStatus(c.request("GET", "/readyz"), 503, "readyz while full")

        # Seconds of refused writes, and the process stays up.
        healthy = 0
        deadline = time.monotonic() + 7
        i = acknowledged[-1] + 1
        while time.monotonic() < deadline:
            self.assertError(c.upsert("users", "u%d" % i, "u%d" % i, user(i)), 507,
                             "insufficient_storage", "write while full")
            self.assertStatus(c.request("GET", "/healthz"), 200, "healthz while full")
            healthy += 1
            time.sleep(0.2)
        self.assertTrue(self.daemon.alive(), "feedd died with a full disk")
        self.assertGreater(healthy, 10)
        self.assertGreater(
            self.metric('feedd_storage_writes_refused_total{reason="no_space"}'), healthy - 1)
        self.assertEqual(self.metric('feedd_storage_state{state="no_space"}'), 1)

        # Space is back: writes resume by themselves.
        os.unlink(self.ballast)
        deadline = time.monotonic() + 30
        while True:
            resp = c.upsert("users", "u%d" % i, "u%d" % i, user(i))
            if resp[0] in (200, 201):
                acknowledged.append(i)
                break
            self.assertError(resp, 507, "insufficient_storage", "write after freeing space")
            self.assertLess(time.monotonic(), deadline, "writes did not resume")
            time.sleep(0.1)
        self.assertStatus(c.request("GET", "/readyz"), 200, "readyz after freeing space")
        self.assertEqual(self.metric('feedd_storage_state{state="writable"}'), 1)

        self.check_after_restart(acknowledged)

    def test_without_a_reserve_writes_resume_after_enospc_once_space_is_freed(self):
        self.start_on_tmpfs(size_mib=160, ballast_mib=90, min_free_mb=0)
        c = self.daemon.client()
        acknowledged, failed = self.write_until_refused(1000)
        self.assertIsNotNone(failed, "1000 writes of 256 KiB fitted on a 160 MiB tmpfs")
        self.assertError(failed, 503, "unavailable", "write on a full disk")
        self.assertStatus(c.read("users", "u0", "u0"), 200, "read on a full disk")
        self.assertStatus(c.request("GET", "/readyz"), 503, "readyz on a full disk")

        os.unlink(self.ballast)
        deadline = time.monotonic() + 60
        i = acknowledged[-1] + 1
        while True:
            self.assertTrue(self.daemon.alive(), "feedd died after ENOSPC")
            resp = c.upsert("users", "u%d" % i, "u%d" % i, {"id": "u%d" % i, "userId": "u%d" % i})
            if resp[0] in (200, 201):
                acknowledged.append(i)
                break
            self.assertError(resp, 503, "unavailable", "write while recovering")
            self.assertLess(time.monotonic(), deadline, "writes did not resume")
            i += 1
            time.sleep(0.2)
        self.assertStatus(c.request("GET", "/readyz"), 200, "readyz after recovery")
        self.check_after_restart(acknowledged)


if __name__ == "__main__":
    unittest.main()
