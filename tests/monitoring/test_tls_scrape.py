"""A real Prometheus scraping feedd's metrics port over HTTPS with basic
authentication (docs/security.md, "The metrics port").

feedd runs with metrics.tls_cert_file/tls_key_file (a CA and a certificate
made at test time with the `openssl` command, as test_tls.py makes them) and
metrics.authenticate; Prometheus (Debian package `prometheus`) scrapes it
with `scheme: https`, `tls_config.ca_file` and `basic_auth`, as the example
of docs/security.md does. The target must be up, scraped at its https://
URL without error, with feedd's own series in the TSDB.

Needs FEEDD_BIN, and prometheus on PATH (or PROMETHEUS_BIN).
"""

import os
import shutil
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.normpath(os.path.join(HERE, "..", "integration")))

from feedd_harness import FeeddDaemon  # noqa: E402
from test_auth import SECRETS, tokens_text, write_tokens  # noqa: E402
from test_live_metrics import JOB, PrometheusServer, log  # noqa: E402
from test_tls import make_ca, make_cert  # noqa: E402

SCRAPE_WAIT_TIMEOUT_S = 60.0


class TlsScrapeTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="feedd-tls-scrape-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        ca = make_ca(self.dir, "ca")
        cert, key = make_cert(self.dir, "server", "ca", "serverAuth")
        tokens = os.path.join(self.dir, "tokens")
        write_tokens(tokens, tokens_text(["reader"]))
        self.password_file = os.path.join(self.dir, "prometheus.password")
        with open(self.password_file, "w") as f:
            f.write(SECRETS["reader"])
        self.daemon = FeeddDaemon(name="feedd-tls-scrape", extra_args=[
            "--metrics.tls_cert_file=" + cert, "--metrics.tls_key_file=" + key,
            "--auth.tokens_file=" + tokens, "--metrics.authenticate=true"])
        self.addCleanup(self.daemon.cleanup)
        self.daemon.start()
        self.addCleanup(self.daemon.stop)
        self.target = self.daemon.ready["metrics"]
        self.prom = PrometheusServer(self.target, [], {
            "scheme": "https",
            "tls_config": {"ca_file": ca},
            "basic_auth": {"username": "reader", "password_file": self.password_file},
        })
        self.addCleanup(self.prom.cleanup)
        self.prom.start()
        self.addCleanup(self.prom.stop)
        log("feedd metrics on https://%s, prometheus on 127.0.0.1:%d"
            % (self.target, self.prom.port))

    def test_prometheus_scrapes_https_with_basic_auth(self):
        deadline = time.monotonic() + SCRAPE_WAIT_TIMEOUT_S
        while True:
            up = self.prom.scalar('up{job="%s"}' % JOB, 0)
            feedd_up = self.prom.scalar('feedd_up{job="%s"}' % JOB, 0)
            if up == 1 and feedd_up == 1:
                break
            if time.monotonic() > deadline:
                _, targets = self.prom.api("/api/v1/targets")
                self.fail("Prometheus did not scrape feedd over HTTPS (up=%s, feedd_up=%s): %s\n%s"
                          % (up, feedd_up, targets, self.prom.logs()))
            time.sleep(0.25)
        _, targets = self.prom.api("/api/v1/targets")
        active = targets["data"]["activeTargets"]
        self.assertEqual([t["scrapeUrl"] for t in active], ["https://%s/metrics" % self.target])
        self.assertEqual(active[0]["lastError"], "")


if __name__ == "__main__":
    unittest.main()
