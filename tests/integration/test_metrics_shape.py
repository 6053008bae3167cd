"""The shape of the daemon's /metrics, against a golden list.

The metric names, types and labels are a public contract (docs/metrics.md;
the dashboards and alert rules of monitoring/ use them), and the help texts
are what operators read. This test starts the real daemon (embedded Kafka,
the default processors), makes every family that is born with its first
event appear (a write, a query, a processor's view commit, ...), scrapes
/metrics and reduces the exposition to one line per family:

    NAME TYPE labels=L1,L2 [LABEL=V1|V2 ...] help=HELP

with the values of the labels whose values are fixed (reasons, outcomes,
states; not routes, containers, processors, status codes or bucket bounds).
That list must equal metrics_shape.golden line for line, and the golden list
must agree with docs/metrics.md (every documented family of the daemon with
its type and labels, nothing undocumented but the exposer's own families).

After an intended change of the metrics (a new family, a new reason), write
the golden list again and review its diff:

    FEEDD_BIN=build/feedd python3 test_metrics_shape.py --write-golden
"""

import os
import re
import sys
import time
import unittest
import urllib.request

from feedd_harness import FeeddDaemon

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "metrics_shape.golden")
CATALOGUE = os.path.normpath(os.path.join(HERE, "..", "..", "docs", "metrics.md"))

# Labels whose values depend on the load, the configuration or the build.
DYNAMIC_LABELS = {"route", "method", "status", "container", "processor", "le", "version",
                  "rocksdb", "librdkafka"}
APPEAR_TIMEOUT_S = 60.0
# What prometheus-cpp's exposer reports about itself (not in docs/metrics.md).
EXPOSER_FAMILIES = {"exposer_request_latencies", "exposer_scrapes_total",
                    "exposer_transferred_bytes_total"}

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+\S+$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def shape_of(exposition):
    """({family: shape line}, the families with at least one sample) of a
    text exposition."""
    helps, types, labels = {}, {}, {}
    for line in exposition.splitlines():
        if line.startswith("# HELP "):
            name, _, text = line[len("# HELP "):].partition(" ")
            helps[name] = text
        elif line.startswith("# TYPE "):
            name, kind = line[len("# TYPE "):].split()
            types[name] = kind
        elif line.strip() and not line.startswith("#"):
            m = _SAMPLE.match(line)
            if not m:
                raise AssertionError("unparsable exposition line: %r" % line)
            name = m.group(1)
            family = name
            if family not in types:
                family = re.sub(r"_(bucket|sum|count)$", "", name)
            if family not in types:
                raise AssertionError("sample %r of no declared family" % line)
            seen = labels.setdefault(family, {})
            for key, value in _LABEL.findall(m.group(3) or ""):
                if key != "le":
                    seen.setdefault(key, set()).add(value)
    shapes = {}
    for family, kind in types.items():
        seen = labels.get(family, {})
        fixed = " ".join("%s=%s" % (k, "|".join(sorted(v)))
                         for k, v in sorted(seen.items()) if k not in DYNAMIC_LABELS)
        parts = [family, kind, "labels=" + ",".join(sorted(seen))]
        if fixed:
            parts.append(fixed)
        parts.append("help=" + helps.get(family, ""))
        shapes[family] = " ".join(parts)
    return shapes, set(labels)


def read_golden():
    with open(GOLDEN, "r", encoding="utf-8") as f:
        lines = [l.rstrip("\n") for l in f if l.strip() and not l.startswith("#")]
    return {l.split(" ", 1)[0]: l for l in lines}


def catalogue():
    """{family: (type, set of label names)} of the daemon's sections of
    docs/metrics.md (not "feedd worker", another process's)."""
    out = {}
    in_worker = False
    with open(CATALOGUE, "r", encoding="utf-8") as f:
        for line in f:
            if line.startswith("## "):
                in_worker = line.startswith("## feedd worker")
            if in_worker or not re.match(r"^\|\s*`([a-z_:][a-z0-9_:]*)`\s*\|", line):
                continue
            cols = [c.strip() for c in line.strip().strip("|").split("|")]
            kind = cols[1].split()[0]
            if len(cols) >= 4:  # | metric | type | labels | meaning |
                names = set(re.findall(r"`(\w+)`", _outside_parentheses(cols[2])))
            else:  # | metric | type | meaning |, labels named in the meaning
                m = re.search(r"labels ((?:`\w+`(?:,\s*)?)+)", cols[-1])
                names = set(re.findall(r"`(\w+)`", m.group(1))) if m else set()
            out[cols[0].strip("`")] = (kind, names)
    return out


