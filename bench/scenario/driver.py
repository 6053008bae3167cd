#!/usr/bin/env python3
"""Runs the scenario's requests C1-C4 and Q1-Q6 against a loaded feedd.

    driver.py latency  --api A --mode v1|v3 --sf SF [--seed 42] [--samples 1000]
                       [--max-seconds 15] [--pid PID] --out lat.json
    driver.py keys     --sf SF [--seed 42] [--n 20000] --out keys.txt
    driver.py wrk      --api A --mix read|write|q1..q6|c1..c4|healthz --keys K --sf SF
                       [--threads 2] [--conns 8] [--seconds 20] [--delay-ms 0]
                       [--watch] [--metrics M] [--pid PID] --out run.json
    driver.py probe    --api A --sf SF [--seconds 10] [--period 0.01] --out probe.json
    driver.py settle   --api A [--metrics M] [--timeout 600]

`latency` sends each request the way an application would, one at a time
on one keep-alive connection (so the figures are unloaded latencies), with
keys drawn uniformly from the data set (a random existing user; a random
existing post, uniform over all posts):

  req  V1 (normalized, processors off)             V3 (views maintained by processors)
  C1   PUT users/u/u (a new user)                   same
  Q1   GET users/u/u                                same
  C2   POST posts (a new post by a random user)     same, with userUsername and counts 0
  Q2   GET post + GET author + query comments       GET post (username, counts on it)
       + query likes of the post's partition (4)
  Q3   cross-partition query on posts, filter       single-partition query on users,
       userId (the /userId index) + type=post,      partitionKey=userId, type=post,
       by creationDate desc                         by creationDate desc
  C3   POST the comment                             batch: create comment + incr commentCount
  Q4   query comments of the post, then GET         query comments of the post
       each distinct author (N+1)                   (usernames on the items)
  C4   POST the like                                batch: create like + incr likeCount
  Q5   as Q4 with likes                             as Q4 with likes
  Q6   cross-partition query on posts, type=post,   query partition "post" of feed,
       by creationDate desc, limit 100 (full scan)  by creationDate desc, limit 100

Per request: latency p50/p99/max (client-side, from sending the first byte
to reading the last of the last round trip), round trips, and the cost the API
reports, summed over the round trips: itemsRead, indexEntriesRead, bytesRead of
every query; a point read (GET) reports no cost, it is counted as 1 item read
and the size of its body.  Writes report no read cost.

`wrk` runs wrk with scenario.lua (C client, V3 request forms) and, with
--watch, samples the processors' lag (GET /v1/processors, every 0.25 s),
probes change-to-view latency (two threads, each every 0.1 s: a C2 post, then a
read of its copy in `users`, resp. of `feed`, with X-Feedd-Min-Lsn, timed from
the post's acknowledgement), diffs the daemon's /metrics histogram
feedd_processor_commit_to_view_seconds over the run, and times the drain
(until every processor has applied the head) after wrk stops.
"""

import argparse
import json
import os
import random
import re
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import scenario as S  # noqa: E402

REQUESTS = ["C1", "Q1", "C2", "Q2", "Q3", "C3", "Q4", "C4", "Q5", "Q6"]
MEASURE_ORDER = ["Q1", "Q2", "Q3", "Q4", "Q5", "Q6", "C1", "C2", "C3", "C4"]


# ---------------------------------------------------------------- one request


class Acc:
    __slots__ = ("rt", "items", "index", "bytes")

    def __init__(self):
        self.rt = self.items = self.index = self.bytes = 0


