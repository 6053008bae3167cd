"""Shared helpers of the monitoring tests: the Grafana dashboard, the metric
catalogue (docs/metrics.md) and promtool.

Python 3 standard library only (the alert rules are read back from
Prometheus's /api/v1/rules or checked by promtool, so no YAML parser is needed).
"""

import json
import os
import re
import shutil
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
DASHBOARD = os.path.join(ROOT, "monitoring", "grafana", "feedd-dashboard.json")
ALERTS = os.path.join(ROOT, "monitoring", "prometheus", "alerts.yml")
CATALOGUE = os.path.join(ROOT, "docs", "metrics.md")

# The value a template variable stands for when an expression is sent to
# Prometheus directly. Grafana's $__rate_interval is max(4 x scrape interval of
# the data source (15 s by default), $__interval + scrape interval) = 1m.
BUILTIN_VARIABLES = {
    "__rate_interval": "1m",
    "__interval": "15s",
    "__range": "1h",
}

_VAR_RE = re.compile(r"\$\{(\w+)(?::\w+)?\}|\[\[(\w+)\]\]|\$(\w+)")


def tool(env_name, default):
    """Path of an external tool: $<env_name>, else `default` on PATH."""
    path = os.environ.get(env_name) or shutil.which(default)
    if not path:
        raise AssertionError("%s not found: install the Debian package 'prometheus' "
                             "(scripts/install-deps.sh) or set %s" % (default, env_name))
    return path


def promtool():
    return tool("PROMTOOL_BIN", "promtool")


def prometheus():
    return tool("PROMETHEUS_BIN", "prometheus")


def load_dashboard():
    with open(DASHBOARD, "r", encoding="utf-8") as f:
        return json.load(f)


def all_panels(dashboard):
    """Every panel, including those nested in collapsed rows."""
    out = []
    for p in dashboard.get("panels", []):
        out.append(p)
        out.extend(p.get("panels", []) if p.get("type") == "row" else [])
    return out


def data_panels(dashboard):
    return [p for p in all_panels(dashboard) if p.get("type") != "row"]


def panel_targets(dashboard):
    """[(panel, target)] for every query target of every panel."""
    out = []
    for p in data_panels(dashboard):
        for t in p.get("targets", []):
            out.append((p, t))
    return out


def variables_in(expr):
    return {a or b or c for a, b, c in _VAR_RE.findall(expr)}


def substitute(expr, values):
    """Replaces $var, ${var}, ${var:fmt} and [[var]] with values[var]."""
    def repl(m):
        name = m.group(1) or m.group(2) or m.group(3)
        if name not in values:
            raise KeyError("no value for template variable $%s in %r" % (name, expr))
        return values[name]
    return _VAR_RE.sub(repl, expr)


def daemon_catalogue_lines():
    """The lines of docs/metrics.md that catalogue the daemon's metrics: all
    but the section "feedd worker", whose metrics another process serves
    (tests/integration/test_worker.py scrapes those)."""
    in_worker_section = False
    with open(CATALOGUE, "r", encoding="utf-8") as f:
        for line in f:
            if line.startswith("## "):
                in_worker_section = line.startswith("## feedd worker")
            if not in_worker_section:
                yield line


def catalogue():
    """{metric family name: type} from the tables of docs/metrics.md."""
    families = {}
    for line in daemon_catalogue_lines():
        m = re.match(r"^\|\s*`([a-z_:][a-z0-9_:]*)`\s*\|\s*([^|]+)\|", line)
        if not m:
            continue
        kind = m.group(2).strip().split()[0]
        families[m.group(1)] = kind
    return families


_NOT_METRICS = {
    "sum", "max", "min", "avg", "count", "by", "without", "on", "ignoring", "and", "or",
    "unless", "rate", "irate", "increase", "deriv", "delta", "changes", "absent", "vector",
    "time", "histogram_quantile", "bool", "group_left", "group_right", "offset",
    "le", "route", "status", "method", "container", "op", "outcome", "processor", "kind",
    "instance", "job",
}


def metric_names(expr):
    """Metric names an expression selects (histogram suffixes kept)."""
    names = set()
    for m in re.finditer(r"\b([a-zA-Z_:][a-zA-Z0-9_:]*)\b", re.sub(r'"[^"]*"', '""', expr)):
        word = m.group(1)
        if word in _NOT_METRICS or word.startswith("__"):
            continue
        if re.match(r"^(feedd_|process_|up$)", word):
            names.add(word)
    return names


def family_of(name, families):
    """The catalogue family a sample name belongs to, or None."""
    if name in families:
        return name
    for suffix in ("_bucket", "_sum", "_count"):
        if name.endswith(suffix) and families.get(name[: -len(suffix)]) == "histogram":
            return name[: -len(suffix)]
    return None


def alert_exprs():
    """{alert name: expr} read from alerts.yml (its plain `alert:`/`expr:` lines
    and `expr: |` blocks; promtool checks the file itself)."""
    out = {}
    name = None
    with open(ALERTS, "r", encoding="utf-8") as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r"^\s*- alert:\s*(\S+)\s*$", line)
        if m:
            name = m.group(1)
        m = re.match(r"^(\s*)expr:\s*(.*)$", line)
        if m and name:
            indent, rest = len(m.group(1)), m.group(2)
            if rest in ("|", ">", "|-", ">-"):
                block = []
                while i + 1 < len(lines) and (not lines[i + 1].strip() or
                                              len(lines[i + 1]) - len(lines[i + 1].lstrip()) > indent):
                    i += 1
                    block.append(lines[i].strip())
                rest = " ".join(b for b in block if b)
            out[name] = rest
            name = None
        i += 1
    return out


def check_exprs_parse(exprs):
    """Runs promtool check rules on a generated file with one recording rule per
    expression (JSON is YAML). Returns (ok, output)."""
    rules = [{"record": "dashboard:expr_%d" % i, "expr": e} for i, e in enumerate(exprs)]
    doc = {"groups": [{"name": "dashboard", "rules": rules}]}
    with tempfile.NamedTemporaryFile("w", suffix=".yml", prefix="feedd-dash-", delete=False) as f:
        json.dump(doc, f, indent=1)
        path = f.name
    try:
        proc = subprocess.run([promtool(), "check", "rules", path], capture_output=True,
                              text=True, timeout=60)
        return proc.returncode == 0, proc.stdout + proc.stderr
    finally:
        os.unlink(path)
