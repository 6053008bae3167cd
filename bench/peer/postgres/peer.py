#!/usr/bin/python3
"""The scenario on PostgreSQL 15 and on feedd, side by side, in one run.

    peer.py --sf SF --feedd BIN --out DIR [--feedd-data DIR --keys FILE]
            [--rounds 2] [--seconds 20] [--conns "8 64"] [--latency-seconds 5]
            [--only "rename latency read write"]

Both systems run durable on loopback: PostgreSQL with fsync=on and
synchronous_commit=on, the V3 design of schema.sql (triggers keep the
denormalized fields in the writing transaction, indexes answer Q3 and Q6) and
a wal2json slot consumed by pg_recvlogical during the write runs; feedd with
storage.sync=true on its embedded defaults (embedded broker, the three
processors). The same data set (bench/scenario's generator, seed 42) is loaded
into both, each by its bulk path - PostgreSQL by COPY, then indexes and
triggers; feedd by `feedctl import` of NDJSON with its views following -
unless --feedd-data gives a loaded copy. --systems measures one of them
alone, and --merge makes one report of such runs (at SF 1 the two data
sets do not fit this box's disk together).

Per round, each system on its loaded data (the first round) or a fresh
copy of it, taking turns (which goes first alternates), each after a sync()
(so that the copies are written back before, not during, a side's runs):
renames of random users on
one connection (PostgreSQL: the UPDATE whose trigger rewrites the user's posts, comments
and likes; feedd: the PATCH, then a read of one of the user's posts with
X-Feedd-Min-Lsn, i.e. until the `usernames` view has committed the whole
fan-out; then feedd waits until its other views have applied the fan-out
too, the rename's "drain", and until Kafka has it and RocksDB's compactions
are done; PostgreSQL likewise until the slot's consumer has decoded the
fan-out, then VACUUM (ANALYZE) and a CHECKPOINT), every request alone on
one connection (--latency-seconds each: pgbench -M prepared, resp. wrk),
then the read mix
(Q1-Q6 in equal parts) and the write mix (C1/C2/C3/C4 = 5/15/40/40) closed
loop on each --conns, for --seconds each. For each run: throughput, latency
p50/p99, the server's CPU per request (PostgreSQL: the postmaster and every
backend; feedd: the daemon) and the client's (pgbench / wrk, on the same box);
after a write run, how long until the change feed is consumed (the slot's
confirmed position reaches the WAL's end) resp. every view is current
(processors' lag 0). Prints a table of medians over the rounds with the ratio
feedd / PostgreSQL, and writes DIR/peer.json, DIR/peer.md and, with gnuplot,
the charts DIR/latency.png and DIR/throughput.png (their data in DIR/*.dat).
"""

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "bench", "scenario"))
import driver as D  # noqa: E402
import scenario as S  # noqa: E402

PG_BIN = "/usr/lib/postgresql/15/bin"
TICK = os.sysconf("SC_CLK_TCK")
WRITE_MIX = [("c1", 5), ("c2", 15), ("c3", 40), ("c4", 40)]
READ_MIX = [("q1", 1), ("q2", 1), ("q3", 1), ("q4", 1), ("q5", 1), ("q6", 1)]
KINDS = ["q1", "q2", "q3", "q4", "q5", "q6", "c1", "c2", "c3", "c4"]


def log(msg):
    sys.stderr.write("[peer %s] %s\n" % (time.strftime("%H:%M:%S"), msg))
    sys.stderr.flush()


def run(cmd, **kw):
    r = subprocess.run(cmd, **kw)
    if r.returncode != 0:
        raise RuntimeError("%s exited %d: %s" % (" ".join(cmd), r.returncode,
                                                  (r.stderr or "")[-2000:]))
    return r


def proc_stat(pid):
    with open("/proc/%d/stat" % pid) as f:
        st = f.read()
    fields = st[st.rindex(")") + 2:].split()
    return int(fields[1]), [int(x) for x in fields[11:15]]  # ppid, utime stime cutime cstime