class Client:
    def __init__(self, api, ks, rng, tag, mode):
        self.c = S.Conn(api)
        self.ks = ks
        self.rng = rng
        self.tag = tag
        self.mode = mode
        self.seq = 0

    # -- primitives
    def read(self, container, pk, item_id, acc, headers=None):
        st, h, body = self.c.get(S.item_path(container, pk, item_id), headers)
        acc.rt += 1
        if st != 200:
            raise S.HttpError("GET %s/%s/%s -> %d %s" % (container, pk, item_id, st, body[:200]))
        acc.items += 1
        acc.bytes += len(body)
        return json.loads(body)

    def query(self, container, spec, acc, headers=None):
        items = []
        spec = dict(spec)
        while True:
            st, h, body = self.c.post(S.query_path(container), spec, headers)
            acc.rt += 1
            if st != 200:
                raise S.HttpError("query %s %r -> %d %s" % (container, spec, st, body[:200]))
            r = json.loads(body)
            cost = r.get("cost") or {}
            acc.items += cost.get("itemsRead", 0)
            acc.index += cost.get("indexEntriesRead", 0)
            acc.bytes += cost.get("bytesRead", 0)
            items.extend(r["items"])
            if not r.get("continuation") or len(items) >= spec.get("limit", 100):
                return items
            spec["continuation"] = r["continuation"]

    def write(self, method, path, body, acc):
        st, h, rbody = self.c.request(method, path, body)
        acc.rt += 1
        if st not in (200, 201):
            raise S.HttpError("%s %s -> %d %s" % (method, path, st, rbody[:200]))
        return int(h.get("x-feedd-lsn", "0"))

    def new_id(self, prefix):
        self.seq += 1
        return "%s%s.%d" % (prefix, self.tag, self.seq)

    def rand_user(self):
        return self.ks.random_user(self.rng)

    def rand_post(self):
        return S.post_id(*self.ks.random_post(self.rng))

    # -- the requests
    def C1(self, acc):
        uid = self.new_id("nu")
        it = {"id": uid, "userId": uid, "type": "user", "username": "n_" + uid}
        self.write("PUT", S.item_path("users", uid, uid), it, acc)

    def Q1(self, acc):
        uid = S.user_id(self.rand_user())
        self.read("users", uid, uid, acc)

    def new_post(self):
        u = self.rand_user()
        pid = self.new_id("np")
        p = {"id": pid, "postId": pid, "type": "post", "userId": S.user_id(u),
             "title": S.text(self.rng, S.TITLE_CHARS), "content": S.text(self.rng, S.POST_CONTENT_CHARS),
             "creationDate": S.now_iso()}
        if self.mode == "v3":
            p["userUsername"] = S.username(u)
            p["commentCount"] = 0
            p["likeCount"] = 0
        return u, p

    def C2(self, acc):
        _, p = self.new_post()
        return self.write("POST", S.items_path("posts"), p, acc)

    def Q2(self, acc):
        pid = self.rand_post()
        post = self.read("posts", pid, pid, acc)
        if self.mode == "v3":
            return post
        author = self.read("users", post["userId"], post["userId"], acc)
        comments = self.query("posts", {"partitionKey": pid, "filter": {"type": "comment"},
                                        "limit": 1000}, acc)
        likes = self.query("posts", {"partitionKey": pid, "filter": {"type": "like"},
                                     "limit": 1000}, acc)
        post["userUsername"] = author["username"]
        post["commentCount"] = len(comments)
        post["likeCount"] = len(likes)
        return post

    def Q3(self, acc):
        uid = S.user_id(self.rand_user())
        if self.mode == "v3":
            return self.query("users", {"partitionKey": uid, "filter": {"type": "post"},
                                        "orderBy": "creationDate", "descending": True}, acc)
        return self.query("posts", {"filter": {"userId": uid, "type": "post"},
                                    "orderBy": "creationDate", "descending": True}, acc)

    def reaction(self, kind, acc):
        u = self.rand_user()
        pid = self.rand_post()
        it = {"id": self.new_id("n" + kind[0]), "postId": pid, "type": kind,
              "userId": S.user_id(u)}
        if kind == "comment":
            it["content"] = S.text(self.rng, S.COMMENT_CONTENT_CHARS)
        it["creationDate"] = S.now_iso()
        if self.mode == "v1":
            return self.write("POST", S.items_path("posts"), it, acc)
        it["userUsername"] = S.username(u)
        ops = [{"op": "create", "body": it},
               {"op": "patch", "id": pid, "operations": [
                   {"op": "incr", "path": "/%sCount" % kind, "value": 1}]}]
        return self.write("POST", S.batch_path("posts", pid), {"operations": ops}, acc)

    def C3(self, acc):
        return self.reaction("comment", acc)

    def C4(self, acc):
        return self.reaction("like", acc)

    def listing(self, kind, acc):
        pid = self.rand_post()
        items = self.query("posts", {"partitionKey": pid, "filter": {"type": kind},
                                     "orderBy": "creationDate"}, acc)
        if self.mode == "v1":
            names = {}
            for it in items:
                uid = it["userId"]
                if uid not in names:
                    names[uid] = self.read("users", uid, uid, acc)["username"]
                it["userUsername"] = names[uid]
        return items

    def Q4(self, acc):
        return self.listing("comment", acc)

    def Q5(self, acc):
        return self.listing("like", acc)

    def Q6(self, acc):
        if self.mode == "v3":
            return self.query("feed", {"partitionKey": "post", "orderBy": "creationDate",
                                       "descending": True, "limit": 100}, acc)
        return self.query("posts", {"filter": {"type": "post"}, "orderBy": "creationDate",
                                    "descending": True, "limit": 100}, acc)

    def healthz(self, acc):
        st, _, _ = self.c.get("/healthz")
        acc.rt += 1


