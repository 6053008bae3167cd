"""Static checks of the monitoring assets (no daemon needed).

Dashboard (monitoring/grafana/feedd-dashboard.json):

- import-ready: __inputs with a Prometheus data source, schemaVersion, a
  `datasource` variable every panel and target uses, `job` and `instance`
  variables;
- layout: unique panel ids, gridPos inside the 24 columns, no overlap;
- queries: every panel has targets with an expression and a unique refId, only
  known template variables, and every expression parses (promtool check rules
  on a generated recording-rule file);
- catalogue: every metric an expression or an alert rule selects is in
  docs/metrics.md, and every family of the catalogue is on the dashboard.

Runbook (docs/operations.md): every alert of alerts.yml has a section whose
anchor its `runbook` annotation names, and a `summary`.
"""

import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import monitoring_assets as assets  # noqa: E402


class DashboardTest(unittest.TestCase):
    maxDiff = None

    @classmethod
    def setUpClass(cls):
        cls.dash = assets.load_dashboard()
        cls.variables = {v["name"]: v for v in cls.dash.get("templating", {}).get("list", [])}

    def test_import_ready(self):
        d = self.dash
        self.assertGreaterEqual(d.get("schemaVersion", 0), 36)
        self.assertLessEqual(d.get("schemaVersion", 0), 39)
        self.assertIsNone(d.get("id"), "an exported dashboard has id null")
        self.assertTrue(d.get("uid"))
        self.assertTrue(d.get("title"))
        inputs = {i["name"]: i for i in d.get("__inputs", [])}
        self.assertIn("DS_PROMETHEUS", inputs)
        self.assertEqual(inputs["DS_PROMETHEUS"]["type"], "datasource")
        self.assertEqual(inputs["DS_PROMETHEUS"]["pluginId"], "prometheus")

        ds = self.variables.get("datasource")
        self.assertIsNotNone(ds, "no `datasource` template variable")
        self.assertEqual(ds["type"], "datasource")
        self.assertEqual(ds["query"], "prometheus")
        self.assertEqual(ds["current"].get("value"), "${DS_PROMETHEUS}",
                         "the import's data source choice must become the variable's default")
        for name in ("job", "instance"):
            v = self.variables.get(name)
            self.assertIsNotNone(v, "no `%s` template variable" % name)
            self.assertEqual(v["type"], "query")
            self.assertEqual(v["datasource"], {"type": "prometheus", "uid": "${datasource}"})
            self.assertRegex(v["definition"], r"^label_values\(feedd_up(\{[^}]*\})?, %s\)$" % name)
        self.assertTrue(self.variables["instance"]["includeAll"])

    def test_layout(self):
        panels = assets.all_panels(self.dash)
        ids = [p.get("id") for p in panels]
        self.assertEqual(len(ids), len(set(ids)), "duplicate panel ids")
        cells = {}
        for p in panels:
            g = p["gridPos"]
            self.assertGreaterEqual(g["x"], 0, p["title"])
            self.assertLessEqual(g["x"] + g["w"], 24, p["title"])
            self.assertGreater(g["h"], 0, p["title"])
            for x in range(g["x"], g["x"] + g["w"]):
                for y in range(g["y"], g["y"] + g["h"]):
                    self.assertNotIn((x, y), cells, "panels %r and %r overlap"
                                     % (cells.get((x, y)), p["title"]))
                    cells[(x, y)] = p["title"]

    def test_panels_have_queries(self):
        allowed = set(self.variables) | set(assets.BUILTIN_VARIABLES)
        panels = assets.data_panels(self.dash)
        self.assertGreaterEqual(len(panels), 30)
        for p in panels:
            with self.subTest(panel=p["title"]):
                self.assertIn(p["type"], ("timeseries", "stat", "gauge", "table", "bargauge"))
                self.assertEqual(p.get("datasource"), {"type": "prometheus", "uid": "${datasource}"})
                targets = p.get("targets") or []
                self.assertTrue(targets, "panel without targets")
                refs = [t.get("refId") for t in targets]
                self.assertEqual(len(refs), len(set(refs)), "duplicate refId")
                for t in targets:
                    self.assertEqual(t.get("datasource"), p["datasource"])
                    expr = t.get("expr", "")
                    self.assertTrue(expr.strip(), "empty expr")
                    unknown = assets.variables_in(expr) - allowed
                    self.assertFalse(unknown, "unknown template variables %s in %r" % (unknown, expr))
                    self.assertIn('instance=~"$instance"', expr,
                                  "every query must follow the instance variable: %r" % expr)

    def test_exprs_parse(self):
        values = {"job": "feedd", "instance": "127.0.0.1:9464"}
        values.update(assets.BUILTIN_VARIABLES)
        exprs = [assets.substitute(t["expr"], values) for _, t in assets.panel_targets(self.dash)]
        ok, out = assets.check_exprs_parse(exprs)
        self.assertTrue(ok, "promtool rejects a dashboard expression:\n" + out)

    def test_exprs_use_catalogue_metrics(self):
        families = assets.catalogue()
        self.assertIn("feedd_http_requests_total", families, "docs/metrics.md not parsed")
        used = set()
        for p, t in assets.panel_targets(self.dash):
            for name in assets.metric_names(t["expr"]):
                if name == "up":
                    continue
                fam = assets.family_of(name, families)
                self.assertIsNotNone(fam, "panel %r selects %s, which docs/metrics.md does not list"
                                     % (p["title"], name))
                used.add(fam)
        alerts = assets.alert_exprs()
        self.assertGreaterEqual(len(alerts), 10, "alerts.yml not parsed")
        for alert, expr in alerts.items():
            self.assertTrue(assets.metric_names(expr), "%s: no metric in %r" % (alert, expr))
            for name in assets.metric_names(expr):
                if name != "up":
                    self.assertIsNotNone(assets.family_of(name, families),
                                         "%s selects %s, which docs/metrics.md does not list"
                                         % (alert, name))
        # Every family of the catalogue is shown somewhere, except build info
        # and feedd_up (template variables and labels only), and these
        # counters, shown as rates elsewhere or redundant with a gauge.
        not_plotted = {"feedd_up", "feedd_processor_rebuilds_total"}
        missing = sorted(set(families) - used - not_plotted)
        self.assertEqual(missing, [], "catalogue families on no panel")

    def test_required_topics(self):
        """The panels the operations runbook refers to exist."""
        titles = {p["title"] for p in assets.data_panels(self.dash)}
        for title in ("Requests/s by route and status", "Latency p50 by route", "Latency p99 by route",
                      "Requests in flight", "Committed writes/s by container and op",
                      "Group commit size (requests per group)", "Commit latency", "Items per container",
                      "Live bytes per container", "Disk free ratio", "Publish lag (changes)",
                      "Publish lag (seconds)", "Kafka produce errors/s by kind", "Kafka broker up",
                      "Processor lag (changes)", "Processor lag (seconds)",
                      "Commit-to-view latency p50 / p99", "Applies/s by outcome", "Parked changes",
                      "Rebuilding / paused", "CPU (cores)", "Memory", "File descriptors"):
            self.assertIn(title, titles)