def live_children(root_pid):
    """The pids of `root_pid`'s live children (PostgreSQL's backends)."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != root_pid:
            try:
                if proc_stat(int(entry))[0] == root_pid:
                    pids.append(int(entry))
            except (OSError, ValueError):
                continue
    return pids


def server_cpu(root_pid):
    """CPU seconds of `root_pid`, its reaped children (cutime, cstime) and its
    live children: backends that exit during a run are still counted."""
    total = sum(proc_stat(root_pid)[1])
    for pid in live_children(root_pid):
        try:
            total += sum(proc_stat(pid)[1][:2])
        except (OSError, ValueError):
            continue  # exited since: its time is in root_pid's cutime
    return total / TICK


def pss_mib(root_pid):
    """Proportional set size of `root_pid` and its live children, in MiB: the
    memory a server's processes hold, shared pages (PostgreSQL's shared
    buffers) counted once."""
    def pss(pid):
        try:
            with open("/proc/%d/smaps_rollup" % pid) as f:
                return next(int(line.split()[1]) for line in f if line.startswith("Pss:"))
        except (OSError, StopIteration):
            return 0  # exited since
    return sum(pss(pid) for pid in [root_pid] + live_children(root_pid)) / 1024.0


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def pct(values, p):
    v = sorted(values)
    return S.percentile(v, p) if v else None


def copy_feedd_data(src, dst):
    """A copy of feedd's data directory that costs no disk for its bulk, as
    RocksDB's checkpoints do: table and blob files are never written again
    once created (compactions write new ones and delete the old), so they
    are hard-linked; every other file is copied."""
    def copy(s, d):
        if s.endswith((".sst", ".blob")):
            os.link(s, d)
        else:
            shutil.copy2(s, d)
    shutil.copytree(src, dst, symlinks=True, copy_function=copy)


def du(path):
    return int(subprocess.run(["du", "-sb", path], capture_output=True, text=True,
                              check=True).stdout.split()[0])


# ---------------------------------------------------------------- PostgreSQL

class Postgres:
    def __init__(self, work):
        self.work = work
        self.data = os.path.join(work, "pg")
        self.port = free_port()
        self.as_user = [] if os.geteuid() != 0 else ["runuser", "-u", "postgres", "--"]
        self.proc = None
        self.consumer = None

    def chown(self, path):
        if self.as_user:
            run(["chown", "-R", "postgres:postgres", path])

    def initdb(self):
        os.makedirs(self.data)
        self.chown(self.work)
        run(self.as_user + [PG_BIN + "/initdb", "-D", self.data, "-U", "postgres",
                            "--auth=trust", "-E", "UTF8", "--locale=C"], stdout=subprocess.DEVNULL)

    def start(self):
        log_path = os.path.join(self.work, "postgres.log")
        with open(log_path, "ab") as out:
            self.proc = subprocess.Popen(self.as_user + [
                PG_BIN + "/postgres", "-D", self.data, "-c", "port=%d" % self.port,
                "-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=" + self.work,
                "-c", "fsync=on", "-c", "synchronous_commit=on", "-c", "wal_level=logical",
                "-c", "max_replication_slots=4", "-c", "max_wal_senders=4",
                "-c", "shared_buffers=256MB", "-c", "max_connections=200",
                "-c", "max_wal_size=4GB"],
                stdout=out, stderr=out)
        for _ in range(300):
            if subprocess.run(self.client("pg_isready") + ["-q"]).returncode == 0:
                # The postmaster (under runuser when started by root): its
                # backends are its children.
                with open(os.path.join(self.data, "postmaster.pid")) as f:
                    self.postmaster = int(f.readline())
                return
            time.sleep(0.1)
        raise RuntimeError("PostgreSQL did not start; see " + log_path)

    def stop(self):
        self.stop_consumer()
        if self.proc:
            self.proc.terminate()  # smart shutdown waits for clients; none are left
            self.proc.wait(120)
            self.proc = None

    def client(self, tool):
        return ["/usr/bin/" + tool, "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres"]

    def psql(self, *args, db="bench"):
        return run(self.client("psql") + ["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", db] +
                   list(args), capture_output=True, text=True).stdout

    def start_consumer(self):
        path = os.path.join(self.work, "wal2json.out")
        self.consumer = subprocess.Popen(self.client("pg_recvlogical") + [
            "-d", "bench", "--slot", "peer", "--start", "-o", "format-version=2",
            "-o", "include-timestamp=1", "-f", "/dev/null", "-s", "1", "-F", "0"],
            stdout=subprocess.DEVNULL, stderr=open(path, "ab"))

    def consumer_cpu(self):
        if not self.consumer:
            return 0.0
        return sum(proc_stat(self.consumer.pid)[1][:2]) / TICK

    def wal_end(self):
        return self.psql("-At", "-c", "SELECT pg_current_wal_lsn()").strip()

    def slot_reached(self, lsn):
        """Whether the slot's walsender has decoded and sent the consumer the
        WAL up to `lsn` (the consumer's own confirmations come only every
        second, its status interval)."""
        out = self.psql("-At", "-c", "SELECT sent_lsn >= '%s'::pg_lsn FROM pg_stat_replication "
                        "WHERE application_name = 'pg_recvlogical'" % lsn)
        return out.strip() == "t"

    def catch_up_s(self, timeout):
        """Seconds until the running consumer has been sent the WAL written
        so far (inf past `timeout`)."""
        end = self.wal_end()
        return until(lambda: self.slot_reached(end), timeout=timeout)

    def stop_consumer(self):
        if self.consumer:
            self.consumer.terminate()
            self.consumer.wait(60)
            self.consumer = None


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def load_postgres(pg, sf, csv_dir, written=False):
    """COPY of load.py's CSV files (plain or compressed), then indexes,
    triggers and the slot.
    With `written`, csv_dir already holds them (and load.py's report in
    counts.txt) and keeps them; otherwise they are written there, timed
    apart, and removed after the load."""
    t0 = time.monotonic()
    if written:
        with open(os.path.join(csv_dir, "counts.txt")) as f:
            out = f.read()
    else:
        out = run([sys.executable, os.path.join(HERE, "load.py"), "--sf", str(sf), "--out",
                   csv_dir], capture_output=True, text=True).stdout
    gen_s = None if written else time.monotonic() - t0
    counts = dict(zip(out.split()[0::2], map(int, out.split()[1::2])))
    pg.psql("-c", "CREATE DATABASE bench", db="postgres")
    pg.psql("-f", os.path.join(HERE, "schema.sql"))
    t0 = time.monotonic()
    for table in ("users", "posts", "comments", "likes"):
        path = os.path.join(csv_dir, table + ".csv")
        # load.py --zstd's files are read through zstd, on the client's side.
        source = ("PROGRAM 'zstd -dc %s'" % (path + ".zst") if os.path.exists(path + ".zst")
                  else "'%s'" % path)
        pg.psql("-c", "\\copy %s FROM %s (FORMAT csv)" % (table, source))
    copy_s = time.monotonic() - t0
    pg.psql("-f", os.path.join(HERE, "indexes.sql"))
    pg.psql("-f", os.path.join(HERE, "triggers.sql"))
    pg.psql("-c", "SELECT pg_create_logical_replication_slot('peer', 'wal2json')")
    pg.psql("-c", "CHECKPOINT")
    load_s = time.monotonic() - t0
    if not written:
        shutil.rmtree(csv_dir)
    return {"items": counts["items"], "posts": counts["posts"], "users": counts["users"],
            "generate_s": gen_s, "copy_s": copy_s, "load_s": load_s,
            "disk_bytes": du(pg.data)}


def pgbench(pg, scripts, conns, seconds, nusers, nposts, work):
    """pgbench -M prepared on `scripts` [(name, weight)]: req/s, latency
    percentiles from its per-transaction log, server and client CPU."""
    logdir = tempfile.mkdtemp(dir=work)
    cmd = pg.client("pgbench") + [
        "-n", "-M", "prepared", "-c", str(conns), "-j", str(min(conns, 2)), "-T", str(seconds),
        "-D", "nusers=%d" % nusers, "-D", "nposts=%d" % nposts,
        "-l", "--log-prefix", os.path.join(logdir, "tx")]
    for name, weight in scripts:
        cmd += ["-f", "%s@%d" % (os.path.join(HERE, name + ".sql"), weight)]
    cmd.append("bench")
    c0, s0, k0 = children_cpu(), server_cpu(pg.postmaster), pg.consumer_cpu()
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError("pgbench failed:\n" + out.stdout + out.stderr)
    time.sleep(0.3)  # the backends exit and are reaped into the postmaster's cutime
    c1, s1, k1 = children_cpu(), server_cpu(pg.postmaster), pg.consumer_cpu()
    tps = float(re.search(r"tps = ([\d.]+)", out.stdout).group(1))
    m = re.search(r"number of failed transactions: (\d+)", out.stdout)
    failed = int(m.group(1)) if m else 0
    lat = []
    for name in os.listdir(logdir):
        with open(os.path.join(logdir, name)) as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 3:
                    lat.append(int(parts[2]) / 1000.0)
    shutil.rmtree(logdir)
    r = {"req_per_s": tps, "p50_ms": pct(lat, 50), "p99_ms": pct(lat, 99), "failed": failed,
         "server_cpu_ms": 1000.0 * (s1 - s0) / max(1, tps * seconds),
         "client_cores": (c1 - c0) / seconds, "server_cores": (s1 - s0) / seconds}
    if pg.consumer:
        r["consumer_cores"] = (k1 - k0) / seconds
    return r


# ---------------------------------------------------------------- feedd

class Feedd:
    def __init__(self, binary, work):
        self.binary, self.work = binary, work
        self.feedctl = os.path.join(os.path.dirname(binary), "feedctl")
        self.data = os.path.join(work, "feedd-data")
        self.proc = None

    def start(self):
        ready = os.path.join(self.work, "feedd-ready.json")
        if os.path.exists(ready):
            os.remove(ready)
        with open(os.path.join(self.work, "feedd.log"), "ab") as out:
            self.proc = subprocess.Popen([self.binary, "--data-dir", self.data,
                                          "--listen", "127.0.0.1:0", "--metrics-listen",
                                          "127.0.0.1:0", "--ready-file", ready,
                                          "--storage.sync=true"], stdout=out, stderr=out)
        for _ in range(600):
            if os.path.exists(ready) and os.path.getsize(ready) > 0:
                break
            time.sleep(0.1)
        with open(ready) as f:
            info = json.load(f)
        self.api, self.metrics = info["api"], info["metrics"]

    def stop(self):
        if self.proc:
            self.proc.terminate()
            self.proc.wait(120)
            self.proc = None

    def cpu(self):
        return sum(proc_stat(self.proc.pid)[1][:2]) / TICK

    def peak_rss(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))

    def lag(self):
        return D.processors_lag(self.api)


def load_feedd(fd, sf, ndjson_dir):
    """The bulk import, as a user moves a data set in: the same items as
    NDJSON (bench/scenario/ndjson.py, not timed, as the CSV for COPY is not),
    then `feedctl import` of users and posts, until every view is current."""
    t0 = time.monotonic()
    counts = json.loads(run([sys.executable, os.path.join(ROOT, "bench", "scenario", "ndjson.py"),
                             "--sf", str(sf), "--out", ndjson_dir],
                            capture_output=True, text=True).stdout)
    gen_s = time.monotonic() - t0
    fd.start()
    t0 = time.monotonic()
    for container in ("users", "posts"):
        run([fd.feedctl, "--api", fd.api, "import", "--no-progress", container,
             os.path.join(ndjson_dir, container + ".ndjson")], stdout=subprocess.DEVNULL)
    import_s = time.monotonic() - t0
    while fd.lag() > 0:
        time.sleep(0.05)
    load_s = time.monotonic() - t0
    S.settle(fd.api, fd.metrics, log=lambda *a: None)
    peak_rss = fd.peak_rss()
    fd.stop()
    shutil.rmtree(ndjson_dir)
    return {"load_s": load_s, "import_s": import_s, "generate_s": gen_s,
            "peak_rss_bytes": peak_rss, "disk_bytes": du(fd.data), "items": counts["items"]}


def wrk(fd, mix, conns, seconds, keys, nusers):
    cmd = ["wrk", "-t%d" % min(conns, 2), "-c%d" % conns, "-d%ds" % seconds, "--latency", "-s",
           os.path.join(ROOT, "bench", "scenario", "scenario.lua"), "http://" + fd.api, "--",
           mix, keys, str(nusers), "0", "peer%d" % int(time.time() * 1000)]
    c0, s0, r0 = children_cpu(), fd.cpu(), read_bytes(fd.proc.pid)
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    c1, s1, r1 = children_cpu(), fd.cpu(), read_bytes(fd.proc.pid)
    r = D.parse_wrk(out)
    rps = r["req_per_s"] or 0
    return {"req_per_s": rps, "p50_ms": r["p50_ms"], "p99_ms": r["p99_ms"],
            "failed": r["non_2xx"] + r["socket_errors"],
            "server_cpu_ms": 1000.0 * (s1 - s0) / max(1, rps * seconds),
            "client_cores": (c1 - c0) / seconds, "server_cores": (s1 - s0) / seconds,
            "disk_read_mib": (r1 - r0) / 2**20}


def feedd_renames(fd, seconds, nusers):
    """One client renames random users (PATCH users/u/u) and, each time,
    reads one of the user's posts with X-Feedd-Min-Lsn = the rename's LSN:
    the time until the rename has reached every post, comment and like of
    the user (the `usernames` view commits its fan-out with its watermark)."""
    import random
    rng = random.Random()
    c = S.Conn(fd.api)
    lat = []
    end = time.monotonic() + seconds
    s0 = fd.cpu()
    while time.monotonic() < end:
        u = rng.randrange(nusers)
        uid = S.user_id(u)
        t0 = time.perf_counter()
        st, h, body = c.request("PATCH", S.item_path("users", uid, uid), {
            "operations": [{"op": "set", "path": "/username",
                            "value": "r%d" % rng.getrandbits(40)}]})
        if st != 200:
            raise RuntimeError("rename -> %d %s" % (st, body[:200]))
        post = S.post_id(u, 0)
        st, _, body = c.get(S.item_path("posts", post, post),
                            {"X-Feedd-Min-Lsn": h["x-feedd-lsn"], "X-Feedd-Wait-Ms": "60000"})
        if st != 200:
            raise RuntimeError("read after rename -> %d %s" % (st, body[:200]))
        lat.append((time.perf_counter() - t0) * 1000.0)
    s1 = fd.cpu()
    c.close()
    return {"req_per_s": len(lat) / seconds, "p50_ms": pct(lat, 50), "p99_ms": pct(lat, 99),
            "failed": 0, "server_cpu_ms": 1000.0 * (s1 - s0) / max(1, len(lat))}


def settle_disk():
    """sync(): what the side before left for the disk to write (data dir
    copies, a checkpoint's writeback) is written before this side's fsyncs
    start. Returns the seconds it took."""
    t0 = time.monotonic()
    os.sync()
    return time.monotonic() - t0


def read_bytes(pid):
    with open("/proc/%d/io" % pid) as f:
        return next(int(line.split()[1]) for line in f if line.startswith("read_bytes:"))


def until(condition, timeout=300):
    t0 = time.monotonic()
    while not condition():
        if time.monotonic() - t0 > timeout:
            return float("inf")
        time.sleep(0.02)
    return time.monotonic() - t0


def settle_postgres(pg):
    """What publish_catchup and settle are to feedd after its renames: the
    fan-out decoded by the slot's consumer (as Kafka has feedd's), its dead
    rows vacuumed and its pages checkpointed (as the compactions feedd's
    writes set off are done), so that none of it runs under the figures
    that follow."""
    pg.start_consumer()
    if pg.catch_up_s(timeout=3600) == float("inf"):
        raise RuntimeError("the slot did not catch up within an hour")
    pg.stop_consumer()
    pg.psql("-c", "VACUUM (ANALYZE)")
    pg.psql("-c", "CHECKPOINT")


# ---------------------------------------------------------------- the runs

def one_round(pg, fd, args, meta, first):
    rows = []

    def add(system, figure, r):
        r.update({"system": system, "figure": figure})
        rows.append(r)
        log("%-8s %-14s %s" % (system, figure, json.dumps(
            {k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()
             if k not in ("system", "figure")})))

    def pg_side():
        pg.start()
        if "rename" in args.only:
            add("postgres", "rename 1 conn", pgbench(pg, [("rename", 1)], 1, args.latency_seconds,
                                                    meta["users"], meta["posts"], pg.work))
            settle_postgres(pg)
        for kind in KINDS if "latency" in args.only else ():
            add("postgres", kind + " 1 conn",
                pgbench(pg, [(kind, 1)], 1, args.latency_seconds, meta["users"], meta["posts"],
                        pg.work))
        for conns in args.conns if "read" in args.only else ():
            add("postgres", "read c%d" % conns,
                pgbench(pg, READ_MIX, conns, args.seconds, meta["users"], meta["posts"], pg.work))
        for conns in args.conns if "write" in args.only else ():
            pg.start_consumer()
            r = pgbench(pg, WRITE_MIX, conns, args.seconds, meta["users"], meta["posts"], pg.work)
            r["drain_s"] = pg.catch_up_s(timeout=60)
            pg.stop_consumer()
            add("postgres", "write c%d" % conns, r)
        add("postgres", "memory", {"pss_mib": pss_mib(pg.postmaster)})
        pg.stop()

    def feedd_side():
        fd.start()
        S.settle(fd.api, fd.metrics, log=lambda *a: None)
        if "rename" in args.only:
            r = feedd_renames(fd, args.latency_seconds, meta["users"])
            # The other views still apply the renames' fan-out: what follows
            # is measured once every view is current, as PostgreSQL's
            # triggers are done when the UPDATE commits.
            r["drain_s"] = until(lambda: fd.lag() <= 0)
            add("feedd", "rename 1 conn", r)
            # Nor do Kafka's publishing of the fan-out or the compactions
            # its writes set off run under the latencies.
            D.publish_catchup(fd.api)
            S.settle(fd.api, fd.metrics, log=lambda *a: None)
        for kind in KINDS if "latency" in args.only else ():
            add("feedd", kind + " 1 conn", wrk(fd, kind, 1, args.latency_seconds, args.keys,
                                                meta["users"]))
        for conns in args.conns if "read" in args.only else ():
            add("feedd", "read c%d" % conns, wrk(fd, "read", conns, args.seconds, args.keys,
                                                  meta["users"]))
        for conns in args.conns if "write" in args.only else ():
            r = wrk(fd, "write", conns, args.seconds, args.keys, meta["users"])
            r["drain_s"] = until(lambda: fd.lag() <= 0)
            add("feedd", "write c%d" % conns, r)
        add("feedd", "memory", {"pss_mib": pss_mib(fd.proc.pid)})
        fd.stop()

    sides = {"postgres": pg_side, "feedd": feedd_side}
    for system in (("postgres", "feedd") if first == "postgres" else ("feedd", "postgres")):
        if system not in args.systems:
            continue
        log("disk settled in %.1f s" % settle_disk())
        sides[system]()
    return rows


def median_of(rows, system, figure, key):
    v = [r[key] for r in rows if r["system"] == system and r["figure"] == figure
         and r.get(key) is not None]
    return statistics.median(v) if v else None


def table(rows):
    figures = list(dict.fromkeys(r["figure"] for r in rows))

    def med(system, figure, key):
        return median_of(rows, system, figure, key)

    def f(v, fmt):
        return "-" if v is None else (fmt % v)

    out = ["| figure | PostgreSQL | feedd | feedd / PostgreSQL |", "|---|---|---|---|"]
    for fig in figures:
        for key, label, fmt, better in (
                ("req_per_s", "req/s", "%.0f", "high"), ("p50_ms", "p50 ms", "%.3f", "low"),
                ("p99_ms", "p99 ms", "%.3f", "low"),
                ("server_cpu_ms", "server CPU ms/request", "%.3f", "low"),
                ("client_cores", "client cores", "%.2f", "low"),
                ("consumer_cores", "wal2json consumer cores", "%.2f", "low"),
                ("drain_s", "drain s", "%.2f", "low"),
                ("pss_mib", "after the runs, MiB (PSS of the server's processes)", "%.0f",
                 "low")):
            if " 1 conn" in fig and key not in ("p50_ms", "p99_ms") and not (
                    fig.startswith("rename") and key in ("req_per_s", "server_cpu_ms", "drain_s")):
                continue
            p, d = med("postgres", fig, key), med("feedd", fig, key)
            if p is None and d is None:
                continue
            ratio = "-" if not p or d is None else "%.2f" % (d / p)
            out.append("| %s %s | %s | %s | %s |" % (fig, label, f(p, fmt), f(d, fmt), ratio))
    return "\n".join(out)


def charts(rows, out, title):
    """OUT/latency.png (every request alone on one connection: p50 bars, p99
    whiskers) and OUT/throughput.png (each mix and connection count: req/s,
    and how long the change feed's consumer took to catch up after a write
    run), both systems side by side, medians over the rounds; with gnuplot."""
    if not shutil.which("gnuplot"):
        log("no gnuplot: no charts")
        return

    def cell(system, figure, key):
        v = median_of(rows, system, figure, key)
        return "?" if v is None else "%g" % v

    figures = list(dict.fromkeys(r["figure"] for r in rows))
    one_conn = [f for f in figures if f.endswith(" 1 conn")]
    mixes = [f for f in figures if f.startswith(("read c", "write c"))]
    for name, figs, keys in (("latency", one_conn, ("p50_ms", "p99_ms")),
                             ("throughput", mixes, ("req_per_s", "drain_s"))):
        if not figs:
            continue
        dat = os.path.join(out, name + ".dat")
        with open(dat, "w") as f:
            f.write("# figure postgres_%s postgres_%s feedd_%s feedd_%s\n" % (keys * 2))
            for fig in figs:
                label = fig.replace(" 1 conn", "").upper() if name == "latency" else fig
                f.write('"%s" %s\n' % (label, " ".join(
                    cell(system, fig, key) for system in ("postgres", "feedd") for key in keys)))
        run(["gnuplot", "-e", "datafile='%s'; outfile='%s'; charttitle='%s'" % (
            dat, os.path.join(out, name + ".png"), title), os.path.join(HERE, name + ".gp")])


def loads_table(meta, pg_load, fd_load):
    """The load's figures of each system that was loaded ("-" for one that
    was not, or was loaded beforehand)."""
    items = meta["items"]

    def per_item(load, key):
        return "%.0f" % (load[key] / items) if load else "-"

    if pg_load:
        pg_s = ("%.1f (COPY %.1f, then indexes, triggers, slot, checkpoint; CSV generation %s "
                "not counted)" % (pg_load["load_s"], pg_load["copy_s"],
                                  "%.1f s" % pg_load["generate_s"]
                                  if pg_load["generate_s"] is not None else "beforehand"))
        pg_rate = "%.0f" % (items / pg_load["load_s"])
    else:
        pg_s = pg_rate = "-"
    if fd_load and fd_load["load_s"]:
        fd_s = ("%.1f (`feedctl import`, until the views are current; import %.1f; NDJSON "
                "generation %.1f s not counted)" % (fd_load["load_s"], fd_load["import_s"],
                                                     fd_load["generate_s"]))
        fd_rate = "%.0f" % (items / fd_load["load_s"])
        fd_rss = "%.0f" % (fd_load["peak_rss_bytes"] / 2**20)
    else:
        fd_s = "(loaded beforehand)" if fd_load else "-"
        fd_rate = fd_rss = "-"
    return ("| load | PostgreSQL | feedd |\n|---|---|---|\n"
            "| items | %d | %d |\n| load s | %s | %s |\n| load items/s | %s | %s |\n"
            "| disk bytes/item | %s | %s |\n"
            "| feedd's peak RSS during the load, MiB | | %s |" % (
                items, items, pg_s, fd_s, pg_rate, fd_rate, per_item(pg_load, "disk_bytes"),
                per_item(fd_load, "disk_bytes"), fd_rss))


def report(out, result):
    """OUT/peer.md, the charts and OUT/peer.json of a run's `result` (meta,
    pg_load, feedd_load, rows, rounds, sf, commit, command); prints peer.md."""
    os.makedirs(out, exist_ok=True)
    md = "%s\n\n%s\n\nMedians of %d rounds; feedd %s; %s; command: `%s`\n" % (
        loads_table(result["meta"], result["pg_load"], result["feedd_load"]),
        table(result["rows"]), result["rounds"], result["commit"], time.strftime("%Y-%m-%d"),
        result["command"])
    with open(os.path.join(out, "peer.md"), "w") as f:
        f.write(md)
    charts(result["rows"], out, "PostgreSQL 15 and feedd %s, SF %g, %d items, medians of %d "
           "rounds" % (result["commit"], result["sf"], result["meta"]["items"], result["rounds"]))
    with open(os.path.join(out, "peer.json"), "w") as f:
        json.dump(result, f, indent=1)
    print(md)


def merge(paths, out):
    """One report of runs that each measured one system (--systems), such as
    PostgreSQL and feedd at SF 1, whose data sets do not fit this box's disk
    together."""
    runs = []
    for path in paths:
        with open(path) as f:
            runs.append(json.load(f))
    if len({(r["sf"], r["meta"]["items"]) for r in runs}) != 1:
        sys.exit("peer.py --merge: the runs measured different data sets")
    def loaded(key):  # the load of the run that loaded that system
        return next((r[key] for r in runs if r[key]), None)

    report(out, {"meta": runs[0]["meta"], "pg_load": loaded("pg_load"),
                 "feedd_load": loaded("feedd_load"), "rows": [x for r in runs for x in r["rows"]],
                 "rounds": min(r["rounds"] for r in runs), "sf": runs[0]["sf"],
                 "commit": " / ".join(dict.fromkeys(r["commit"] for r in runs)),
                 "command": " + ".join(r["command"] for r in runs)})


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sf", type=float)
    ap.add_argument("--feedd")
    ap.add_argument("--feedd-data")
    ap.add_argument("--keys")
    ap.add_argument("--pg-csv", help="load.py's CSV files (plain or --zstd), written "
                    "beforehand into this directory with its report in counts.txt (kept)")
    ap.add_argument("--systems", default="postgres feedd",
                    help="which systems to load and measure (for one alone, then --merge)")
    ap.add_argument("--items", type=int, help="the items of --feedd-data, when PostgreSQL "
                    "is not loaded to count them (bench/scenario/ndjson.py prints them)")
    ap.add_argument("--merge", nargs="+", metavar="PEER_JSON",
                    help="only write one report of these runs' peer.json into --out")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--latency-seconds", type=int, default=5)
    ap.add_argument("--conns", default="8 64")
    ap.add_argument("--only", default="rename latency read write",
                    help="which figures: rename, latency (one connection), read, write")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    if args.merge:
        merge(args.merge, args.out)
        return
    if args.sf is None or not args.feedd:
        ap.error("--sf and --feedd are required")
    # The checkout's commit when the run starts (--feedd may be built from another).
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    args.conns = [int(c) for c in args.conns.split()]
    args.only = set(args.only.split())
    args.systems = set(args.systems.split())
    if not args.systems or args.systems - {"postgres", "feedd"}:
        ap.error("--systems: postgres and/or feedd")
    if args.feedd_data and "postgres" not in args.systems and not args.items:
        ap.error("--feedd-data without PostgreSQL needs --items")
    os.makedirs(args.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="feedd-peer.")
    os.chmod(work, 0o755)
    pg, fd = Postgres(os.path.join(work, "pgw")), Feedd(os.path.abspath(args.feedd), work)
    os.makedirs(pg.work)
    pg_load = fd_load = None
    try:
        if "postgres" in args.systems:
            log("loading PostgreSQL (SF %g)" % args.sf)
            pg.initdb()
            pg.start()
            pg_load = load_postgres(pg, args.sf, args.pg_csv or os.path.join(work, "csv"),
                                    written=bool(args.pg_csv))
            pg.stop()
        if "feedd" in args.systems and args.feedd_data:
            copy_feedd_data(args.feedd_data, fd.data)
            fd_load = {"load_s": None, "disk_bytes": du(fd.data)}
        elif "feedd" in args.systems:
            log("loading feedd (SF %g)" % args.sf)
            fd_load = load_feedd(fd, args.sf, os.path.join(work, "ndjson"))
        if pg_load:
            meta = {k: pg_load[k] for k in ("users", "posts", "items")}
        else:
            ks = S.KeySpace(args.sf, 42)
            meta = {"users": ks.users, "posts": ks.posts,
                    "items": fd_load.get("items", args.items)}
        if not args.keys:
            args.keys = os.path.join(work, "keys.txt")
            run([sys.executable, os.path.join(ROOT, "bench", "scenario", "driver.py"), "keys",
                 "--sf", str(args.sf), "--out", args.keys], stdout=subprocess.DEVNULL)
        # The first round runs on the loaded data; each later one on fresh
        # copies of it, kept aside beforehand (none with one round: at SF 1
        # the two data sets take most of this box's disk).
        pristine_pg, pristine_fd = pg.data + ".loaded", fd.data + ".loaded"
        if args.rounds > 1:
            if pg_load:
                shutil.copytree(pg.data, pristine_pg, symlinks=True)
                pg.chown(pristine_pg)
            if fd_load:
                copy_feedd_data(fd.data, pristine_fd)
        rows = []
        for r in range(args.rounds):
            if r > 0 and pg_load:
                shutil.rmtree(pg.data)
                shutil.copytree(pristine_pg, pg.data, symlinks=True)
            if r > 0 and fd_load:
                shutil.rmtree(fd.data)
                copy_feedd_data(pristine_fd, fd.data)
            if pg_load:
                pg.chown(pg.data)
            first = "postgres" if r % 2 == 0 else "feedd"
            log("round %d of %d (%s first)" % (r + 1, args.rounds, first))
            rows += one_round(pg, fd, args, meta, first)
    finally:
        pg.stop()
        fd.stop()
    report(args.out, {"meta": meta, "pg_load": pg_load, "feedd_load": fd_load, "rows": rows,
                      "rounds": args.rounds, "sf": args.sf, "commit": commit,
                      "command": " ".join([os.path.relpath(sys.argv[0], ROOT)] + sys.argv[1:])})
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