def summarize(lat_ns, accs, cpu):
    lat = sorted(x / 1e6 for x in lat_ns)
    n = len(lat)
    return {
        "n": n,
        "p50_ms": S.percentile(lat, 50), "p99_ms": S.percentile(lat, 99), "max_ms": lat[-1],
        "mean_ms": sum(lat) / n,
        "rt_mean": sum(a.rt for a in accs) / n, "rt_max": max(a.rt for a in accs),
        "items_read": sum(a.items for a in accs) / n,
        "index_entries_read": sum(a.index for a in accs) / n,
        "bytes_read": sum(a.bytes for a in accs) / n,
        "cpu_mine": round(cpu.mine, 2), "cpu_bg": round(cpu.bg, 2),
    }


def cmd_latency(args):
    ks = S.KeySpace(args.sf, args.seed)
    rng = random.Random(args.seed * 31 + (1 if args.mode == "v1" else 3))
    tag = "%x" % random.SystemRandom().getrandbits(32)
    cl = Client(args.api, ks, rng, tag, args.mode)
    roots = [os.getpid()] + ([args.pid] if args.pid else [])
    out = {"mode": args.mode, "sf": args.sf, "seed": args.seed, "users": ks.users,
           "posts": ks.posts, "samples": args.samples, "max_seconds": args.max_seconds,
           "requests": {}}
    order = ["healthz"] + MEASURE_ORDER
    for name in order:
        fn = getattr(cl, name)
        if args.wait_idle:
            S.wait_idle(roots, args.wait_idle)
        # warm-up: up to 20 requests or 2 s, not recorded
        t_end = time.monotonic() + 2.0
        for _ in range(20):
            fn(Acc())
            if time.monotonic() > t_end:
                break
        lat, accs = [], []
        deadline = time.monotonic() + args.max_seconds
        with S.CpuWatch(roots) as cpu:
            while len(lat) < args.samples:
                a = Acc()
                t0 = time.perf_counter_ns()
                fn(a)
                lat.append(time.perf_counter_ns() - t0)
                accs.append(a)
                if len(lat) >= args.min_samples and time.monotonic() > deadline:
                    break
        r = summarize(lat, accs, cpu)
        out["requests"][name] = r
        print("  %s %-7s n=%5d  p50 %8.3f  p99 %8.3f  max %8.3f ms  rt %5.1f  items %8.1f  "
              "index %8.1f  bytes %10.0f  (cpu %.2f, bg %.2f)"
              % (args.mode, name, r["n"], r["p50_ms"], r["p99_ms"], r["max_ms"], r["rt_mean"],
                 r["items_read"], r["index_entries_read"], r["bytes_read"], r["cpu_mine"],
                 r["cpu_bg"]), flush=True)
    if args.mode == "v3":
        out["consistency"] = check_views(cl, ks, rng)
        print("  v3 views checked on %(checked)d posts: %(bad)d differences" % out["consistency"])
    cl.c.close()
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)


