"""No Kafka password in feedd's output (docs/security.md, "Kafka").

The daemon runs at log.level = debug with librdkafka's debug = all (which
logs the client configuration and every connection attempt) and SASL and
SSL passwords passed through as kafka.* properties, publishing to a broker
address where nothing listens. Its whole output, and that of
--check-config refusing a bad value next to the password, must not contain
the passwords.
"""

import os
import socket
import subprocess
import unittest

from feedd_harness import FeeddDaemon, FeeddTestCase, feedd_binary
from test_http_errors import wait_for

SASL_PASSWORD = "Sasl-Pw-7f3a9c"
KEY_PASSWORD = "Key-Pw-51d2e8"


def closed_port():
    """A loopback port where nothing listens (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def secret_args():
    return ["--kafka.security.protocol=sasl_plaintext", "--kafka.sasl.mechanisms=PLAIN",
            "--kafka.sasl.username=feedd-user", "--kafka.sasl.password=" + SASL_PASSWORD,
            "--kafka.ssl.key.password=" + KEY_PASSWORD]


class KafkaSecretsTest(FeeddTestCase):
    def daemon_output(self, daemon):
        """The daemon's stderr and stdout without the harness's own command lines."""
        text = ""
        for path in (daemon.stderr_path, daemon.stdout_path):
            with open(path, encoding="utf-8", errors="replace") as f:
                text += "".join(line for line in f if not line.startswith("==== start"))
        return text

    def test_passwords_are_not_logged(self):
        port = closed_port()
        daemon = FeeddDaemon(extra_args=["--kafka.brokers=127.0.0.1:%d" % port,
                                         "--log.level=debug", "--kafka.debug=all",
                                         "--processors.enabled=false"] + secret_args(),
                             name="feedd-kafka-secrets")
        self.addCleanup(daemon.cleanup)
        daemon.start()
        client = daemon.client()
        self.assertStatus(client.create("users", {"id": "u1", "userId": "u1", "type": "user"}),
                          201, "a write to publish")
        # librdkafka logged its configuration (the property, redacted) and
        # tried the broker.
        wait_for(lambda: "sasl.password = [redacted]" in self.daemon_output(daemon) and
                 ("127.0.0.1:%d/bootstrap" % port) in self.daemon_output(daemon),
                 "librdkafka's configuration and connection lines")
        daemon.stop()
        text = self.daemon_output(daemon)
        self.assertNotIn(SASL_PASSWORD, text)
        self.assertNotIn(KEY_PASSWORD, text)

    def test_check_config_does_not_echo_passwords(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith("FEEDD_")}
        for bad in ("--kafka.sasl.mechanisms=NOT-A-MECHANISM", "--kafka.no.such.property=1"):
            proc = subprocess.run([feedd_binary(), "--check-config", "--kafka.brokers=k:9092",
                                   bad] + secret_args(), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, env=env, timeout=30)
            out = (proc.stdout + proc.stderr).decode("utf-8", "replace")
            self.assertEqual(proc.returncode, 2, out)
            self.assertIn(bad.split("=")[0][2:], out)
            self.assertNotIn(SASL_PASSWORD, out)
            self.assertNotIn(KEY_PASSWORD, out)


if __name__ == "__main__":
    unittest.main()
