"""feedctl, the real binary ($FEEDCTL_BIN) against the real daemon: help and
version on stdout with exit 0, a help per command, options before or after
the command, http:// URLs wherever HOST:PORT is taken, text and --json output
for every command, and the documented exit codes (1 refused, 2 usage,
3 unreachable).
"""

import json
import os
import socket
import subprocess
import unittest

from feedd_harness import SharedDaemonTestCase, feedd_binary

COMMANDS = ("processors", "verify", "rebuild", "jobs", "job", "cancel", "parked", "replay", "pause",
            "resume", "help")
PROCESSORS = ("usernames", "user_posts", "feed")  # the scenario's, on the default containers


def feedctl_binary():
    path = os.environ.get("FEEDCTL_BIN")
    if not path:
        path = os.path.join(os.path.dirname(feedd_binary()), "feedctl")
    if not os.access(path, os.X_OK):
        raise RuntimeError("FEEDCTL_BIN must name the feedctl binary (got %r)" % path)
    return path


def feedctl(*args, env=None):
    """Runs feedctl; returns (exit code, stdout, stderr). FEEDCTL_API only from `env`."""
    environ = {k: v for k, v in os.environ.items() if k != "FEEDCTL_API"}
    environ.update(env or {})
    proc = subprocess.run([feedctl_binary()] + list(args), capture_output=True, text=True,
                          env=environ, timeout=120)
    return proc.returncode, proc.stdout, proc.stderr