def check_views(cl, ks, rng, n=20):
    """V3's denormalized fields equal what V1's joins compute (sample)."""
    bad, notes = 0, []
    for _ in range(n):
        u, k = ks.random_post(rng)
        pid = S.post_id(u, k)
        a = Acc()
        post = cl.read("posts", pid, pid, a)
        nc = len(cl.query("posts", {"partitionKey": pid, "filter": {"type": "comment"}, "limit": 1000}, a))
        nl = len(cl.query("posts", {"partitionKey": pid, "filter": {"type": "like"}, "limit": 1000}, a))
        copy = cl.read("users", S.user_id(u), pid, a)
        want = (S.username(u), nc, nl)
        got = (post.get("userUsername"), post.get("commentCount"), post.get("likeCount"))
        got_copy = (copy.get("userUsername"), copy.get("commentCount"), copy.get("likeCount"))
        if got != want or got_copy != want:
            bad += 1
            notes.append({"post": pid, "want": want, "post_has": got, "copy_has": got_copy})
    return {"checked": n, "bad": bad, "notes": notes[:5]}


# ---------------------------------------------------------------- keys


def cmd_keys(args):
    ks = S.KeySpace(args.sf, args.seed)
    rng = random.Random(args.seed * 17 + 5)
    with open(args.out, "w") as f:
        for _ in range(args.n):
            f.write(S.post_id(*ks.random_post(rng)) + "\n")
    print("keys: %d posts drawn from %d users / %d posts -> %s" % (args.n, ks.users, ks.posts, args.out))


# ---------------------------------------------------------------- wrk


_UNIT = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3, "h": 3600e3}


def _ms(text_):
    m = re.match(r"([\d.]+)(us|ms|s|m|h)$", text_.strip())
    return float(m.group(1)) * _UNIT[m.group(2)] if m else None


def parse_wrk(out):
    r = {}
    m = re.search(r"Requests/sec:\s*([\d.]+)", out)
    r["req_per_s"] = float(m.group(1)) if m else None
    m = re.search(r"(\d+) requests in ([\d.]+\w+)", out)
    r["requests"] = int(m.group(1)) if m else None
    m = re.search(r"^\s*Latency\s+(\S+)\s+(\S+)\s+(\S+)", out, re.M)
    if m:
        r["mean_ms"], r["max_ms"] = _ms(m.group(1)), _ms(m.group(3))
    for p in ("50", "75", "90", "99"):
        m = re.search(r"^\s*%s%%\s+(\S+)" % p, out, re.M)
        r["p%s_ms" % p] = _ms(m.group(1)) if m else None
    m = re.search(r"Non-2xx or 3xx responses:\s*(\d+)", out)
    r["non_2xx"] = int(m.group(1)) if m else 0
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    r["socket_errors"] = sum(map(int, m.groups())) if m else 0
    return r


class LagSampler(threading.Thread):
    def __init__(self, api, period=0.25):
        super().__init__(daemon=True)
        self.api, self.period = api, period
        self.stop_ev = threading.Event()
        self.samples = []   # (t, {name: (lag_changes, lag_seconds)})
        self.publish_lag = []   # (t, head - published)

    def run(self):
        c = S.Conn(self.api)
        while not self.stop_ev.is_set():
            try:
                procs = S.processors_status(c)
                self.samples.append((time.monotonic(), {
                    p["name"]: (p["lag"]["changes"], float(p["lag"]["seconds"])) for p in procs}))
                self.publish_lag.append((time.monotonic(), publish_lag(c)))
            except Exception as e:  # noqa: BLE001 - keep sampling
                c.close()
                self.samples.append((time.monotonic(), {"error": str(e)}))
            self.stop_ev.wait(self.period)
        c.close()


