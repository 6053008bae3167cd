"""The monitoring assets against a real feedd and a real Prometheus.

1. Start feedd (tests/integration/feedd_harness.py: temporary data directory,
   ephemeral API and metrics ports, embedded Kafka broker, the default
   processors) and a real Prometheus (Debian package `prometheus`) scraping the
   daemon's metrics address every second with monitoring/prometheus/alerts.yml
   loaded, on loopback ports only.
2. Generate a small load over HTTP: creates, reads, upserts, patches, deletes,
   transactional batches, queries (partition, index, ordered scan), change-feed
   reads, errors (404, 405, 409).
3. Check the exposition: `promtool check metrics` passes on GET /metrics, and
   every family of docs/metrics.md is exposed with its type, its labels and
   only the label values the catalogue lists.
4. Run every expression of the Grafana dashboard (template variables
   substituted) through /api/v1/query: each must succeed and return data (not
   only NaN: the load runs twice, scraped in between, so rates see it); run
   every alert expression: each must succeed, and on this healthy daemon none
   may return anything (except FeeddDiskAlmostFull when this machine's disk
   really is below 10% free); every rule Prometheus loaded must evaluate with
   health "ok".

Everything stops at the end (bounded timeouts). Needs FEEDD_BIN, and
prometheus/promtool on PATH (or PROMETHEUS_BIN / PROMTOOL_BIN).
"""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.normpath(os.path.join(HERE, "..", "integration")))

import monitoring_assets as assets  # noqa: E402
from feedd_harness import FeeddDaemon, strip_system  # noqa: E402,F401

JOB = "feedd"
SCRAPE_INTERVAL_S = 1
PROMETHEUS_READY_TIMEOUT_S = 60.0
SCRAPE_WAIT_TIMEOUT_S = 60.0
RULES_WAIT_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 20.0
HTTP_TIMEOUT_S = 15.0
MIN_SCRAPES = 5
PROCESSORS_TIMEOUT_S = 90.0

# Alerts that may legitimately fire on a healthy daemon, with the PromQL
# condition under which they must fire (checked instead of "no result").
EXPECTED_IF = {
    "FeeddDiskAlmostFull": 'feedd_disk_free_bytes{job="feedd"} / feedd_disk_size_bytes{job="feedd"} < 0.10',
}