def _outside_parentheses(text):
    """`text` without its parenthesized parts (label values and their notes)."""
    out, depth = [], 0
    for ch in text:
        depth += ch == "("
        if depth == 0:
            out.append(ch)
        depth -= ch == ")" and depth > 0
    return "".join(out)


def scrape(daemon):
    url = "http://%s/metrics" % daemon.ready["metrics"]
    with urllib.request.urlopen(url, timeout=15) as resp:
        return resp.read().decode("utf-8")


def load(client):
    """One event of each kind that gives a family its first series."""
    for resp, want in [
        (client.create("users", {"id": "u1", "userId": "u1", "type": "user", "username": "a"}),
         201),
        (client.create("posts", {"id": "p1", "postId": "p1", "type": "post", "userId": "u1",
                                 "username": "a", "content": "x",
                                 "creationDate": "2026-01-01T00:00:00.000Z",
                                 "commentCount": 0, "likeCount": 0}), 201),
        (client.upsert("users", "u1", "u1", {"id": "u1", "userId": "u1", "type": "user",
                                             "username": "b"}), 200),
        (client.query("posts", {"partitionKey": "p1"}), 200),
        (client.changefeed(None, "beginning", limit=10), 200),
        (client.read("posts", "nope", "nope"), 404),
    ]:
        if resp[0] != want:
            raise AssertionError("load: HTTP %d, expected %d: %r"
                                 % (resp[0], want, client.last_raw[:300]))


def live_shape():
    """The shape of a real daemon's /metrics once every golden family (or,
    without a golden list, every documented one) has a series."""
    daemon = FeeddDaemon(name="feedd")
    try:
        daemon.start()
        load(daemon.client())
        want = set(read_golden()) if os.path.exists(GOLDEN) else set(catalogue())
        deadline = time.monotonic() + APPEAR_TIMEOUT_S
        while True:
            shapes, with_series = shape_of(scrape(daemon))
            if want <= with_series or time.monotonic() > deadline:
                return shapes
            time.sleep(0.1)
    finally:
        daemon.stop()
        daemon.cleanup()


class MetricsShapeTest(unittest.TestCase):
    maxDiff = None

    def test_golden_list_is_documented(self):
        golden = read_golden()
        documented = catalogue()
        problems = []
        for family, (kind, names) in sorted(documented.items()):
            line = golden.get(family)
            if line is None:
                problems.append("%s: documented, not in the golden list" % family)
                continue
            _, got_kind, got_labels = line.split(" ", 3)[:3]
            got_names = set(filter(None, got_labels[len("labels="):].split(",")))
            if got_kind != kind or got_names != names:
                problems.append("%s: golden %s %s, docs/metrics.md %s %s"
                                % (family, got_kind, sorted(got_names), kind, sorted(names)))
        # prometheus-cpp's own families of the exposer are not feedd's.
        for family in sorted(set(golden) - set(documented) - set(EXPOSER_FAMILIES)):
            problems.append("%s: in the golden list, not in docs/metrics.md" % family)
        self.assertEqual(problems, [])

    def test_scrape_matches_golden_list(self):
        got = live_shape()
        want = read_golden()
        self.assertEqual(sorted(got.values()), sorted(want.values()),
                         "/metrics differs from %s (after an intended change: --write-golden)"
                         % GOLDEN)


def write_golden():
    shapes = live_shape()
    with open(GOLDEN, "w", encoding="utf-8") as f:
        f.write("# The shape of feedd's /metrics: tests/integration/test_metrics_shape.py\n"
                "# (NAME TYPE labels=... [fixed label values] help=...). Written by\n"
                "# `test_metrics_shape.py --write-golden`; review its diff.\n")
        for family in sorted(shapes):
            f.write(shapes[family] + "\n")
    print("wrote %d families to %s" % (len(shapes), GOLDEN))


if __name__ == "__main__":
    if sys.argv[1:] == ["--write-golden"]:
        write_golden()
    else:
        unittest.main()