def publish_lag(conn):
    """head LSN - published LSN (changes not yet in Kafka), or None."""
    st, _, body = conn.get("/v1/feed")
    if st != 200:
        return None
    f = json.loads(body)
    if f.get("publishedLsn") is None:
        return None
    return f["headLsn"] - f["publishedLsn"]


def publish_catchup(api):
    """After the drain: (seconds until the publisher has published the head
    LSN of that moment, changes still unpublished then). The processors' own
    last view writes are changes too, so a few may still be in flight at the
    drain; only a publisher that does not catch up within
    PUBLISH_CATCHUP_TIMEOUT_S leaves changes behind (None, None: no publisher)."""
    c = S.Conn(api)
    try:
        t0 = time.monotonic()
        target = None
        while True:
            st, _, body = c.get("/v1/feed")
            f = json.loads(body) if st == 200 else {}
            published = f.get("publishedLsn")
            if published is None:
                return None, None
            if target is None:
                target = f["headLsn"]
            if published >= target:
                return time.monotonic() - t0, 0
            if time.monotonic() - t0 > S.PUBLISH_CATCHUP_TIMEOUT_S:
                return float("inf"), target - published
            time.sleep(0.02)
    finally:
        c.close()


def durable_fallbacks(api):
    """{processor: fromDurableFeed} (changes a processor read back from the
    durable feed instead of taking them in-process from the commit path:
    start-up, after a rebuild, or behind its bounded queue)."""
    c = S.Conn(api)
    try:
        return {p["name"]: p.get("fromDurableFeed", 0) for p in S.processors_status(c)}
    finally:
        c.close()


class Probe(threading.Thread):
    """Every `period` s: a C2 post, then a read of the view (`users`: the
    post's copy; `feed`: the feed partition) with X-Feedd-Min-Lsn = the post's
    LSN, timed from the post's acknowledgement."""

    def __init__(self, api, ks, tag, view, period=0.1):
        super().__init__(daemon=True)
        self.api, self.ks, self.tag, self.view, self.period = api, ks, tag, view, period
        self.stop_ev = threading.Event()
        self.write_ms, self.view_ms, self.errors = [], [], []

    def run(self):
        rng = random.Random()
        cl = Client(self.api, self.ks, rng, "pr%s%s" % (self.view[0], self.tag), "v3")
        while not self.stop_ev.is_set():
            try:
                u, p = cl.new_post()
                t0 = time.perf_counter()
                st, h, body = cl.c.post(S.items_path("posts"), p)
                t_ack = time.perf_counter()
                if st != 201:
                    raise S.HttpError("probe POST -> %d %s" % (st, body[:200]))
                hdr = {"X-Feedd-Min-Lsn": h["x-feedd-lsn"], "X-Feedd-Wait-Ms": "60000"}
                if self.view == "users":
                    st, _, body = cl.c.get(S.item_path("users", S.user_id(u), p["id"]), hdr)
                else:
                    st, _, body = cl.c.post(S.query_path("feed"), {
                        "partitionKey": "post", "orderBy": "creationDate", "descending": True,
                        "limit": 100}, hdr)
                t_view = time.perf_counter()
                if st != 200:
                    raise S.HttpError("probe %s -> %d %s" % (self.view, st, body[:200]))
                self.write_ms.append((t_ack - t0) * 1e3)
                self.view_ms.append((t_view - t_ack) * 1e3)
            except Exception as e:  # noqa: BLE001
                self.errors.append(str(e)[:300])
                cl.c.close()
            self.stop_ev.wait(self.period)
        cl.c.close()


def dist(values):
    v = sorted(values)
    if not v:
        return None
    return {"n": len(v), "p50": S.percentile(v, 50), "p99": S.percentile(v, 99), "max": v[-1]}