class RunbookTest(unittest.TestCase):
    def test_every_alert_has_a_runbook_section(self):
        with open(os.path.join(assets.ROOT, "docs", "operations.md"), "r", encoding="utf-8") as f:
            doc = f.read()
        headings = {h.strip() for h in re.findall(r"^### (.+)$", doc, re.M)}
        with open(assets.ALERTS, "r", encoding="utf-8") as f:
            rules = f.read()
        blocks = re.split(r"^\s*- alert:\s*", rules, flags=re.M)[1:]
        self.assertEqual(len(blocks), len(assets.alert_exprs()))
        for block in blocks:
            name = block.split()[0]
            with self.subTest(alert=name):
                self.assertIn(name, headings, "docs/operations.md has no '### %s'" % name)
                self.assertRegex(block, r"\n\s+summary: \S")
                m = re.search(r"\n\s+runbook: \"([^\"]+)\"", block)
                self.assertIsNotNone(m, "no runbook annotation")
                self.assertEqual(m.group(1), "docs/operations.md#" + name.lower())
                section = doc.split("### " + name, 1)[1].split("\n### ", 1)[0]
                for part in ("**Means:**", "**Check:**", "**Fix:**"):
                    self.assertIn(part, section)


if __name__ == "__main__":
    unittest.main()