def log(msg):
    sys.stderr.write("[monitoring %s] %s\n" % (time.strftime("%H:%M:%S"), msg))
    sys.stderr.flush()


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url, timeout=HTTP_TIMEOUT_S):
    """(status, body bytes); HTTP errors are returned, not raised."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


# ---------------------------------------------------------------- exposition


_SAMPLE_RE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+\S+)?$")
_LABEL_RE = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_exposition(text):
    """({family: type}, [(name, {label: value}, value)])."""
    types = {}
    samples = []
    for line in text.splitlines():
        if not line.strip():
            continue
        if line.startswith("#"):
            m = re.match(r"^# TYPE (\S+) (\S+)", line)
            if m:
                types[m.group(1)] = m.group(2)
            continue
        m = _SAMPLE_RE.match(line)
        if not m:
            raise AssertionError("unparsable exposition line: %r" % line)
        labels = dict(_LABEL_RE.findall(m.group(3) or ""))
        samples.append((m.group(1), labels, m.group(4)))
    return types, samples


def catalogue_details():
    """{family: (type, labels or None when unknown, {label: allowed values})}
    from docs/metrics.md."""
    out = {}
    for line in assets.daemon_catalogue_lines():
        if not re.match(r"^\|\s*`", line):
            continue
        cols = [c.strip() for c in line.strip().strip("|").split("|")]
        name = cols[0].strip("`")
        kind = cols[1].split()[0]
        labels, values = None, {}
        if len(cols) >= 4:          # | metric | type | labels | meaning |
            labels = set()
            for m in re.finditer(r"`(\w+)`(\s*\(([^)]*)\))?", cols[2]):
                labels.add(m.group(1))
                if m.group(3):
                    values[m.group(1)] = set(re.findall(r"`([^`]+)`", m.group(3)))
        else:                        # | metric | type | meaning |
            m = re.search(r"labels ((?:`\w+`(?:,\s*)?)+)", cols[-1])
            labels = set(re.findall(r"`(\w+)`", m.group(1))) if m else set()
        out[name] = (kind, labels, values)
    return out


def documented_buckets():
    """{histogram family: set of finite bucket bounds} for the histograms
    whose meaning in docs/metrics.md ends with "buckets (s): a, b, ..."."""
    out = {}
    for line in assets.daemon_catalogue_lines():
        m = re.match(r"^\|\s*`(\w+)`\s*\|\s*histogram\s*\|.*buckets(?: \(s\))?: ([0-9., ]+)\|", line)
        if m:
            out[m.group(1)] = {float(x) for x in m.group(2).split(",")}
    return out


# ---------------------------------------------------------------- Prometheus


class PrometheusServer:
    """A real Prometheus on a loopback port with a temporary TSDB."""

    def __init__(self, target, rule_files, scrape_settings=None):
        """scrape_settings: more settings of the job's scrape config (scheme, tls_config, ...)."""
        self.binary = assets.prometheus()
        self.workdir = tempfile.mkdtemp(prefix="feedd-prom-")
        self.config_path = os.path.join(self.workdir, "prometheus.yml")
        self.log_path = os.path.join(self.workdir, "prometheus.log")
        self.proc = None
        self.port = None
        config = {  # JSON is YAML
            "global": {"scrape_interval": "%ds" % SCRAPE_INTERVAL_S,
                       "scrape_timeout": "%ds" % SCRAPE_INTERVAL_S,
                       "evaluation_interval": "%ds" % SCRAPE_INTERVAL_S},
            "rule_files": list(rule_files),
            "scrape_configs": [dict({"job_name": JOB, "metrics_path": "/metrics",
                                     "static_configs": [{"targets": [target]}]},
                                    **(scrape_settings or {}))],
        }
        with open(self.config_path, "w", encoding="utf-8") as f:
            json.dump(config, f, indent=1)

    def start(self):
        last = None
        for _ in range(3):  # a free port can be taken before Prometheus binds it
            self.port = free_port()
            cmd = [self.binary,
                   "--config.file=" + self.config_path,
                   "--storage.tsdb.path=" + os.path.join(self.workdir, "data"),
                   "--web.listen-address=127.0.0.1:%d" % self.port,
                   "--log.level=info"]
            with open(self.log_path, "ab") as log_file:
                self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log_file,
                                             stderr=log_file, close_fds=True,
                                             cwd=self.workdir)
            deadline = time.monotonic() + PROMETHEUS_READY_TIMEOUT_S
            while time.monotonic() < deadline and self.proc.poll() is None:
                try:
                    status, _ = http_get(self.url("/-/ready"), timeout=2)
                    if status == 200:
                        return self
                except OSError as e:
                    last = e
                time.sleep(0.2)
            last = "exit code %s, last error %r" % (self.proc.poll(), last)
            self.stop(check=False)
        raise AssertionError("Prometheus did not become ready: %s\n%s" % (last, self.logs()))

    def url(self, path, **params):
        q = ("?" + urllib.parse.urlencode(params)) if params else ""
        return "http://127.0.0.1:%d%s%s" % (self.port, path, q)

    def api(self, path, **params):
        status, body = http_get(self.url(path, **params))
        try:
            doc = json.loads(body.decode("utf-8"))
        except ValueError:
            raise AssertionError("%s -> HTTP %d, not JSON: %r" % (path, status, body[:300]))
        return status, doc

    def query(self, expr):
        """(status field, error or None, result list)."""
        _, doc = self.api("/api/v1/query", query=expr)
        return doc.get("status"), doc.get("error"), (doc.get("data") or {}).get("result")

    def scalar(self, expr, default=None):
        status, err, result = self.query(expr)
        if status != "success":
            raise AssertionError("%s: %s" % (expr, err))
        if not result:
            return default
        return float(result[0]["value"][1])

    def stop(self, check=True):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                if check:
                    raise AssertionError("Prometheus ignored SIGTERM for %.0f s" % STOP_TIMEOUT_S)

    def cleanup(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def logs(self):
        try:
            with open(self.log_path, "r", encoding="utf-8", errors="replace") as f:
                return "---- prometheus log ----\n" + f.read()[-6000:]
        except OSError:
            return "<no prometheus log>"


# ---------------------------------------------------------------- load


def iso(ms):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + ".%03dZ" % (ms % 1000)


def generate_load(daemon, tag, users=12, posts_per_user=3):
    """Writes and reads over HTTP through every kind of route; checks statuses.
    `tag` prefixes every id, so the load can run more than once."""
    c = daemon.client()

    def expect(resp, statuses, what):
        if resp[0] not in statuses:
            raise AssertionError("%s: HTTP %d %r" % (what, resp[0], c.last_raw[:300]))
        return resp

    base = 1_700_000_000_000 + 10_000_000 * sum(map(ord, tag))
    post_ids = []
    for u in range(users):
        uid = "%su%d" % (tag, u)
        expect(c.create("users", {"id": uid, "userId": uid, "type": "user", "username": "name%d" % u}),
               (201,), "create user")
        for p in range(posts_per_user):
            pid = "%sp%d-%d" % (tag, u, p)
            post_ids.append((pid, uid))
            expect(c.create("posts", {"id": pid, "postId": pid, "type": "post", "userId": uid,
                                      "username": "name%d" % u, "content": "post %s " % pid * 5,
                                      "creationDate": iso(base + 1000 * len(post_ids)),
                                      "commentCount": 0, "likeCount": 0}), (201,), "create post")
    # Comments and likes: the batch recipe (create + incr of the post's count).
    for i, (pid, uid) in enumerate(post_ids):
        ops = [{"op": "create", "body": {"id": "%sc%d" % (tag, i), "postId": pid, "type": "comment",
                                         "userId": uid, "content": "comment %d" % i}},
               {"op": "patch", "id": pid, "operations": [{"op": "incr", "path": "/commentCount",
                                                          "value": 1}]}]
        if i % 2 == 0:
            ops += [{"op": "create", "body": {"id": "%sl%d" % (tag, i), "postId": pid, "type": "like",
                                              "userId": uid}},
                    {"op": "patch", "id": pid, "operations": [{"op": "incr", "path": "/likeCount",
                                                               "value": 1}]}]
        expect(c.batch("posts", pid, ops), (200,), "batch")
    # A batch of reads only, and a failing batch (the second create conflicts).
    pid, uid = post_ids[0]
    expect(c.batch("posts", pid, [{"op": "read", "id": pid}]), (200,), "read batch")
    expect(c.batch("posts", pid, [{"op": "create", "body": {"id": tag + "x1", "postId": pid, "type": "like"}},
                                  {"op": "create", "body": {"id": pid, "postId": pid, "type": "post"}}]),
           (409,), "conflicting batch")
    # Reads, upserts, patches, renames (the usernames processor), deletes.
    for pid, uid in post_ids[:10]:
        expect(c.read("posts", pid, pid), (200,), "read")
    expect(c.read("posts", "nope", "nope"), (404,), "read missing")
    for u in range(0, users, 3):
        uid = "%su%d" % (tag, u)
        expect(c.upsert("users", uid, uid, {"id": uid, "userId": uid, "type": "user",
                                            "username": "renamed%d" % u}), (200,), "rename")
    for pid, uid in post_ids[:5]:
        expect(c.patch("posts", pid, pid, [{"op": "set", "path": "/content", "value": "edited"}]),
               (200,), "patch")
    for pid, uid in post_ids[-3:]:
        expect(c.delete("posts", pid, pid), (204,), "delete")
    expect(c.create("users", {"id": tag + "u0", "userId": tag + "u0", "type": "user",
                              "username": "dup"}),
           (409,), "duplicate create")
    # Queries: one partition, the userId index, an ordered full scan.
    expect(c.query("posts", {"partitionKey": post_ids[0][0]}), (200,), "partition query")
    expect(c.query("posts", {"filter": {"userId": tag + "u1"}}), (200,), "index query")
    expect(c.query("posts", {"filter": {"type": "post"}, "orderBy": "creationDate",
                             "descending": True, "limit": 10}), (200,), "ordered scan")
    expect(c.query("feed", {"partitionKey": "post", "limit": 5}), (200,), "feed view query")
    # Change feed, status routes, errors.
    expect(c.changefeed(None, "beginning", limit=50), (200,), "changefeed")
    expect(c.changefeed("posts", "now", limit=10, wait_ms=50), (200,), "changefeed long poll")
    expect(c.request("GET", "/v1/feed"), (200,), "feed info")
    expect(c.request("GET", "/v1/processors"), (200,), "processors")
    expect(c.request("GET", "/v1/containers"), (200,), "containers")
    expect(c.request("GET", "/healthz"), (200,), "healthz")
    expect(c.request("GET", "/readyz"), (200,), "readyz")
    expect(c.request("GET", "/no/such/path"), (404,), "unknown path")
    expect(c.request("DELETE", "/v1/feed"), (405,), "wrong method")
    return c


def wait_processors_caught_up(client, timeout_s=PROCESSORS_TIMEOUT_S):
    """Until every processor has applied the head (their view writes move the
    head too) and the head stays put, so the processor metrics have seen the
    load. With the Kafka source a processor starts applying only once its
    consumer has joined, a few seconds after start."""
    deadline = time.monotonic() + timeout_s
    while True:
        head = client.wait_quiescent(stable_s=0.5, timeout_s=timeout_s)
        status, _, body = client.request("GET", "/v1/processors")
        if status != 200:
            raise AssertionError("GET /v1/processors -> %d %r" % (status, client.last_raw[:300]))
        procs = body.get("processors") or []
        behind = {p["name"]: p.get("lag") for p in procs if (p.get("lag") or {}).get("changes") != 0}
        if procs and not behind and client.head_lsn() == head:
            return
        if time.monotonic() > deadline:
            raise AssertionError("processors still behind after %.0f s: %r" % (timeout_s, behind))
        time.sleep(0.25)


# ---------------------------------------------------------------- the test


class LiveMetricsTest(unittest.TestCase):
    maxDiff = None
    daemon = None
    prom = None

    @classmethod
    def setUpClass(cls):
        try:
            cls._set_up()
        except BaseException:
            cls._tear_down(check=False)
            raise

    @classmethod
    def _set_up(cls):
        # Durable, as in production: the WAL sync histogram (the Commit
        # latency panel) has samples only when writes sync the WAL.
        cls.daemon = FeeddDaemon(name="feedd", sync=True).start()
        metrics = cls.daemon.ready.get("metrics")
        if not metrics:
            raise AssertionError(
                "the ready file has no metrics address (%r): feedd does not serve "
                "/metrics yet (docs/metrics.md)" % (cls.daemon.ready,))
        cls.metrics_addr = metrics
        cls.instance = metrics  # Prometheus's instance label = the target
        log("feedd api %s:%d, metrics %s" % (cls.daemon.host, cls.daemon.port, metrics))

        cls.prom = PrometheusServer(metrics, [assets.ALERTS]).start()
        log("prometheus on 127.0.0.1:%d" % cls.prom.port)
        cls._wait_scrapes(2)

        # Two rounds of load with scrapes in between: most labelled series
        # (route/status, container/op, ...) are born with their first event,
        # and rate() sees only what happens after a series' first sample.
        for tag in ("a", "b"):
            t0 = time.monotonic()
            client = generate_load(cls.daemon, tag)
            wait_processors_caught_up(client)
            log("load %s done in %.1f s, every processor caught up" % (tag, time.monotonic() - t0))
            cls._wait_scrapes(MIN_SCRAPES, after=time.time() + SCRAPE_INTERVAL_S)

        status, body = http_get("http://%s/metrics" % metrics)
        if status != 200:
            raise AssertionError("GET /metrics -> HTTP %d %r" % (status, body[:300]))
        cls.exposition = body.decode("utf-8")

    @classmethod
    def _wait_scrapes(cls, count, after=None):
        deadline = time.monotonic() + SCRAPE_WAIT_TIMEOUT_S
        sel = 'up{job="%s"}' % JOB
        while True:
            n = cls.prom.scalar("count_over_time(%s[5m])" % sel, 0)
            up = cls.prom.scalar(sel, 0)
            ts = cls.prom.scalar("timestamp(%s)" % sel, 0)
            if n >= count and up == 1 and (after is None or ts >= after):
                return
            if time.monotonic() > deadline:
                _, targets = cls.prom.api("/api/v1/targets")
                raise AssertionError("Prometheus has %d scrape(s) of feedd (up=%s, last at %s, "
                                     "want %d after %s); targets: %s\n%s"
                                     % (n, up, ts, count, after, json.dumps(targets)[:2000],
                                        cls.prom.logs()))
            time.sleep(0.25)

    @classmethod
    def tearDownClass(cls):
        cls._tear_down(check=True)

    @classmethod
    def _tear_down(cls, check):
        errors = []
        if cls.prom is not None:
            try:
                cls.prom.stop(check=check)
            except AssertionError as e:
                errors.append(str(e))
            cls.prom.cleanup()
        if cls.daemon is not None:
            try:
                if cls.daemon.alive():
                    cls.daemon.stop()
            except AssertionError as e:
                errors.append(str(e))
            finally:
                cls.daemon.cleanup()
        if errors and check:
            raise AssertionError("; ".join(errors))

    def context(self):
        return "\n" + (self.daemon.logs() if self.daemon else "") + "\n" + (
            self.prom.logs() if self.prom else "")

    # ------------------------------------------------------------ exposition

    def test_promtool_check_metrics(self):
        proc = subprocess.run([assets.promtool(), "check", "metrics"], input=self.exposition,
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 0,
                         "promtool check metrics failed (exit %d):\n%s%s\n---- exposition (head) ----\n%s"
                         % (proc.returncode, proc.stdout, proc.stderr, self.exposition[:4000]))

    def test_catalogue_families_exposed(self):
        types, samples = parse_exposition(self.exposition)
        catalogue = catalogue_details()
        by_family = {}
        for name, labels, _ in samples:
            fam = assets.family_of(name, {k: v[0] for k, v in catalogue.items()}) or name
            by_family.setdefault(fam, []).append((name, labels))
        problems = []
        for fam, (kind, labels, values) in sorted(catalogue.items()):
            got = by_family.get(fam)
            if not got:
                problems.append("%s (%s): no sample in /metrics%s" % (
                    fam, kind, "" if fam not in types else " (only # TYPE, no series)"))
                continue
            if types.get(fam) != kind:
                problems.append("%s: # TYPE is %r, the catalogue says %r" % (fam, types.get(fam), kind))
            if labels is not None:
                for name, lab in got:
                    have = set(lab) - {"le"}
                    if have != labels:
                        problems.append("%s: labels %s, the catalogue says %s"
                                        % (name, sorted(have), sorted(labels)))
                        break
            for label, allowed in values.items():
                seen = {lab.get(label) for _, lab in got} - {None}
                if seen - allowed:
                    problems.append("%s: %s values %s not in the catalogue's %s"
                                    % (fam, label, sorted(seen - allowed), sorted(allowed)))
                # The load makes every op happen; outcomes and error kinds
                # must be exposed (at 0) before their first event, or
                # increase()/rate() miss that event (FeeddKafkaProduceErrors).
                if allowed - seen:
                    problems.append("%s: no series with %s=%s (the catalogue lists %s)"
                                    % (fam, label, "|".join(sorted(allowed - seen)), sorted(allowed)))
        extra = sorted(f for f in by_family if f.startswith("feedd_") and f not in catalogue)
        if extra:
            log("families exposed but not in docs/metrics.md: %s" % ", ".join(extra))
        self.assertEqual(problems, [], "the daemon's /metrics differs from docs/metrics.md")

    def test_histogram_buckets_as_documented(self):
        # Quantiles are interpolated inside a bucket, so the boundaries decide
        # what a dashboard or a benchmark can tell apart (e.g. a commit->view
        # p99 of 45 ms from one of 90 ms): docs/metrics.md lists them.
        _, samples = parse_exposition(self.exposition)
        documented = documented_buckets()
        self.assertIn("feedd_processor_commit_to_view_seconds", documented)
        problems = []
        for fam, want in sorted(documented.items()):
            series = {}
            for name, labels, _ in samples:
                if name == fam + "_bucket" and labels.get("le") != "+Inf":
                    key = tuple(sorted((k, v) for k, v in labels.items() if k != "le"))
                    series.setdefault(key, set()).add(float(labels["le"]))
            if not series:
                problems.append("%s: no _bucket series in /metrics" % fam)
            for key, got in sorted(series.items()):
                if got != want:
                    problems.append("%s%s: buckets %s, docs/metrics.md says %s"
                                    % (fam, dict(key), sorted(got), sorted(want)))
        self.assertEqual(problems, [])

    # ------------------------------------------------------------ dashboard

    def test_dashboard_queries_return_data(self):
        dash = assets.load_dashboard()
        # Grafana substitutes a single value as is (the dots then match any
        # character, harmless); PromQL would reject re.escape()'s "\\.".
        values = {"job": JOB, "instance": self.instance}
        values.update(assets.BUILTIN_VARIABLES)
        failures = []
        count = 0
        for panel, target in assets.panel_targets(dash):
            expr = assets.substitute(target["expr"], values)
            count += 1
            status, err, result = self.prom.query(expr)
            if status != "success":
                failures.append("[%s/%s] invalid: %s\n    %s" % (panel["title"], target["refId"], err, expr))
            elif not result:
                failures.append("[%s/%s] no data\n    %s" % (panel["title"], target["refId"], expr))
            elif all(r.get("value", [0, "NaN"])[1] == "NaN" for r in result):
                failures.append("[%s/%s] only NaN (the panel would stay empty)\n    %s"
                                % (panel["title"], target["refId"], expr))
        log("%d dashboard expressions run, %d failed" % (count, len(failures)))
        self.assertGreater(count, 40)
        self.assertEqual(failures, [], "dashboard expressions:\n" + "\n".join(failures))

    def test_dashboard_variables(self):
        """The job and instance variables' label_values() queries find this daemon."""
        dash = assets.load_dashboard()
        for v in dash["templating"]["list"]:
            if v["type"] != "query":
                continue
            m = re.match(r"^label_values\((.*), (\w+)\)$", v["definition"])
            self.assertIsNotNone(m, v["definition"])
            selector = assets.substitute(m.group(1), {"job": JOB})
            _, doc = self.prom.api("/api/v1/label/%s/values" % m.group(2), **{"match[]": selector})
            self.assertEqual(doc.get("status"), "success", doc)
            want = JOB if m.group(2) == "job" else self.instance
            self.assertIn(want, doc["data"], "%s: %s" % (v["name"], v["definition"]))

    # ------------------------------------------------------------ alerts

    def _rules(self):
        _, doc = self.prom.api("/api/v1/rules")
        self.assertEqual(doc.get("status"), "success", doc)
        return [r for g in doc["data"]["groups"] for r in g["rules"]]

    def test_alert_expressions(self):
        rules = {r["name"]: r for r in self._rules() if r["type"] == "alerting"}
        self.assertEqual(sorted(rules), sorted(assets.alert_exprs()),
                         "Prometheus did not load every alert of alerts.yml")
        failures = []
        for name, rule in sorted(rules.items()):
            status, err, result = self.prom.query(rule["query"])
            if status != "success":
                failures.append("%s invalid: %s\n    %s" % (name, err, rule["query"]))
                continue
            if name in EXPECTED_IF:
                _, _, cond = self.prom.query(EXPECTED_IF[name])
                if bool(cond) != bool(result):
                    failures.append("%s: result %r, expected %s" % (name, result, bool(cond)))
            elif result:
                failures.append("%s fires on a healthy daemon: %r\n    %s" % (name, result, rule["query"]))
        self.assertEqual(failures, [], "alert expressions:\n" + "\n".join(failures))

    def test_rules_evaluate_ok(self):
        deadline = time.monotonic() + RULES_WAIT_TIMEOUT_S
        while True:
            rules = self._rules()
            pending = [r["name"] for r in rules if r.get("lastEvaluation", "").startswith("0001-")]
            bad = ["%s: health %s %s" % (r["name"], r.get("health"), r.get("lastError", ""))
                   for r in rules if r.get("health") not in ("ok", "unknown")]
            if bad or not pending:
                break
            if time.monotonic() > deadline:
                self.fail("rules never evaluated: %s" % pending)
            time.sleep(0.5)
        self.assertEqual(bad, [])
        self.assertEqual([r["name"] for r in rules if r.get("health") != "ok"], [])


if __name__ == "__main__":
    unittest.main()