def processors_lag(api):
    c = S.Conn(api)
    try:
        return sum(p["lag"]["changes"] for p in S.processors_status(c))
    finally:
        c.close()


def scrape(metrics_api):
    c = S.Conn(metrics_api, timeout=30)
    try:
        st, _, body = c.get("/metrics")
    finally:
        c.close()
    return S.parse_prometheus(body.decode("utf-8", "replace"))


def counter_sum(m, name, match=None):
    tot = 0.0
    for (n, labels), v in m.items():
        if n == name and (not match or all(dict(labels).get(k) == x for k, x in match.items())):
            tot += v
    return tot


def cmd_wrk(args):
    ks_users = S.n_users(args.sf)
    tag = "%x" % random.SystemRandom().getrandbits(32)
    url = "http://%s" % args.api
    cmd = ["wrk", "-t%d" % args.threads, "-c%d" % args.conns, "-d%ds" % args.seconds, "--latency",
           "-s", os.path.join(HERE, "scenario.lua"), url, "--",
           args.mix, args.keys or "-", str(ks_users), str(args.delay_ms), tag]
    roots = [os.getpid()] + ([args.pid] if args.pid else [])
    if args.wait_idle:
        S.wait_idle(roots, args.wait_idle)
    sampler = None
    probes = []
    m0 = scrape(args.metrics) if args.metrics else None
    fb0 = durable_fallbacks(args.api) if args.watch else None
    if args.watch:
        sampler = LagSampler(args.api)
        ks = S.KeySpace(args.sf, args.seed)
        probes = [Probe(args.api, ks, tag, "users"), Probe(args.api, ks, tag, "feed")]
        sampler.start()
        for pr in probes:
            pr.start()
    with S.CpuWatch(roots) as cpu:
        t0 = time.monotonic()
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        t1 = time.monotonic()
    drain_s = None
    if args.watch:
        for pr in probes:
            pr.stop_ev.set()
        for pr in probes:
            pr.join(120)
        # drain: until every processor has applied the head
        while True:
            if processors_lag(args.api) == 0:
                drain_s = time.monotonic() - t1
                break
            if time.monotonic() - t1 > args.drain_timeout:
                drain_s = float("inf")
                break
            time.sleep(0.05)
        sampler.stop_ev.set()
        sampler.join(10)
        fb1 = durable_fallbacks(args.api)
        publish_catchup_s, end_publish_lag = publish_catchup(args.api)
    m1 = scrape(args.metrics) if args.metrics else None
    if p.returncode != 0:
        sys.exit("wrk failed:\n" + p.stdout)
    r = parse_wrk(p.stdout)
    r.update({"mix": args.mix, "threads": args.threads, "conns": args.conns, "seconds": args.seconds,
              "delay_ms": args.delay_ms, "cmd": " ".join(cmd), "cpu_mine": round(cpu.mine, 2),
              "cpu_bg": round(cpu.bg, 2), "wall_s": round(t1 - t0, 2)})
    if m0 is not None and m1 is not None:
        per = {}
        names = sorted({dict(l).get("processor") for (n, l) in m1
                        if n == "feedd_processor_commit_to_view_seconds_bucket"} - {None})
        tot_b = None
        for name in names:
            b = S.histogram_diff(S.histogram(m1, "feedd_processor_commit_to_view_seconds", {"processor": name}),
                                 S.histogram(m0, "feedd_processor_commit_to_view_seconds", {"processor": name}))
            per[name] = {"n": b[-1][1] if b else 0, "p50_ms": _q(b, 0.5), "p99_ms": _q(b, 0.99)}
            tot_b = b if tot_b is None else [(le, c + tot_b[i][1]) for i, (le, c) in enumerate(b)]
        r["commit_to_view"] = {"per_processor": per,
                               "all": {"n": tot_b[-1][1] if tot_b else 0, "p50_ms": _q(tot_b, 0.5),
                                       "p99_ms": _q(tot_b, 0.99)}}
        r["storage_write_requests"] = (counter_sum(m1, "feedd_storage_write_requests_total", {"outcome": "committed"})
                                       - counter_sum(m0, "feedd_storage_write_requests_total", {"outcome": "committed"}))
        r["storage_writes"] = (counter_sum(m1, "feedd_storage_writes_total")
                               - counter_sum(m0, "feedd_storage_writes_total"))
        r["view_writes"] = (counter_sum(m1, "feedd_processor_view_writes_total")
                            - counter_sum(m0, "feedd_processor_view_writes_total"))
    if args.watch:
        lag_s, lag_c, per_max = [], [], {}
        for t, d in sampler.samples:
            if "error" in d or t > t1:
                continue
            lag_s.append(max(v[1] for v in d.values()))
            lag_c.append(sum(v[0] for v in d.values()))
            for k, v in d.items():
                per_max[k] = max(per_max.get(k, 0.0), v[1])
        r["lag_seconds_samples"] = dist([x * 1e3 for x in lag_s])   # in ms
        r["lag_changes_samples"] = dist(lag_c)
        r["lag_seconds_max_per_processor"] = per_max
        r["lag_changes_at_end"] = lag_c[-1] if lag_c else None
        r["drain_s"] = drain_s
        r["from_durable_feed"] = {k: fb1.get(k, 0) - fb0.get(k, 0) for k in fb1}
        pl = [x for t, x in sampler.publish_lag if x is not None and t <= t1]
        r["publish_lag_max"] = max(pl) if pl else None
        r["publish_lag_after_drain"] = end_publish_lag
        r["publish_catchup_s"] = publish_catchup_s
        errors = probes[0].errors + probes[1].errors
        r["probe"] = {"write_ms": dist(probes[0].write_ms + probes[1].write_ms),
                      "users_view_ms": dist(probes[0].view_ms), "feed_view_ms": dist(probes[1].view_ms),
                      "errors": errors[:5], "n_errors": len(errors)}
    line = ("  wrk %-7s c=%-3d delay=%-3d %8.0f req/s  p50 %7.2f  p99 %7.2f  max %8.2f ms  non2xx %d  "
            "cpu %.2f bg %.2f" % (args.mix, args.conns, args.delay_ms, r["req_per_s"] or 0, r.get("p50_ms") or 0,
                                  r.get("p99_ms") or 0, r.get("max_ms") or 0, r["non_2xx"], r["cpu_mine"], r["cpu_bg"]))
    if "commit_to_view" in r and r["commit_to_view"]["all"]["n"]:
        line += "\n      commit->view (metrics) p50 %.2f p99 %.2f ms" % (
            r["commit_to_view"]["all"]["p50_ms"], r["commit_to_view"]["all"]["p99_ms"])
    if args.watch:
        pr = r["probe"]
        ls = r["lag_seconds_samples"]
        line += "; lag.seconds samples p50 %s p99 %s ms; drain %.2f s" % (
            _f(ls and ls["p50"]), _f(ls and ls["p99"]), drain_s)
        line += "\n      taken from the durable feed: %s; publish lag max %s, after drain %s" % (
            r["from_durable_feed"], r["publish_lag_max"], r["publish_lag_after_drain"])
        if pr["users_view_ms"]:
            fv = pr["feed_view_ms"] or {"p50": None, "p99": None, "n": 0}
            line += "\n      probe: write p50 %.2f p99 %.2f; visible in users p50 %.2f p99 %.2f (n=%d); in feed p50 %s p99 %s ms (n=%d); errors %d" % (
                pr["write_ms"]["p50"], pr["write_ms"]["p99"], pr["users_view_ms"]["p50"],
                pr["users_view_ms"]["p99"], pr["users_view_ms"]["n"], _f(fv["p50"]), _f(fv["p99"]),
                fv["n"], pr["n_errors"])
    print(line, flush=True)
    with open(args.out, "w") as f:
        json.dump(r, f, indent=1)


