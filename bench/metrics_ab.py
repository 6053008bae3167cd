#!/usr/bin/env python3
"""Two feedd binaries side by side: /metrics scrape time and create latency.

    bench/metrics_ab.py BEFORE_BIN AFTER_BIN [--creates N] [--scrapes N]

Starts both daemons (tests/integration/feedd_harness.py: temporary data
directories, ephemeral ports, embedded Kafka, the default processors),
sends each the same creates over one keep-alive connection, then scrapes
each /metrics with curl; the requests alternate between the two daemons so
that the box's load hits both alike. Prints, per binary, the median (and
p90) create latency and scrape time. Both daemons stop at the end.
"""

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "integration"))
from feedd_harness import FeeddDaemon  # noqa: E402


def alternated(i, names):
    return names if i % 2 else list(reversed(names))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--creates", type=int, default=2000)
    parser.add_argument("--scrapes", type=int, default=200)
    args = parser.parse_args()
    names = ["before", "after"]
    daemons = {}
    try:
        for name, binary in zip(names, (args.before, args.after)):
            os.environ["FEEDD_BIN"] = binary
            daemons[name] = FeeddDaemon(name=name).start()
        conns = {n: http.client.HTTPConnection(d.host, d.port) for n, d in daemons.items()}
        create = {n: [] for n in names}
        for i in range(args.creates):
            body = json.dumps({"id": "u%d" % i, "userId": "u%d" % i, "type": "user",
                               "username": "n%d" % i})
            for n in alternated(i, names):
                t = time.perf_counter()
                conns[n].request("POST", "/v1/containers/users/items", body,
                                 {"Content-Type": "application/json"})
                resp = conns[n].getresponse()
                resp.read()
                create[n].append(time.perf_counter() - t)
                if resp.status != 201:
                    raise SystemExit("%s: create answered %d" % (n, resp.status))
        scrape = {n: [] for n in names}
        for i in range(args.scrapes):
            for n in alternated(i, names):
                url = "http://%s/metrics" % daemons[n].ready["metrics"]
                out = subprocess.run(["curl", "-sf", "-o", "/dev/null", "-w", "%{time_total}", url],
                                     capture_output=True, text=True, check=True).stdout
                scrape[n].append(float(out))
        for n in names:
            print("%-6s create median %.3f ms (p90 %.3f), scrape median %.3f ms (p90 %.3f)"
                  % (n, statistics.median(create[n]) * 1e3,
                     statistics.quantiles(create[n], n=10)[8] * 1e3,
                     statistics.median(scrape[n]) * 1e3,
                     statistics.quantiles(scrape[n], n=10)[8] * 1e3))
    finally:
        for d in daemons.values():
            if d.alive():
                d.stop()
            d.cleanup()


if __name__ == "__main__":
    main()