def closed_port():
    """A loopback port with nothing listening on it."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class HelpTest(unittest.TestCase):
    """No daemon needed: help, version, usage errors."""

    def test_help_goes_to_stdout_with_exit_0(self):
        for args in (["--help"], ["-h"], ["help"]):
            rc, out, err = feedctl(*args)
            self.assertEqual(rc, 0, (args, err))
            self.assertEqual(err, "", args)
            self.assertTrue(out.startswith("Usage: feedctl "), (args, out))
            for command in COMMANDS:
                self.assertRegex(out, r"\n  %s\b" % command, args)
            for needle in ("--api", "--ready-file", "--json", "--version", "FEEDCTL_API",
                           "Exit status:", "http://HOST:PORT"):
                self.assertIn(needle, out, args)
            for code in "0123":
                self.assertRegex(out, r"\n  %s  +\S" % code, "exit code %s is described" % code)

    def test_each_command_has_its_own_help(self):
        for command in COMMANDS:
            rc, by_help, err = feedctl("help", command)
            self.assertEqual(rc, 0, (command, err))
            self.assertTrue(by_help.startswith("Usage: feedctl [OPTION]... %s" % command), by_help)
            rc, by_flag, err = feedctl(command, "--help")
            self.assertEqual(rc, 0, (command, err))
            self.assertEqual(by_flag, by_help, command)
        # A command's help is its own, not the general one.
        rc, out, _ = feedctl("rebuild", "--help")
        self.assertIn("from scratch", out)
        self.assertNotIn("\nCommands:", out)
        rc, out, err = feedctl("help", "nosuch")
        self.assertEqual(rc, 2, out)
        self.assertIn("unknown command 'nosuch'", err)

    def test_version(self):
        rc, out, err = feedctl("--version")
        self.assertEqual(rc, 0, err)
        self.assertRegex(out, r"^feedctl \d+\.\d+\.\d+\n$")
        feedd_version = subprocess.run([feedd_binary(), "--version"], capture_output=True,
                                       text=True, timeout=30).stdout.split()[1]
        self.assertEqual(out.split()[1], feedd_version)

    def test_usage_errors_exit_2_on_stderr(self):
        for args, message in ((["nosuch"], "unknown command"),
                              ([], "no command"),
                              (["rebuild"], "usage: feedctl rebuild NAME"),
                              (["pause", "a", "b"], "usage: feedctl pause NAME"),
                              (["processors", "--nosuch"], "nosuch"),
                              (["--api"], "api"),
                              (["--api", "https://127.0.0.1:8080", "processors"], "plain HTTP"),
                              (["--api", "127.0.0.1", "processors"], "no port"),
                              (["--api", "http://127.0.0.1:8080/v1", "processors"], "no path"),
                              (["--ready-file", "/nonexistent/ready.json", "processors"],
                               "cannot read the API address from /nonexistent/ready.json"),
                              (["--api", "127.0.0.1:1", "--ready-file", "/x", "processors"],
                               "not both")):
            rc, out, err = feedctl(*args)
            self.assertEqual(rc, 2, (args, out, err))
            self.assertEqual(out, "", args)
            self.assertIn(message, err, args)

    def test_an_unreachable_daemon_exits_3(self):
        port = closed_port()
        for args, env in ((["--api", "127.0.0.1:%d" % port, "processors"], None),
                          (["verify", "--api", "http://127.0.0.1:%d/" % port], None),
                          (["--json", "pause", "feed"], {"FEEDCTL_API": "127.0.0.1:%d" % port})):
            rc, out, err = feedctl(*args, env=env)
            self.assertEqual(rc, 3, (args, out, err))
            self.assertIn("cannot reach feedd", err, args)
            self.assertIn("127.0.0.1:%d" % port, err, args)
            self.assertEqual(out, "", args)


class AgainstDaemonTest(SharedDaemonTestCase):
    daemon_name = "feedd-feedctl"

    @classmethod
    def daemon_started(cls):
        cls.api = "%s:%d" % (cls.daemon.host, cls.daemon.port)

    def run_ok(self, *args, env=None):
        rc, out, err = feedctl(*args, env=env)
        self.assertEqual(rc, 0, "feedctl %s: exit %d\n%s%s" % (" ".join(args), rc, out, err))
        return out

    def test_options_are_taken_before_or_after_the_command(self):
        before = self.run_ok("--api", self.api, "verify")
        after = self.run_ok("verify", "--api", self.api)
        self.assertEqual(before, after)
        for name in PROCESSORS:
            self.assertRegex(after, r"(?m)^%s: ok \(applied LSN \d+\)$" % name)
        mixed = json.loads(self.run_ok("verify", "feed", "--json", "--api", self.api))
        self.assertEqual([p["name"] for p in mixed["processors"]], ["feed"])

    def test_an_http_url_is_taken_wherever_host_port_is(self):
        url = "http://%s/" % self.api
        self.assertIn("feed", self.run_ok("--api", url, "processors"))
        self.assertIn("feed", self.run_ok("processors", env={"FEEDCTL_API": "http://" + self.api}))
        self.assertIn("feed", self.run_ok("--ready-file", self.daemon.ready_file, "processors"))

    def test_text_output_of_every_command(self):
        table = self.run_ok("--api", self.api, "processors")
        lines = table.splitlines()
        self.assertEqual(lines[0].split(), ["NAME", "KIND", "SOURCE", "STATE", "APPLIED_LSN", "LAG",
                                            "LAG_S", "PARKED"])
        self.assertEqual(sorted(l.split()[0] for l in lines[1:]), sorted(PROCESSORS))
        self.assertRegex(self.run_ok("--api", self.api, "rebuild", "feed"),
                         r"^feed: rebuilt \(applied LSN \d+\)\n$")
        self.assertEqual(self.run_ok("--api", self.api, "parked", "usernames"),
                         "usernames: 0 parked change(s)\n")
        self.assertEqual(self.run_ok("--api", self.api, "replay", "usernames"),
                         "usernames: replaying 0 parked change(s)\n")
        self.assertRegex(self.run_ok("--api", self.api, "pause", "user_posts"),
                         r"^user_posts: paused \(applied LSN \d+\)\n$")
        self.assertRegex(self.run_ok("--api", self.api, "resume", "user_posts"),
                         r"^user_posts: running \(applied LSN \d+\)\n$")

    def test_json_output_of_every_command_parses(self):
        def run_json(*args):
            return json.loads(self.run_ok("--json", "--api", self.api, *args))

        listed = run_json("processors")
        self.assertEqual(sorted(p["name"] for p in listed["processors"]), sorted(PROCESSORS))
        verified = run_json("verify")
        self.assertEqual(sorted(p["name"] for p in verified["processors"]), sorted(PROCESSORS))
        self.assertTrue(all(p["ok"] and p["differences"] == [] for p in verified["processors"]))
        rebuilt = run_json("rebuild", "feed")
        self.assertEqual(rebuilt["name"], "feed")
        self.assertIsInstance(rebuilt["appliedLsn"], int)
        self.assertEqual(run_json("parked", "usernames"), {"name": "usernames", "parked": []})
        self.assertEqual(run_json("replay", "usernames"), {"name": "usernames", "replayed": 0})
        self.assertEqual(run_json("pause", "usernames")["state"], "paused")
        self.assertEqual(run_json("resume", "usernames")["state"], "running")

    def test_a_refused_call_exits_1(self):
        rc, out, err = feedctl("--api", self.api, "rebuild", "nosuch")
        self.assertEqual(rc, 1, (out, err))
        self.assertEqual(out, "")
        self.assertIn("not_found", err)
        rc, out, err = feedctl("--api", self.api, "--json", "pause", "nosuch")
        self.assertEqual(rc, 1, (out, err))
        self.assertEqual(json.loads(out)["error"]["code"], "not_found")
        # verify goes on after a refusal, and exits 1.
        rc, out, err = feedctl("--api", self.api, "verify", "nosuch", "feed")
        self.assertEqual(rc, 1, (out, err))
        self.assertIn("nosuch: cannot verify: not_found", out)
        self.assertRegex(out, r"(?m)^feed: ok")


if __name__ == "__main__":
    unittest.main()