def _q(b, qv):
    v = S.histogram_quantile(b, qv) if b else None
    return v * 1e3 if v is not None else None


def _f(x):
    return "%.1f" % x if x is not None else "-"


def cmd_probe(args):
    """Read-your-writes for one writer on an otherwise idle daemon: one
    Probe at a time, per view, for `seconds`."""
    ks = S.KeySpace(args.sf, args.seed)
    tag = "%x" % random.SystemRandom().getrandbits(32)
    r = {}
    for view in ("users", "feed"):
        pr = Probe(args.api, ks, tag, view, period=args.period)
        pr.start()
        time.sleep(args.seconds)
        pr.stop_ev.set()
        pr.join(120)
        r[view] = {"write_ms": dist(pr.write_ms), "view_ms": dist(pr.view_ms),
                   "n_errors": len(pr.errors), "errors": pr.errors[:5]}
        v = r[view]["view_ms"] or {"p50": None, "p99": None, "n": 0}
        print("  probe %-5s one writer: write p50 %s; visible p50 %s p99 %s ms (n=%d); errors %d" % (
            view, _f((r[view]["write_ms"] or {}).get("p50")), _f(v["p50"]), _f(v["p99"]), v["n"],
            r[view]["n_errors"]), flush=True)
    with open(args.out, "w") as f:
        json.dump(r, f, indent=1)


