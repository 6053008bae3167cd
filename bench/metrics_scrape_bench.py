#!/usr/bin/python3
"""Time GET /metrics on an idle daemon: N scrapes, each on a new connection,
then N on one kept-alive connection; mean, p50 and p99 in ms and the size.

    bench/metrics_scrape_bench.py [--tls] [-n 300] BIN [BIN ...]

--tls serves the metrics port over HTTPS (metrics.tls_*) with a CA and a
certificate made with the `openssl` command in a temporary directory. Each
daemon runs on a temporary data directory and ephemeral loopback ports and
is stopped at the end. A server that closes after each answer (no
keep-alive) reports "no keep-alive".
"""

import argparse
import http.client
import json
import os
import shutil
import ssl
import statistics
import subprocess
import tempfile
import time


def openssl(cwd, *args):
    subprocess.run(["openssl"] + list(args), cwd=cwd, check=True, capture_output=True, timeout=60)


def make_certs(directory):
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl(directory, "req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
            "-subj", "/CN=bench-ca")
    openssl(directory, "req", "-new", *ec, "-keyout", "server.key", "-out", "server.csr",
            "-subj", "/CN=bench")
    with open(os.path.join(directory, "ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    openssl(directory, "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-days", "2", "-extfile", "ext", "-out", "server.pem")


def timings(connect, n, keep_alive):
    times, size = [], 0
    conn = connect()
    for _ in range(n):
        if not keep_alive:
            conn = connect()
        started = time.perf_counter()
        conn.request("GET", "/metrics")
        response = conn.getresponse()
        body = response.read()
        times.append((time.perf_counter() - started) * 1000)
        if response.status != 200:
            raise RuntimeError("GET /metrics -> %d" % response.status)
        size = len(body)
        if not keep_alive:
            conn.close()
    conn.close()
    times.sort()
    return "mean %.2f ms, p50 %.2f ms, p99 %.2f ms, %d bytes" % (
        statistics.mean(times), times[len(times) // 2], times[int(len(times) * 0.99)], size)


def run(binary, n, certs):
    workdir = tempfile.mkdtemp(prefix="feedd-scrape-bench-")
    ready = os.path.join(workdir, "ready.json")
    cmd = [binary, "--data-dir", os.path.join(workdir, "data"), "--listen", "127.0.0.1:0",
           "--metrics-listen", "127.0.0.1:0", "--ready-file", ready, "--storage.sync=false"]
    if certs:
        cmd += ["--metrics.tls_cert_file=" + os.path.join(certs, "server.pem"),
                "--metrics.tls_key_file=" + os.path.join(certs, "server.key")]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not os.path.exists(ready):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("%s did not start" % binary)
            time.sleep(0.02)
        with open(ready) as f:
            host, port = json.load(f)["metrics"].rsplit(":", 1)
        if certs:
            ctx = ssl.create_default_context(cafile=os.path.join(certs, "ca.pem"))
            connect = lambda: http.client.HTTPSConnection(host, int(port), timeout=10, context=ctx)
        else:
            connect = lambda: http.client.HTTPConnection(host, int(port), timeout=10)
        print("%s (%s)" % (binary, "HTTPS" if certs else "HTTP"))
        print("  new connection: " + timings(connect, n, keep_alive=False))
        try:
            print("  keep-alive:     " + timings(connect, n, keep_alive=True))
        except (http.client.RemoteDisconnected, ConnectionError):
            print("  keep-alive:     no keep-alive")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        shutil.rmtree(workdir, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tls", action="store_true")
    parser.add_argument("-n", type=int, default=300)
    parser.add_argument("binaries", nargs="+")
    args = parser.parse_args()
    certs = tempfile.mkdtemp(prefix="feedd-scrape-certs-") if args.tls else None
    try:
        if certs:
            make_certs(certs)
        for binary in args.binaries:
            run(binary, args.n, certs)
    finally:
        if certs:
            shutil.rmtree(certs, ignore_errors=True)


if __name__ == "__main__":
    main()