def cmd_settle(args):
    s = S.settle(args.api, args.metrics, timeout=args.timeout, want_compaction=bool(args.metrics))
    print("  settled in %.1f s" % s, flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)

    a = sub.add_parser("latency")
    a.add_argument("--api", required=True)
    a.add_argument("--mode", choices=["v1", "v3"], required=True)
    a.add_argument("--sf", type=float, required=True)
    a.add_argument("--seed", type=int, default=42)
    a.add_argument("--samples", type=int, default=1000, help="per request (after 20 warm-up ones)")
    a.add_argument("--min-samples", type=int, default=5)
    a.add_argument("--max-seconds", type=float, default=15.0, help="per request, once min-samples are in")
    a.add_argument("--pid", type=int, help="daemon pid (CPU accounting)")
    a.add_argument("--wait-idle", type=float, default=0.0, help="wait up to S s for a quiet box first")
    a.add_argument("--out", required=True)

    k = sub.add_parser("keys")
    k.add_argument("--sf", type=float, required=True)
    k.add_argument("--seed", type=int, default=42)
    k.add_argument("--n", type=int, default=20000)
    k.add_argument("--out", required=True)

    w = sub.add_parser("wrk")
    w.add_argument("--api", required=True)
    w.add_argument("--metrics")
    w.add_argument("--mix", required=True)
    w.add_argument("--keys")
    w.add_argument("--sf", type=float, required=True)
    w.add_argument("--seed", type=int, default=42)
    w.add_argument("--threads", type=int, default=2)
    w.add_argument("--conns", type=int, default=8)
    w.add_argument("--seconds", type=int, default=20)
    w.add_argument("--delay-ms", type=int, default=0)
    w.add_argument("--watch", action="store_true", help="sample processor lag, probe, drain")
    w.add_argument("--drain-timeout", type=float, default=300)
    w.add_argument("--pid", type=int)
    w.add_argument("--wait-idle", type=float, default=0.0)
    w.add_argument("--out", required=True)

    p = sub.add_parser("probe")
    p.add_argument("--api", required=True)
    p.add_argument("--sf", type=float, required=True)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--period", type=float, default=0.01, help="pause between probes, s")
    p.add_argument("--out", required=True)

    s = sub.add_parser("settle")
    s.add_argument("--api", required=True)
    s.add_argument("--metrics")
    s.add_argument("--timeout", type=float, default=600)

    args = ap.parse_args()
    {"latency": cmd_latency, "keys": cmd_keys, "wrk": cmd_wrk, "probe": cmd_probe,
     "settle": cmd_settle}[args.cmd](args)


if __name__ == "__main__":
    main()
