"""Processors end to end: the scenario's V3 views, kept by the real daemon.

A generated blog (users, posts, comments and likes through the batch recipe,
renames raced against the creation of the renamed users' posts, post edits,
deletes including posts of the top 100) is written over HTTP by several
threads at once. Once every processor has applied the head of the change feed
(and stays there), the views are judged two ways:

  * the daemon's own check: POST /v1/processors/{name}/verify (and
    `feedctl verify` when $FEEDCTL_BIN names the binary);
  * this test's: the source data is read back, checked against the generator's
    model, and the expected views are recomputed from it - Q1 user, Q2 post
    with current userUsername and exact counts, Q3 the user's posts in
    `users` (single partition, short form, _sourceLsn), Q4/Q5 comments and
    likes with current usernames, Q6 exactly the top 100 of `feed`; no stray,
    missing or duplicate copy anywhere.

Variants: the default views (no configuration: the built-in configs/feedd.conf)
and the same views declared in the configuration (--config configs/feedd.conf;
in the daemon, processors take changes in-process from the commit path and
the durable feed); SIGKILL 3-4 times during the writes (storage.sync=true) with restarts on
the same data directory, unanswered writes sent again (a create or batch that
had been applied answers 409: counted once); every view rebuilt while writes
go on; processors disabled for a first batch of writes, then enabled (the
views are derived on start).
Read-your-writes (X-Feedd-Min-Lsn) is checked right after renames and post
creation, and X-Feedd-Wait-Ms: 1 against an unreachable LSN must be 504.

FEEDD_PROC_SEED=<n> repeats the generated data; FEEDD_PROC_SCALE=<f> scales it.
"""

import collections
import http.client
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request

from feedd_harness import (SCENARIO_CONFIG, FeeddDaemon, FeeddTestCase, feedd_binary, item_path,
                           query_path, strip_system)

PROCESSORS = ("feed", "user_posts", "usernames")
FEED_CAP = 100
TRUNCATE_CHARS = 200
PK_FIELD = {"users": "userId", "posts": "postId", "feed": "type"}
CONNECTION_ERRORS = (OSError, http.client.HTTPException)
WRITER_THREADS = 4
QUIESCE_TIMEOUT_S = 120.0
QUIESCE_STABLE_S = 0.6
RESTART_TIMEOUT_S = 60.0

OVERRIDE = {"X-Feedd-Override": "derived"}  # docs/api.md, "Derived items"
SEED = int(os.environ.get("FEEDD_PROC_SEED") or random.SystemRandom().randrange(1 << 30))
SCALE = float(os.environ.get("FEEDD_PROC_SCALE") or "1")

def declared_views_args():
    """The same views declared: configs/feedd.conf given as the config file."""
    args = ["--config=" + SCENARIO_CONFIG]
    args += ["--processor.%s.source=local" % name for name in PROCESSORS]
    return args


def log(msg):
    sys.stderr.write("[processors %s] %s\n" % (time.strftime("%H:%M:%S"), msg))
    sys.stderr.flush()


BASE_MS = 1_700_000_000_000


def iso(ms):
    """Fixed-width UTC timestamp: bytewise order is chronological order."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + ".%03dZ" % (ms % 1000)


WORDS = ("feed", "change", "partition", "ñandú", "größe", "漢字", "ελληνικά", "café",
         "naïve", "blog", "post", "😀", "𝄞", "résumé", "🚀", "data")


def text(rng, chars):
    """About `chars` code points, with multi-byte and non-BMP characters."""
    out = []
    n = 0
    while n < chars:
        w = rng.choice(WORDS)
        out.append(w)
        n += len(w) + 1
    return " ".join(out)[:chars]


def post_content(rng):
    r = rng.random()
    if r < 0.35:
        return text(rng, rng.randint(10, 150))
    if r < 0.5:
        # Non-BMP characters exactly at the cut: 198 ASCII, then emoji.
        return "a" * 198 + "😀🚀𝄞" + text(rng, 40)
    if r < 0.6:
        return "ü" * 199 + "漢字" + "tail"
    if r < 0.7:
        return "x" * TRUNCATE_CHARS  # exactly at the limit: not cut
    return text(rng, rng.randint(201, 400))


# ---------------------------------------------------------------- the model

class Model:
    """What the source data must be once every planned write is done."""

    def __init__(self):
        self.usernames = {}                          # user id -> username
        self.posts = {}                              # live post id -> body
        self.deleted = set()                         # deleted post ids
        self.comments = collections.defaultdict(dict)  # post id -> {id: body}
        self.likes = collections.defaultdict(dict)     # post id -> {id: body}


class Op:
    __slots__ = ("key", "kind", "args")

    def __init__(self, key, kind, args):
        self.key = key
        self.kind = kind
        self.args = args

    def __repr__(self):
        return "Op(%s %r)" % (self.kind, self.args)


class BlogPlan:
    """A generated blog: per-thread op lists (each entity's ops in one thread,
    in order) and the model they end in. Op keys are in [0, 1): ops are run
    in key order per thread, and a key threshold splits the plan in phases."""

    def __init__(self, rng, threads=WRITER_THREADS, users=300, posts=800, comments=1200,
                 likes=1200, renames=160, edits=250, deletes_top=12, deletes_other=25,
                 hot_users=8, hot_posts_each=15, late_users=10, hot_renames=4):
        s = SCALE
        users, posts, comments, likes = (int(users * s), int(posts * s), int(comments * s),
                                         int(likes * s))
        renames, edits = int(renames * s), int(edits * s)
        self.rng = rng
        self.model = Model()
        self.threads = threads
        self.user_creates = [[] for _ in range(threads)]  # phase 0: created before anything
        self.ops = [[] for _ in range(threads)]
        m = self.model

        user_ids = ["u%04d" % i for i in range(users)]
        self.hot = user_ids[:hot_users]
        self.late = user_ids[-late_users:]
        for u in user_ids:
            m.usernames[u] = "%s-v0-ñ" % u

        def user_thread(u):
            return int(u[1:]) % threads

        def post_thread(p):
            return int(p[1:]) % threads

        # Users: created up front, except the late ones, whose creation races
        # with the creation of their posts (which come early too).
        for u in user_ids:
            body = {"id": u, "userId": u, "type": "user", "username": m.usernames[u]}
            if u in self.late:
                self.ops[user_thread(u)].append(Op(rng.random() * 0.05, "user_create", body))
            else:
                self.user_creates[user_thread(u)].append(Op(0.0, "user_create", body))

        # Renames: the hot users' early (raced against their posts'
        # creation), the others anywhere. One thread owns a user's renames,
        # so the last one in key order is the final username.
        for u in self.hot:
            keys = sorted(rng.random() * 0.15 for _ in range(hot_renames))
            for k in keys:
                self._rename(u, k, user_thread(u))
        for _ in range(renames):
            u = rng.choice(user_ids)
            lo = 0.05 if u in self.late else 0.0
            self._rename(u, lo + rng.random() * (1 - lo), user_thread(u))
        for t in range(threads):  # renames of one user: in the order of their keys
            self._fix_rename_order(t)

        # Posts: dates in chronological order with ties (random pairs, a
        # block at the top-100 boundary as it will be after the deletes, and
        # the 3 newest), ids a random permutation of the chronological order.
        n = posts
        dates = []
        ms = BASE_MS
        for j in range(n):
            if j > 0 and rng.random() < 0.08:
                dates.append(dates[-1])
            else:
                ms += rng.randint(1, 5000)
                dates.append(ms)
        top_candidates = list(range(n - FEED_CAP, n))
        deleted_top = set(rng.sample(top_candidates, deletes_top))
        boundary = n - FEED_CAP - deletes_top  # chronological index of the live rank 100
        others = list(range(0, boundary - 12))
        deleted_other = set(rng.sample(others, deletes_other))
        for j in range(boundary - 4, boundary + 5):
            dates[j] = dates[boundary - 4]
        for j in range(n - 3, n):
            dates[j] = dates[n - 3]
        for j in range(1, n):
            assert dates[j] >= dates[j - 1]
        post_ids = ["p%04d" % i for i in range(n)]
        rng.shuffle(post_ids)

        authors = []
        for u in self.hot:
            authors += [u] * hot_posts_each
        for u in self.late:
            authors += [u] * 2
        while len(authors) < n:
            authors.append(rng.choice(user_ids))
        authors = authors[:n]
        rng.shuffle(authors)
        early_authors = set(self.hot) | set(self.late)

        per_post = {}
        weights = []
        for j in range(n):
            p = post_ids[j]
            author = authors[j]
            body = {"id": p, "postId": p, "type": "post", "userId": author,
                    "title": "%s by %s" % (p, author), "content": post_content(rng),
                    "creationDate": iso(dates[j]), "commentCount": 0, "likeCount": 0}
            per_post[p] = {"create": body, "middle": [], "delete": j in deleted_top or
                           j in deleted_other, "date": dates[j]}
            weights.append(rng.random() ** 3)  # a few posts get most comments and likes
        for kind, count in (("comment", comments), ("like", likes)):
            for i in range(count):
                p = rng.choices(post_ids, weights=weights)[0]
                u = rng.choice(user_ids)
                cid = "%s%05d" % ("c" if kind == "comment" else "l", i)
                date = iso(per_post[p]["date"] + rng.randint(1, 10_000_000))
                body = {"id": cid, "postId": p, "type": kind, "userId": u, "creationDate": date}
                if kind == "comment":
                    body["content"] = text(rng, rng.randint(5, 80))
                per_post[p]["middle"].append((kind, body))
        for i in range(edits):
            p = rng.choice(post_ids)
            per_post[p]["middle"].append(
                ("edit", {"title": "edited %d %s" % (i, text(rng, 12)),
                          "content": post_content(rng)}))

        for p, spec in per_post.items():
            t = post_thread(p)
            if spec["create"]["userId"] in early_authors:
                k0 = rng.random() * 0.1
            else:
                k0 = rng.random() * 0.6
            rng.shuffle(spec["middle"])
            keys = sorted(k0 + rng.random() * (1 - k0) for _ in range(len(spec["middle"]) + 1))
            self.ops[t].append(Op(k0, "post_create", spec["create"]))
            body = dict(spec["create"])
            for (kind, args), k in zip(spec["middle"], keys):
                if kind == "edit":
                    self.ops[t].append(Op(k, "edit", (p, args["title"], args["content"])))
                    body["title"], body["content"] = args["title"], args["content"]
                else:
                    self.ops[t].append(Op(k, kind, (p, args)))
                    (m.comments if kind == "comment" else m.likes)[p][args["id"]] = args
            if spec["delete"]:
                self.ops[t].append(Op(keys[-1], "delete", p))  # the largest key, < 1
                m.deleted.add(p)
            else:
                body.pop("commentCount")
                body.pop("likeCount")
                m.posts[p] = body
        for ops in self.ops:
            ops.sort(key=lambda op: op.key)
        self.deleted_top = {post_ids[j] for j in deleted_top}

    def _rename(self, u, key, thread):
        self.ops[thread].append(Op(key, "rename", [u, None, self.rng.random() < 0.5]))

    def _fix_rename_order(self, t):
        # Names are given in key order, so the final name is the last key's.
        renames = sorted((op for op in self.ops[t] if op.kind == "rename"), key=lambda op: op.key)
        count = collections.Counter()
        for op in renames:
            u = op.args[0]
            count[u] += 1
            op.args[1] = "%s-v%d-%s" % (u, count[u], self.rng.choice(("é", "名前", "🙂", "x")))
            self.model.usernames[u] = op.args[1]

    def phase(self, lo, hi):
        """Per-thread ops with lo <= key < hi."""
        return [[op for op in ops if lo <= op.key < hi] for ops in self.ops]

    def total_ops(self):
        return sum(len(o) for o in self.ops) + sum(len(o) for o in self.user_creates)


# ---------------------------------------------------------------- writers

class DaemonControl:
    """Hands clients to writer threads; a crash bumps the generation."""

    def __init__(self, daemon):
        self.daemon = daemon
        self.cond = threading.Condition()
        self.generation = 0
        self.down = False

    def client(self):
        with self.cond:
            if not self.cond.wait_for(lambda: not self.down, timeout=RESTART_TIMEOUT_S):
                raise AssertionError("the daemon did not come back")
            return self.generation, self.daemon.client()

    def wait_newer(self, generation):
        with self.cond:
            if not self.cond.wait_for(lambda: self.generation > generation and not self.down,
                                      timeout=RESTART_TIMEOUT_S):
                raise AssertionError("connection lost to the daemon, and it was not restarted")

    def crash_and_restart(self):
        with self.cond:
            self.down = True
        self.daemon.kill()
        try:
            self.daemon.start()
        finally:
            with self.cond:
                self.generation += 1
                self.down = False
                self.cond.notify_all()


class Writers:
    """Runs per-thread op lists concurrently; records every unexpected answer.

    With crashes=True a connection error means the daemon was killed: the op
    is sent again once it is back, and an answer showing that the first
    attempt was applied (409 for a create, 404 for a delete) is accepted."""

    def __init__(self, control, crashes=False):
        self.control = control
        self.crashes = crashes
        self.lock = threading.Lock()
        self.done = 0
        self.retried = 0
        self.retried_applied = 0
        self.errors = []

    def run(self, op_lists, name="writer"):
        threads = [threading.Thread(target=self._worker, args=(ops,), name="%s-%d" % (name, i),
                                    daemon=True)
                   for i, ops in enumerate(op_lists) if ops]
        for t in threads:
            t.start()
        return threads

    def _worker(self, ops):
        generation, client = None, None
        try:
            for op in ops:
                retry = False
                while True:
                    if client is None:
                        generation, client = self.control.client()
                    try:
                        resp = execute(client, op)
                    except CONNECTION_ERRORS as e:
                        client.close()
                        client = None
                        if not self.crashes:
                            self._error("%r: connection error %r" % (op, e))
                            return
                        self.control.wait_newer(generation)
                        retry = True
                        continue
                    self._check(op, resp, retry)
                    break
        except Exception as e:  # noqa: BLE001 - reported by the test
            self._error("writer thread died: %r" % (e,))
        finally:
            if client is not None:
                client.close()

    def _error(self, msg):
        with self.lock:
            self.errors.append(msg)

    def _check(self, op, resp, retry):
        status, _, body = resp
        expected = EXPECTED_STATUS[op.kind]
        ok = status == expected
        applied_before = False
        if not ok and retry:
            if op.kind in ("user_create", "post_create") and status == 409:
                ok = applied_before = True
            elif op.kind in ("comment", "like") and status == 409 and isinstance(body, dict) \
                    and body.get("failedIndex") == 0:
                ok = applied_before = True
            elif op.kind == "delete" and status == 404:
                ok = applied_before = True
        if ok and status == expected and op.kind in ("comment", "like"):
            results = body.get("results") if isinstance(body, dict) else None
            if not (isinstance(results, list) and [r.get("status") for r in results] == [201, 200]):
                ok = False
        with self.lock:
            if retry:
                self.retried += 1
                self.retried_applied += applied_before
            if not ok:
                self.errors.append("%r%s: expected HTTP %d, got %d %r"
                                   % (op, " (sent again after a crash)" if retry else "",
                                      expected, status, body))
            self.done += 1


EXPECTED_STATUS = {"user_create": 201, "rename": 200, "post_create": 201, "comment": 200,
                   "like": 200, "edit": 200, "delete": 204}


def execute(client, op):
    if op.kind in ("user_create", "post_create"):
        container = "users" if op.kind == "user_create" else "posts"
        return client.create(container, op.args)
    if op.kind == "rename":
        u, name, use_put = op.args
        if use_put:  # C1 "edit a user" as a whole-document replace
            return client.upsert("users", u, u, {"id": u, "userId": u, "type": "user",
                                                 "username": name})
        return client.patch("users", u, u, [{"op": "set", "path": "/username", "value": name}])
    if op.kind in ("comment", "like"):
        p, body = op.args
        field = "/commentCount" if op.kind == "comment" else "/likeCount"
        return client.batch("posts", p, [
            {"op": "create", "body": body},
            {"op": "patch", "id": p, "operations": [{"op": "incr", "path": field, "value": 1}]}])
    if op.kind == "edit":
        p, title, content = op.args
        return client.patch("posts", p, p, [{"op": "set", "path": "/title", "value": title},
                                            {"op": "set", "path": "/content", "value": content}])
    if op.kind == "delete":
        return client.delete("posts", op.args, op.args)
    raise ValueError(op.kind)


# ---------------------------------------------------------------- checks

def short_form(item):
    s = strip_system(item)
    if isinstance(s.get("content"), str):
        s["content"] = s["content"][:TRUNCATE_CHARS]  # code points
    return s


def rank_key(item):
    """feed order: creationDate, then id (both compared bytewise), highest first."""
    return (item["creationDate"].encode(), item["id"].encode())


class Problems:
    def __init__(self):
        self.by_kind = collections.OrderedDict()

    def add(self, kind, msg):
        self.by_kind.setdefault(kind, []).append(msg)

    def __bool__(self):
        return bool(self.by_kind)

    def report(self, examples=5):
        lines = []
        for kind, msgs in self.by_kind.items():
            lines.append("%s: %d problem(s)" % (kind, len(msgs)))
            for m in msgs[:examples]:
                lines.append("    " + (m if len(m) < 1500 else m[:1500] + "..."))
        return "\n".join(lines)


def scan(client, container, spec=None):
    """Every item of a query, through its continuations; a repeated item fails."""
    spec = dict(spec or {})
    spec["limit"] = 1000
    spec["continuation"] = None
    out = []
    seen = set()
    for _ in range(100000):
        status, _, body = client.query(container, spec)
        if status != 200:
            raise AssertionError("POST %s %r -> %d %r" % (query_path(container), spec, status,
                                                            body))
        for item in body["items"]:
            key = (item.get(PK_FIELD[container]), item.get("id"))
            if key in seen:
                raise AssertionError("query %s %r returned %r twice" % (container, spec, key))
            seen.add(key)
            out.append(item)
        if body.get("continuation") is None:
            return out
        spec["continuation"] = body["continuation"]
    raise AssertionError("query %s %r: continuations never end" % (container, spec))


def processors_status(client):
    status, _, body = client.request("GET", "/v1/processors")
    if status != 200 or not isinstance(body, dict) or not isinstance(body.get("processors"), list):
        raise AssertionError("GET /v1/processors -> %d %r" % (status, body))
    return {p["name"]: p for p in body["processors"]}


def wait_views_quiescent(test, client, source=None, timeout_s=QUIESCE_TIMEOUT_S):
    """Waits until every processor's appliedLsn equals the head LSN and both
    stay put for QUIESCE_STABLE_S. Fails at once on a parked change."""
    start = time.monotonic()
    deadline = start + timeout_s
    stable_head, since = None, None
    last_head, head_moved = None, start
    while True:
        procs = processors_status(client)
        head = client.head_lsn()  # read after: every appliedLsn must be <= it
        if head != last_head:
            last_head, head_moved = head, time.monotonic()
        test.assertEqual(sorted(procs), sorted(PROCESSORS), "GET /v1/processors: %r" % procs)
        for name, p in procs.items():
            if source is not None:
                test.assertEqual(p.get("source"), source, "processor %s: %r" % (name, p))
            if p.get("parked"):
                _, _, parked = client.request("GET", "/v1/processors/%s/parked" % name)
                test.fail("processor %s parked changes: status %r, parked %r" % (name, p, parked))
            test.assertNotIn(p.get("state"), ("stopped",), "processor %s: %r" % (name, p))
        caught_up = all(p["appliedLsn"] == head for p in procs.values())
        for name, p in procs.items():
            test.assertLessEqual(p["appliedLsn"], head,
                                 "processor %s applied past the head %d: %r" % (name, head, p))
        now = time.monotonic()
        if caught_up and head == stable_head:
            if now - since >= QUIESCE_STABLE_S:
                for name, p in procs.items():  # the status agrees with itself
                    test.assertEqual((p.get("state"), p["lag"].get("changes"),
                                      p["lag"].get("pending")), ("running", 0, 0),
                                     "processor %s caught up with head %d: %r" % (name, head, p))
                return head, procs, now - start
        elif caught_up:
            stable_head, since = head, now
        else:
            stable_head = None
        if now > deadline:
            stuck = []
            for name, p in sorted(procs.items()):
                if p["appliedLsn"] < head:
                    status, _, body = client.changefeed(None, p["appliedLsn"] + 1, limit=2)
                    stuck.append("%s stays at appliedLsn %d; the next changes of the feed: %s"
                                 % (name, p["appliedLsn"], body if status == 200 else status))
            test.fail("processors not caught up with head %d after %.0f s (and no change was "
                      "written for the last %.0f s):\n  %s\nstatus: %r"
                      % (head, timeout_s, now - head_moved, "\n  ".join(stuck), procs))
        time.sleep(0.05)


def verify_all(test, daemon, client, what):
    for name in PROCESSORS:
        status, _, body = client.request("POST", "/v1/processors/%s/verify?wait=true" % name, {})
        test.assertEqual(status, 200, "%s: POST /v1/processors/%s/verify -> %d %r"
                         % (what, name, status, body))
        test.assertIs(body.get("ok"), True, "%s: verify %s: %r" % (what, name, body))
        test.assertEqual(body.get("differences"), [], "%s: verify %s: %r" % (what, name, body))
    feedctl = os.environ.get("FEEDCTL_BIN")
    if feedctl:
        r = subprocess.run([feedctl, "--api", "%s:%d" % (daemon.host, daemon.port), "verify"],
                           capture_output=True, text=True, timeout=120)
        test.assertEqual(r.returncode, 0, "%s: feedctl verify exited %d\nstdout:\n%s\nstderr:\n%s"
                         % (what, r.returncode, r.stdout[-4000:], r.stderr[-4000:]))


def check_views(test, client, model, what):
    """Reads the source data back, checks it against the model, recomputes
    every view from it and compares with the daemon's (Q1-Q6)."""
    t0 = time.monotonic()
    problems = Problems()
    users_items = scan(client, "users")
    posts_items = scan(client, "posts")
    feed_items = scan(client, "feed")

    # ---- the source data, against the model
    users = {}
    copies = {}
    for it in users_items:
        if it.get("type") == "user":
            users[it["id"]] = it
            if it.get("userId") != it["id"]:
                problems.add("source users", "user %r" % it)
        elif it.get("type") == "post":
            copies[(it["userId"], it["id"])] = it
        else:
            problems.add("users container", "unexpected item %r" % it)
    test.assertEqual(sorted(users), sorted(model.usernames), "%s: the set of users" % what)
    for u, name in model.usernames.items():
        if users[u].get("username") != name:
            problems.add("source users", "user %s: username %r, expected %r (last rename)"
                         % (u, users[u].get("username"), name))
    posts = {}
    comments = collections.defaultdict(dict)
    likes = collections.defaultdict(dict)
    for it in posts_items:
        kind = it.get("type")
        if kind == "post":
            posts[it["id"]] = it
        elif kind == "comment":
            comments[it["postId"]][it["id"]] = it
        elif kind == "like":
            likes[it["postId"]][it["id"]] = it
        else:
            problems.add("posts container", "unexpected item %r" % it)
    if set(posts) != set(model.posts):
        problems.add("source posts", "missing %s, unexpected %s"
                     % (sorted(set(model.posts) - set(posts))[:20],
                        sorted(set(posts) - set(model.posts))[:20]))
    for p, body in model.posts.items():
        if p in posts:
            got = {k: posts[p].get(k) for k in body}
            if got != body:
                problems.add("source posts", "post %s is %r, expected %r" % (p, got, body))
    for label, got_map, want_map in (("comments", comments, model.comments),
                                     ("likes", likes, model.likes)):
        for p in set(got_map) | set(want_map):
            got_ids, want_ids = set(got_map.get(p, {})), set(want_map.get(p, {}))
            if got_ids != want_ids:
                problems.add("source " + label, "post %s: missing %s, unexpected %s"
                             % (p, sorted(want_ids - got_ids)[:10],
                                sorted(got_ids - want_ids)[:10]))

    def username(u):
        return users[u]["username"] if u in users else None

    # ---- Q1: read a user
    for u, name in model.usernames.items():
        status, _, body = client.read("users", u, u)
        want = {"id": u, "userId": u, "type": "user", "username": name}
        if status != 200 or strip_system(body) != want:
            problems.add("Q1 read user", "GET %s -> %d %r, expected %r"
                         % (item_path("users", u, u), status, body, want))

    # ---- Q2: read a post, with author username and counts
    for p in sorted(model.posts):
        status, _, body = client.read("posts", p, p)
        want = dict(model.posts[p])
        want["userUsername"] = username(want["userId"])
        want["commentCount"] = len(model.comments.get(p, {}))
        want["likeCount"] = len(model.likes.get(p, {}))
        if status != 200 or strip_system(body) != want:
            got = strip_system(body) if isinstance(body, dict) else body
            diff = {k: (got.get(k), want.get(k)) for k in set(got or {}) | set(want)
                    if (got or {}).get(k) != want.get(k)} if isinstance(got, dict) else None
            problems.add("Q2 read post", "GET %s -> %d, differences (got, expected): %r"
                         % (item_path("posts", p, p), status, diff))
        # The counts also equal the items in the post's partition.
        if isinstance(body, dict) and (body.get("commentCount") != len(comments.get(p, {})) or
                                       body.get("likeCount") != len(likes.get(p, {}))):
            problems.add("counts vs items", "post %s: commentCount %r for %d comment items, "
                         "likeCount %r for %d like items" % (p, body.get("commentCount"),
                                                            len(comments.get(p, {})),
                                                            body.get("likeCount"),
                                                            len(likes.get(p, {}))))
    for p in sorted(model.deleted):
        status, _, body = client.read("posts", p, p)
        if status != 404:
            problems.add("deleted post", "GET %s -> %d %r, expected 404"
                         % (item_path("posts", p, p), status, body))

    # ---- userUsername on every item of posts (posts, comments, likes, orphans too)
    for it in posts_items:
        if it.get("type") in ("post", "comment", "like"):
            want = username(it["userId"])
            if it.get("userUsername") != want:
                problems.add("userUsername", "%s %s/%s by %s: userUsername %r, expected %r"
                             % (it["type"], it["postId"], it["id"], it["userId"],
                                it.get("userUsername"), want))

    # ---- copies of posts in users: exactly one per live post, where it belongs
    want_keys = {(b["userId"], p) for p, b in posts.items()}
    got_keys = set(copies)
    if got_keys != want_keys:
        problems.add("users copies", "missing %s, stray %s" % (sorted(want_keys - got_keys)[:20],
                                                                sorted(got_keys - want_keys)[:20]))
    by_id = collections.Counter(k[1] for k in got_keys)
    dups = [p for p, n in by_id.items() if n > 1]
    if dups:
        problems.add("users copies", "posts copied more than once: %s" % sorted(dups)[:20])

    def check_copy(kind, copy, source):
        want = short_form(source)
        if strip_system(copy) != want:
            got = strip_system(copy)
            diff = {k: (got.get(k), want.get(k)) for k in set(got) | set(want)
                    if got.get(k) != want.get(k)}
            problems.add(kind, "copy of %s differs (got, expected): %r" % (source["id"], diff))
        if copy.get("_sourceLsn") != source.get("_lsn"):
            problems.add(kind, "copy of %s: _sourceLsn %r, the post's _lsn is %r"
                         % (source["id"], copy.get("_sourceLsn"), source.get("_lsn")))

    # ---- Q3: a user's posts, short form, one partition
    by_user = collections.defaultdict(list)
    for p, b in posts.items():
        by_user[b["userId"]].append(b)
    for u in sorted(model.usernames):
        spec = {"partitionKey": u, "filter": {"type": "post"}, "orderBy": "creationDate",
                "descending": True, "limit": 1000}
        status, _, body = client.query("users", spec)
        if status != 200:
            problems.add("Q3 user posts", "query users %r -> %d %r" % (spec, status, body))
            continue
        want = sorted(by_user.get(u, []), key=rank_key, reverse=True)
        got_ids = [it.get("id") for it in body["items"]]
        want_ids = [b["id"] for b in want]
        if got_ids != want_ids:
            problems.add("Q3 user posts", "user %s: ids %r, expected %r" % (u, got_ids, want_ids))
        else:
            for copy, source in zip(body["items"], want):
                check_copy("Q3 user posts", copy, source)
        if body.get("continuation") is not None:
            problems.add("Q3 user posts", "user %s: continuation %r" % (u, body["continuation"]))
        if body.get("cost", {}).get("partitionsScanned") != 1:
            problems.add("Q3 single partition", "user %s: cost %r" % (u, body.get("cost")))

    # ---- Q4 / Q5: comments and likes of a post, with usernames, one partition
    for p in sorted(model.posts):
        for kind, src, want_map in (("comment", comments, model.comments),
                                    ("like", likes, model.likes)):
            spec = {"partitionKey": p, "filter": {"type": kind}, "orderBy": "creationDate",
                    "limit": 1000}
            status, _, body = client.query("posts", spec)
            label = "Q4 comments" if kind == "comment" else "Q5 likes"
            if status != 200:
                problems.add(label, "query posts %r -> %d %r" % (spec, status, body))
                continue
            want = sorted(src.get(p, {}).values(), key=rank_key)
            got_ids = [it.get("id") for it in body["items"]]
            want_ids = [it["id"] for it in want]
            if got_ids != want_ids or set(got_ids) != set(want_map.get(p, {})):
                problems.add(label, "post %s: %r, expected %r" % (p, got_ids, want_ids))
            for it in body["items"]:
                if it.get("userUsername") != username(it.get("userId")):
                    problems.add(label, "post %s %s %s by %s: userUsername %r, expected %r"
                                 % (p, kind, it.get("id"), it.get("userId"),
                                    it.get("userUsername"), username(it.get("userId"))))
            if body.get("cost", {}).get("partitionsScanned") != 1:
                problems.add(label + " single partition",
                             "post %s: cost %r" % (p, body.get("cost")))

    # ---- Q6: the feed, exactly the top 100
    ranked = sorted(posts.values(), key=rank_key, reverse=True)
    top = ranked[:FEED_CAP]
    spec = {"partitionKey": "post", "orderBy": "creationDate", "descending": True,
            "limit": FEED_CAP}
    status, _, body = client.query("feed", spec)
    if status != 200:
        problems.add("Q6 feed", "query feed %r -> %d %r" % (spec, status, body))
    else:
        got_ids = [it.get("id") for it in body["items"]]
        want_ids = [b["id"] for b in top]
        if got_ids != want_ids:
            problems.add("Q6 feed", "ids (first difference at rank %s)\n      got      %r\n"
                         "      expected %r"
                         % (next((i + 1 for i, (a, b) in enumerate(zip(got_ids, want_ids))
                                  if a != b), min(len(got_ids), len(want_ids)) + 1),
                            got_ids, want_ids))
        else:
            for copy, source in zip(body["items"], top):
                check_copy("Q6 feed", copy, source)
        if body.get("cost", {}).get("partitionsScanned") != 1:
            problems.add("Q6 single partition", "cost %r" % body.get("cost"))
    # The whole feed container: no stray, duplicate or extra item beyond the cap.
    feed_ids = collections.Counter(it.get("id") for it in feed_items)
    if len(feed_items) != len(top) or set(feed_ids) != {b["id"] for b in top} or \
            any(n > 1 for n in feed_ids.values()) or \
            any(it.get("type") != "post" for it in feed_items):
        problems.add("feed container", "holds %d items (%d distinct ids), expected the %d of the "
                     "top; extra %s, duplicated %s"
                     % (len(feed_items), len(feed_ids), len(top),
                        sorted(set(feed_ids) - {b["id"] for b in top})[:20],
                        sorted(i for i, n in feed_ids.items() if n > 1)[:20]))

    log("%s: views checked in %.1f s (%d users, %d posts, %d comments, %d likes)"
        % (what, time.monotonic() - t0, len(users), len(posts),
           sum(len(v) for v in comments.values()), sum(len(v) for v in likes.values())))
    if problems:
        test.fail("%s: the views are wrong\n%s" % (what, problems.report()))
    return posts


# ---------------------------------------------------------------- the test case

class ProcessorsTest(FeeddTestCase):

    def setUp(self):
        self.daemon = None
        self.rng = random.Random("%d-%s" % (SEED, self.id()))
        log("%s: seed %d (FEEDD_PROC_SEED=%d repeats it)" % (self.id(), SEED, SEED))

    def tearDown(self):
        if self.daemon is not None:
            self.daemon.cleanup()

    def start(self, extra_args=(), sync=False):
        self.daemon = FeeddDaemon(extra_args=list(extra_args), sync=sync, name="feedd")
        self.daemon.start()
        return self.daemon

    def run_writers(self, writers, op_lists, crash_at=()):
        """Runs op lists to the end; SIGKILLs and restarts the daemon when the
        number of answered ops reaches each of `crash_at`."""
        t0 = time.monotonic()
        threads = writers.run(op_lists)
        pending = list(crash_at)
        while any(t.is_alive() for t in threads):
            if pending and writers.done >= pending[0]:
                pending.pop(0)
                log("SIGKILL after %d answered ops" % writers.done)
                writers.control.crash_and_restart()
                log("restarted (start #%d)" % self.daemon.starts)
            for t in threads:
                t.join(timeout=0.01)
        self.assertEqual(pending, [], "the writes ended before every planned crash")
        n = sum(len(o) for o in op_lists)
        log("%d ops written in %.1f s (%d sent again after a crash, %d of them had been applied)"
            % (n, time.monotonic() - t0, writers.retried, writers.retried_applied))
        if writers.errors:
            self.fail("%d write(s) failed:\n  %s" % (len(writers.errors),
                                                     "\n  ".join(writers.errors[:15])))

    def write_blog(self, plan, writers, lo=0.0, hi=1.0, crash_at=(), with_users=True):
        if with_users:
            self.run_writers(writers, plan.user_creates)
        self.run_writers(writers, plan.phase(lo, hi), crash_at=crash_at)

    def quiesce_and_check(self, plan, what, source=None):
        client = self.daemon.client()
        head, procs, waited = wait_views_quiescent(self, client, source=source)
        log("%s: quiescent at LSN %d after %.1f s; %s" % (
            what, head, waited, ", ".join("%s applied=%d viewWrites=%d errors=%d fromCommitPath=%d "
                                          "fromDurableFeed=%d"
                                          % (n, p["applied"], p["viewWrites"], p["errors"],
                                             p["fromCommitPath"], p["fromDurableFeed"])
                                          for n, p in sorted(procs.items()))))
        verify_all(self, self.daemon, client, what)
        posts = check_views(self, client, plan.model, what)
        return client, posts

    # ---- 1 / 4: the blog, on the default views and on declared ones

    def blog(self, extra_args, source):
        plan = BlogPlan(self.rng)
        self.start(extra_args)
        log("%d ops planned" % plan.total_ops())
        writers = Writers(DaemonControl(self.daemon))
        self.write_blog(plan, writers)
        client, _ = self.quiesce_and_check(plan, "blog (%s source)" % source, source=source)
        self.read_your_writes(client, plan)
        return plan, client

    def test_blog_default_views(self):
        plan, client = self.blog([], "local")
        self.verify_detects_a_wrong_view(client)
        self.rebuild_during_writes(plan, client)
        self.quiesce_and_check(plan, "after the rebuilds", source="local")

    def test_blog_declared_views(self):
        plan, _ = self.blog(declared_views_args(), "local")
        self.quiesce_and_check(plan, "after read-your-writes", source="local")

    # ---- read-your-writes

    def read_your_writes(self, client, plan):
        model = plan.model
        # Renames of the users with the most posts, each read at once.
        counts = collections.Counter(b["userId"] for b in model.posts.values())
        waits = []
        for i, (u, _) in enumerate(counts.most_common(6) * 2):
            name = "%s-ryw%d-ü" % (u, i)
            resp = client.patch("users", u, u, [{"op": "set", "path": "/username", "value": name}])
            self.assertStatus(resp, 200, "rename %s" % u)
            lsn = self.assertLsnHeader(resp, "rename %s" % u)
            model.usernames[u] = name
            hdr = {"X-Feedd-Min-Lsn": str(lsn)}
            p = sorted(p for p, b in model.posts.items() if b["userId"] == u)[i % counts[u]]
            t0 = time.monotonic()
            status, _, body = client.read("posts", p, p, headers=hdr)
            waits.append(time.monotonic() - t0)
            self.assertEqual(status, 200, "GET post %s with X-Feedd-Min-Lsn %d: %r"
                             % (p, lsn, body))
            self.assertEqual(body.get("userUsername"), name,
                             "GET posts/%s/%s with X-Feedd-Min-Lsn: %d (the rename of %s) right "
                             "after the rename: userUsername" % (p, p, lsn, u))
            spec = {"filter": {"userId": u}, "limit": 1000}
            status, _, body = client.request("POST", query_path("posts"), spec, hdr)
            self.assertEqual(status, 200, "query posts %r: %r" % (spec, body))
            stale = [(it["type"], it["id"], it.get("userUsername")) for it in body["items"]
                     if it.get("userUsername") != name]
            self.assertEqual(stale, [], "query posts %r with X-Feedd-Min-Lsn: %d right after the "
                             "rename of %s to %r: items with another userUsername"
                             % (spec, lsn, u, name))
        log("read-your-writes after a rename: answered in %s ms"
            % " ".join("%.0f" % (w * 1000) for w in waits))
        # A new newest post: in the author's partition of users and at the
        # top of the feed; then deleted: gone from both, the feed refilled.
        u = counts.most_common(1)[0][0]
        p = "pryw"
        body = {"id": p, "postId": p, "type": "post", "userId": u, "title": "read your writes",
                "content": "é" * 300, "creationDate": "2099-01-01T00:00:00.000Z",
                "commentCount": 0, "likeCount": 0}
        resp = client.create("posts", body)
        self.assertStatus(resp, 201, "create %s" % p)
        lsn = self.assertLsnHeader(resp, "create %s" % p)
        hdr = {"X-Feedd-Min-Lsn": str(lsn)}
        status, _, feed = client.request("POST", query_path("feed"), {
            "partitionKey": "post", "orderBy": "creationDate", "descending": True,
            "limit": FEED_CAP}, hdr)
        self.assertEqual(status, 200, "query feed: %r" % feed)
        self.assertEqual([it["id"] for it in feed["items"][:1]], [p],
                         "query feed with X-Feedd-Min-Lsn: %d right after creating the newest post "
                         "%s: the first item" % (lsn, p))
        self.assertEqual(len(feed["items"]), FEED_CAP, "feed size after a create")
        self.assertEqual(feed["items"][0].get("content"), "é" * TRUNCATE_CHARS)
        status, _, mine = client.request("POST", query_path("users"), {
            "partitionKey": u, "filter": {"type": "post"}, "orderBy": "creationDate",
            "descending": True}, hdr)
        self.assertEqual(status, 200, "query users: %r" % mine)
        self.assertEqual([it["id"] for it in mine["items"][:1]], [p],
                         "query users partition %s with X-Feedd-Min-Lsn: %d right after creating "
                         "post %s: the first copy" % (u, lsn, p))
        resp = client.delete("posts", p, p)
        self.assertStatus(resp, 204, "delete %s" % p)
        lsn = self.assertLsnHeader(resp, "delete %s" % p)
        model.deleted.add(p)
        hdr = {"X-Feedd-Min-Lsn": str(lsn)}
        status, _, feed = client.request("POST", query_path("feed"), {
            "partitionKey": "post", "orderBy": "creationDate", "descending": True,
            "limit": FEED_CAP}, hdr)
        self.assertEqual(status, 200, "query feed: %r" % feed)
        ids = [it["id"] for it in feed["items"]]
        self.assertNotIn(p, ids, "query feed with X-Feedd-Min-Lsn: %d right after deleting %s"
                         % (lsn, p))
        ranked = sorted(model.posts.values(), key=rank_key, reverse=True)
        want = [b["id"] for b in ranked[:FEED_CAP]]
        self.assertEqual(ids, want, "query feed with X-Feedd-Min-Lsn: %d right after deleting the "
                         "newest post %s: the refilled top 100" % (lsn, p))
        status, _, mine = client.request("POST", query_path("users"), {
            "partitionKey": u, "filter": {"type": "post"}}, hdr)
        self.assertEqual(status, 200, "query users: %r" % mine)
        self.assertNotIn(p, [it["id"] for it in mine["items"]],
                         "query users partition %s with X-Feedd-Min-Lsn: %d right after deleting "
                         "post %s" % (u, lsn, p))
        # An LSN that will not be reached in time: 504 lsn_wait_timeout, soon.
        far = client.head_lsn() + 10 ** 9
        for method, path, body in (
                ("GET", item_path("posts", p, p), None),
                ("GET", item_path("users", u, u), None),
                ("POST", query_path("feed"), {"partitionKey": "post", "limit": 1})):
            t0 = time.monotonic()
            resp = client.request(method, path, body, {"X-Feedd-Min-Lsn": str(far),
                                                       "X-Feedd-Wait-Ms": "1"})
            elapsed = time.monotonic() - t0
            self.assertError(resp, 504, "lsn_wait_timeout",
                             "%s %s with X-Feedd-Min-Lsn: %d, X-Feedd-Wait-Ms: 1"
                             % (method, path, far))
            self.assertLess(elapsed, 2.0, "%s %s with X-Feedd-Wait-Ms: 1 took %.2f s"
                            % (method, path, elapsed))

    # ---- 3: verify must see a wrong view; rebuild while writing

    def verify_detects_a_wrong_view(self, client):
        bogus = {"id": "zzz-not-a-post", "type": "post", "creationDate": "2999-01-01T00:00:00.000Z",
                 "title": "written by hand into the view"}
        self.assertStatus(client.create("feed", bogus, headers=OVERRIDE), 201,
                          "a hand-written item in feed (admin override)")
        status, _, body = client.request("POST", "/v1/processors/feed/verify?wait=true", {})
        self.assertEqual(status, 200, "verify feed: %r" % body)
        self.assertIs(body.get("ok"), False,
                      "verify feed with a stray item in the view must not be ok: %r" % body)
        self.assertTrue(body.get("differences"), "verify feed: %r" % body)
        feedctl = os.environ.get("FEEDCTL_BIN")
        if feedctl:
            r = subprocess.run([feedctl, "--api", "%s:%d" % (self.daemon.host, self.daemon.port),
                                "verify"], capture_output=True, text=True, timeout=120)
            self.assertEqual(r.returncode, 1, "feedctl verify with a wrong feed view: exit %d\n%s%s"
                             % (r.returncode, r.stdout[-2000:], r.stderr[-2000:]))
        self.assertStatus(client.delete("feed", "post", bogus["id"], headers=OVERRIDE), 204,
                          "remove the stray item")

    def rebuild_during_writes(self, plan, client):
        """Rebuilds every view, round after round, while writers go on."""
        model = plan.model
        rng = self.rng
        ops = [[] for _ in range(3)]
        newest = max(b["creationDate"] for b in model.posts.values())
        users = sorted(model.usernames)
        for i in range(150):  # new newest posts (ties too), comments on some
            p = "prb%03d" % i
            u = rng.choice(users)
            date = "2100-01-01T00:%02d:00.%03dZ" % (i // 4, rng.randint(0, 2))
            assert date > newest
            body = {"id": p, "postId": p, "type": "post", "userId": u, "title": "rb %d" % i,
                    "content": post_content(rng), "creationDate": date, "commentCount": 0,
                    "likeCount": 0}
            ops[i % 2].append(Op(i, "post_create", body))
            b = dict(body)
            b.pop("commentCount")
            b.pop("likeCount")
            model.posts[p] = b
            if i % 3 == 0:
                c = {"id": "crb%03d" % i, "postId": p, "type": "comment",
                     "userId": rng.choice(users), "content": "during a rebuild",
                     "creationDate": date}
                ops[i % 2].append(Op(i + 0.5, "comment", (p, c)))
                model.comments[p][c["id"]] = c
        top = [b["id"] for b in sorted(model.posts.values(), key=rank_key, reverse=True)[:250]]
        for i, p in enumerate(rng.sample([x for x in top if not x.startswith("prb")], 40)):
            if i % 2:
                ops[2].append(Op(i, "delete", p))
                del model.posts[p]
                model.deleted.add(p)
            else:
                title, content = "rebuilt %d" % i, post_content(rng)
                ops[2].append(Op(i, "edit", (p, title, content)))
                model.posts[p]["title"], model.posts[p]["content"] = title, content
        for i, u in enumerate(rng.sample(users, 30)):
            name = "%s-rb%d" % (u, i)
            ops[2].append(Op(100 + i, "rename", [u, name, bool(i % 2)]))
            model.usernames[u] = name
        for o in ops:
            o.sort(key=lambda op: op.key)
        writers = Writers(DaemonControl(self.daemon))
        total = sum(map(len, ops))
        threads = writers.run(ops, name="rebuild-writer")
        deadline = time.monotonic() + 60
        while writers.done < 10 and any(t.is_alive() for t in threads):
            self.assertLess(time.monotonic(), deadline, "writers stuck")
            time.sleep(0.002)
        rounds = []
        while not rounds or any(t.is_alive() for t in threads):
            for name in ("feed", "user_posts", "usernames"):
                before = writers.done
                status, _, body = client.request(
                    "POST", "/v1/processors/%s/rebuild?wait=true" % name, {})
                self.assertEqual(status, 200, "POST /v1/processors/%s/rebuild -> %d %r"
                                 % (name, status, body))
                self.assertEqual(body.get("name"), name, "rebuild %s: %r" % (name, body))
                self.assertIsInstance(body.get("appliedLsn"), int, "rebuild %s: %r" % (name, body))
                rounds.append("%s@%d-%d" % (name, before, writers.done))
            self.assertLess(time.monotonic(), deadline, "rebuilds and writes still going")
        for t in threads:
            t.join(timeout=60)
            self.assertFalse(t.is_alive(), "%s still running" % t.name)
        log("rebuilds (name@answered writes at start-end, of %d): %s" % (total, " ".join(rounds)))
        self.assertEqual(writers.errors, [], "writes during the rebuilds")

    # ---- 2: crashes in the middle of the writes

    def crash_blog(self, extra_args, source, kills):
        plan = BlogPlan(self.rng, users=200, posts=500, comments=800, likes=800, renames=100,
                        edits=150, deletes_top=10, deletes_other=15)
        self.start(extra_args, sync=True)
        control = DaemonControl(self.daemon)
        writers = Writers(control, crashes=True)
        self.run_writers(writers, plan.user_creates)
        ops = plan.phase(0.0, 1.0)
        n = sum(map(len, ops))
        base = writers.done
        crash_at = [base + int(n * (k + 1) / (kills + 1)) for k in range(kills)]
        self.run_writers(writers, ops, crash_at=crash_at)
        what = "blog with %d crashes (%s source)" % (kills, source)
        client, _ = self.quiesce_and_check(plan, what, source=source)
        # No effect applied twice: the counts equal the items and there is
        # exactly one copy of each post (both checked with the views above).
        # The change feed itself: LSNs 1..head without a hole, and one create
        # per item of posts (a create acknowledged, then applied again after
        # the restart, would show twice).
        head = client.head_lsn()
        changes = client.all_changes()
        lsns = [ch["lsn"] for ch in changes]
        missing = sorted(set(range(1, head + 1)) - set(lsns))
        self.assertTrue(lsns == list(range(1, head + 1)),
                        "the change feed after %d crashes is not LSNs 1..%d in order: %d records, "
                        "missing %s" % (kills, head, len(lsns), missing[:20]))
        creates = collections.Counter((ch["partitionKey"], ch["id"]) for ch in changes
                                      if ch["container"] == "posts" and ch["op"] == "create")
        twice = [k for k, c in creates.items() if c > 1]
        self.assertEqual(twice, [], "posts items created more than once in the change feed")

    def test_blog_crash(self):
        self.crash_blog([], "local", kills=4)

    # ---- 3: processors enabled on existing data

    def test_processors_enabled_on_existing_data(self):
        plan = BlogPlan(self.rng, users=120, posts=350, comments=500, likes=500, renames=80,
                        edits=100, deletes_top=8, deletes_other=10)
        self.start(["--processors.enabled=false"])
        writers = Writers(DaemonControl(self.daemon))
        self.write_blog(plan, writers, 0.0, 0.6)
        client = self.daemon.client()
        status, _, body = client.request("GET", "/v1/processors")
        self.assertEqual((status, body), (200, {"processors": []}),
                         "GET /v1/processors with --processors.enabled=false")
        self.assertEqual(scan(client, "feed"), [], "feed with processors disabled")
        self.assertEqual(scan(client, "users", {"filter": {"type": "post"}}), [],
                         "post copies in users with processors disabled")
        with_name = [it["id"] for it in scan(client, "posts") if "userUsername" in it]
        self.assertEqual(with_name, [], "posts items with userUsername, processors disabled")
        # No processor writes into posts: a read needs no wait.
        resp = client.request("GET", item_path("users", "u0000", "u0000"), None,
                              {"X-Feedd-Min-Lsn": str(client.head_lsn() + 10 ** 9),
                               "X-Feedd-Wait-Ms": "1"})
        self.assertStatus(resp, 200, "X-Feedd-Min-Lsn on users when no processor writes into it")
        self.daemon.stop()
        self.daemon.extra_args = []
        self.daemon.start()
        writers = Writers(DaemonControl(self.daemon))
        self.write_blog(plan, writers, 0.6, 1.0, with_users=False)
        self.quiesce_and_check(plan, "processors enabled on existing data", source="local")

    # ---- a parked change stays contained to its key

    def test_a_parked_change_stays_contained_to_its_key(self):
        """A rename whose copy cannot be written (the post would outgrow
        storage.max_item_bytes) parks in `usernames`; reads of other keys with
        X-Feedd-Min-Lsn answer at once, the parked key is named in
        X-Feedd-Parked, the watermark (retention) moves on, and the parked
        change survives a restart until a replay applies it."""
        def poll(what, fn, timeout_s=20.0):
            deadline = time.monotonic() + timeout_s
            while True:
                value = fn()
                if value:
                    return value
                if time.monotonic() > deadline:
                    self.fail("timed out waiting for " + what)
                time.sleep(0.02)

        def parked_of(client):
            status, _, body = client.request("GET", "/v1/processors/usernames/parked")
            self.assertEqual(status, 200, body)
            return body["parked"]

        base = declared_views_args() + ["--kafka.brokers=none",
                                      "--processor.usernames.max_attempts=1",
                                      "--processor.usernames.retry_backoff_ms=1"]
        self.start(base + ["--storage.max_item_bytes=1024"])
        client = self.daemon.client()
        for uid, name in (("u1", "ana"), ("u2", "bob")):
            self.assertStatus(client.create("users", {"id": uid, "userId": uid, "type": "user",
                                                      "username": name}), 201)
        # p1 and its copies fit 1024 bytes (their _source and _sourceLsn
        # are system properties, which the limit does not count); p1 with a
        # 200-character userUsername does not.
        post = {"type": "post", "title": "t" * 800, "content": "c", "commentCount": 0,
                "likeCount": 0, "creationDate": "2026-11-21T10:00:00Z"}
        self.assertStatus(client.create("posts", dict(post, id="p1", postId="p1", userId="u1")), 201)
        self.assertStatus(client.create("posts", dict(post, id="p2", postId="p2", userId="u2",
                                                      title="short")), 201)
        wait_views_quiescent(self, client)

        # The poison change: p1 cannot take a 200-character username.
        status, headers, body = client.patch("users", "u1", "u1", [
            {"op": "set", "path": "/username", "value": "a" * 200}])
        self.assertEqual(status, 200, body)
        poison = int(headers["X-Feedd-Lsn"])
        poll("the rename of u1 to park", lambda: parked_of(client))
        status, headers, body = client.patch("users", "u2", "u2", [
            {"op": "set", "path": "/username", "value": "bobby"}])
        self.assertEqual(status, 200, body)
        later = int(headers["X-Feedd-Lsn"])

        # Another key: 200 at once, and the parked change is named.
        status, headers, body = client.read("posts", "p2", "p2", {
            "X-Feedd-Min-Lsn": str(later), "X-Feedd-Wait-Ms": "3000"})
        self.assertEqual(status, 200, "a read of another key behind a parked change: %r" % body)
        self.assertEqual(body.get("userUsername"), "bobby")
        self.assertEqual(headers.get("X-Feedd-Parked"),
                         "usernames; lsn=%d; item=users/u1/u1" % poison)
        # Below the parked change: nothing to name.
        status, headers, _ = client.read("posts", "p2", "p2", {"X-Feedd-Min-Lsn": str(poison - 1)})
        self.assertEqual(status, 200)
        self.assertIsNone(headers.get("X-Feedd-Parked"))
        # A query says it too; the parked key's post keeps its old copy.
        status, headers, body = client.request(
            "POST", query_path("posts"), {"partitionKey": "p1"},
            {"X-Feedd-Min-Lsn": str(later), "X-Feedd-Wait-Ms": "3000"})
        self.assertEqual(status, 200, body)
        self.assertEqual(headers.get("X-Feedd-Parked"),
                         "usernames; lsn=%d; item=users/u1/u1" % poison)
        self.assertEqual(body["items"][0].get("userUsername"), "ana")

        # The processor shows it, and its retention watermark moved past it.
        procs = processors_status(client)
        self.assertEqual(procs["usernames"]["state"], "degraded")
        self.assertEqual(procs["usernames"]["parked"], 1)
        self.assertGreaterEqual(procs["usernames"]["appliedLsn"], later)
        [parked] = parked_of(client)
        self.assertEqual((parked["lsn"], parked["container"], parked["partitionKey"], parked["id"]),
                         (poison, "users", "u1", "u1"))

        def acked():
            consumers = {c["name"]: c["ackedLsn"] for c in client.feed_info()["consumers"]}
            return consumers.get("processor.usernames", 0) >= later
        poll("the usernames watermark to pass the parked change", acked)

        # A restart keeps it parked; with a larger limit a replay applies it.
        self.daemon.stop()
        self.daemon.extra_args = base
        self.daemon.start()
        client = self.daemon.client()
        [parked] = parked_of(client)
        self.assertEqual(parked["lsn"], poison)
        self.assertIn("payload_too_large", parked["error"])
        status, _, body = client.request("POST", "/v1/processors/usernames/parked/replay")
        self.assertEqual((status, body.get("replayed")), (200, 1), body)
        poll("the replayed rename", lambda: client.read("posts", "p1", "p1")[2].get(
            "userUsername") == "a" * 200)
        poll("no parked change", lambda: not parked_of(client))
        self.assertEqual(processors_status(client)["usernames"]["state"], "running")
        status, headers, _ = client.read("posts", "p1", "p1", {"X-Feedd-Min-Lsn": str(later)})
        self.assertEqual(status, 200)
        self.assertIsNone(headers.get("X-Feedd-Parked"))


class DerivedItemsTest(FeeddTestCase):
    """A processor never overwrites an item it did not derive (a collision is
    parked and counted), and clients cannot write derived items."""

    def setUp(self):
        self.daemon = FeeddDaemon(extra_args=declared_views_args(), name="feedd")
        self.daemon.start()
        self.c = self.daemon.client()

    def tearDown(self):
        self.daemon.cleanup()

    def metric(self, name, processor):
        with urllib.request.urlopen("http://%s/metrics" % self.daemon.ready["metrics"],
                                    timeout=10) as r:
            text = r.read().decode()
        prefix = '%s{processor="%s"} ' % (name, processor)
        for line in text.splitlines():
            if line.startswith(prefix):
                return float(line[len(prefix):])
        self.fail("no %s%s in /metrics" % (name, prefix))

    def wait_applied(self, what, timeout_s=60.0):
        """Waits until every processor has applied (or parked) up to the head."""
        head = self.c.head_lsn()
        deadline = time.monotonic() + timeout_s
        while True:
            procs = processors_status(self.c)
            if all(p["appliedLsn"] >= head or p["parked"] for p in procs.values()):
                return procs
            if time.monotonic() > deadline:
                self.fail("%s: processors did not reach LSN %d: %r" % (what, head, procs))
            time.sleep(0.05)

    def wait_for(self, what, condition, timeout_s=60.0):
        deadline = time.monotonic() + timeout_s
        while True:
            value = condition()
            if value:
                return value
            if time.monotonic() > deadline:
                self.fail("%s: not within %.0f s" % (what, timeout_s))
            time.sleep(0.05)

    def user(self, u):
        body = {"id": u, "userId": u, "type": "user", "username": "name-" + u}
        self.assertStatus(self.c.create("users", body), 201, "user " + u)
        return body

    def post(self, pk, post_id, user, date, title="t"):
        body = {"id": post_id, "postId": pk, "type": "post", "userId": user, "title": title,
                "content": "c", "creationDate": date, "commentCount": 0, "likeCount": 0}
        self.assertStatus(self.c.upsert("posts", pk, post_id, body), 201, "post %s/%s" % (pk, post_id))
        return body

    def test_a_post_never_overwrites_a_users_profile(self):
        profile = self.user("u1")
        # The repro: a post whose id is the user's, its author that user.
        evil = {"id": "u1", "postId": "evil", "type": "post", "userId": "u1"}
        self.assertStatus(self.c.upsert("posts", "evil", "u1", evil), 201, "the evil post")
        procs = self.wait_for("user_posts parks the collision",
                              lambda: processors_status(self.c)["user_posts"]["parked"] > 0 and
                              processors_status(self.c))
        r = self.c.read("users", "u1", "u1")
        self.assertStatus(r, 200, "the profile")
        self.assertEqual(strip_system(r[2]), profile, "the profile was overwritten")
        self.assertNotIn("_source", r[2])
        status, _, body = self.c.request("GET", "/v1/processors/user_posts/parked")
        self.assertEqual(status, 200, body)
        errors = [p["error"] for p in body["parked"] if p["id"] == "u1"]
        self.assertTrue(errors, body)
        for part in ("derived_item", "collision", "posts/evil/u1", "users/u1/u1"):
            self.assertIn(part, errors[0], body)
        self.assertGreaterEqual(procs["user_posts"]["collisions"], 1, procs["user_posts"])
        self.assertGreaterEqual(
            self.metric("feedd_processor_view_collisions_total", "user_posts"), 1)
        # The other views go on: the feed holds the post.
        self.wait_for("the feed holds the post",
                      lambda: self.c.read("feed", "post", "u1")[0] == 200)

    def test_two_posts_with_one_id_keep_one_feed_copy_and_verify_passes(self):
        self.user("u1")
        self.user("u2")
        self.post("p1", "p1", "u1", "2026-01-01T00:00:00Z", "first")
        self.wait_applied("the first post")
        self.post("other", "p1", "u2", "2026-02-01T00:00:00Z", "twin")
        self.post("p2", "p2", "u1", "2026-03-01T00:00:00Z", "later")
        procs = self.wait_applied("the twin")
        self.assertEqual(procs["feed"]["parked"], 0, procs["feed"])
        status, _, page = self.c.query("feed", {"partitionKey": "post", "limit": 100})
        self.assertEqual(status, 200, page)
        by_id = {it["id"]: it for it in page["items"]}
        self.assertEqual(sorted(by_id), ["p1", "p2"], page)
        self.assertEqual(by_id["p1"]["title"], "first", "the twin evicted the first post")
        self.assertEqual(by_id["p1"]["_source"],
                         {"container": "posts", "partitionKey": "p1", "id": "p1"})
        for name in PROCESSORS:
            status, _, body = self.c.request(
                "POST", "/v1/processors/%s/verify?wait=true" % name, {})
            self.assertEqual(status, 200, body)
            self.assertEqual((body.get("ok"), body.get("differences")), (True, []),
                             "verify %s: %r" % (name, body))
        self.assertGreaterEqual(self.metric("feedd_processor_view_collisions_total", "feed"), 1)

    def test_clients_cannot_write_into_feed(self):
        self.user("u1")
        self.post("p1", "p1", "u1", "2026-01-01T00:00:00Z")
        self.wait_for("the feed holds p1", lambda: self.c.read("feed", "post", "p1")[0] == 200)
        fake = {"id": "fake", "type": "post", "title": "FAKE NEWS",
                "creationDate": "2999-01-01T00:00:00Z"}
        attempts = [
            ("POST", self.c.create("feed", fake)),
            ("PUT", self.c.upsert("feed", "post", "fake", fake)),
            ("PUT over a member", self.c.upsert("feed", "post", "p1", dict(fake, id="p1"))),
            ("PATCH", self.c.patch("feed", "post", "p1",
                                   [{"op": "set", "path": "/title", "value": "FAKE NEWS"}])),
            ("DELETE", self.c.delete("feed", "post", "p1")),
            ("batch", self.c.batch("feed", "post", [{"op": "create", "body": fake}])),
        ]
        for what, resp in attempts:
            self.assertError(resp, 403, "derived_container", what + " into feed")
        self.assertEqual(self.c.read("feed", "post", "fake")[0], 404)
        self.assertEqual(self.c.read("feed", "post", "p1")[2]["title"], "t")
        # An explicit admin override may.
        self.assertStatus(self.c.create("feed", fake, headers=OVERRIDE), 201, "override")
        self.assertStatus(self.c.delete("feed", "post", "fake", headers=OVERRIDE), 204, "override")
        r = self.c.request("DELETE", "/v1/containers/feed/items/post/p1", None,
                           {"X-Feedd-Override": "yes"})
        self.assertError(r, 400, "invalid_request", "an unknown override")

    def test_clients_cannot_write_a_derived_copy_in_users(self):
        self.user("u1")
        self.post("p1", "p1", "u1", "2026-01-01T00:00:00Z")
        # The copy of the post once usernames has set its author's name.
        copy = self.wait_for("the copy of p1 in users, with userUsername",
                             lambda: (lambda r: r[0] == 200 and "userUsername" in r[2] and r[2])(
                                 self.c.read("users", "u1", "p1")))
        self.wait_applied("the copy")
        self.assertEqual(copy["_source"], {"container": "posts", "partitionKey": "p1", "id": "p1"})
        fake = {"id": "p1", "userId": "u1", "type": "post", "title": "FAKE"}
        attempts = [
            ("PUT", self.c.upsert("users", "u1", "p1", fake)),
            ("PATCH", self.c.patch("users", "u1", "p1",
                                   [{"op": "set", "path": "/title", "value": "FAKE"}])),
            ("DELETE", self.c.delete("users", "u1", "p1")),
            ("batch upsert", self.c.batch("users", "u1", [{"op": "upsert", "body": fake}])),
            ("batch delete", self.c.batch("users", "u1", [{"op": "delete", "id": "p1"}])),
        ]
        for what, resp in attempts:
            self.assertError(resp, 403, "derived_item", what + " of a derived copy")
        self.assertEqual(self.c.read("users", "u1", "p1")[2], copy, "the copy changed")
        # The user's own items stay the clients'.
        self.assertStatus(self.c.patch("users", "u1", "u1",
                                       [{"op": "set", "path": "/bio", "value": "hi"}]), 200)
        # A processor's batch op (sourceLsn, as feedd worker sends) may.
        r = self.c.batch("users", "u1", [{"op": "patch", "id": "p1", "sourceLsn": 1,
                                          "ifExists": True, "operations": [
                                              {"op": "set", "path": "/x", "value": 1}]}])
        self.assertStatus(r, 200, "a processor's patch of a copy")
        # And an explicit admin override.
        self.assertStatus(self.c.delete("users", "u1", "p1", headers=OVERRIDE), 204, "override")



class InProcessViewsTest(FeeddTestCase):
    """In the daemon, processors take their changes in-process, whatever is
    published to Kafka: with either envelope, and after a rebuild, no change
    is read back from the durable feed, and a read that waits for a view
    (X-Feedd-Min-Lsn, at most 1 s) is answered - while Kafka consumers still
    get every change."""

    def check(self, envelope):
        daemon = FeeddDaemon(extra_args=["--kafka.envelope=" + envelope],
                             name="feedd-" + envelope)
        self.addCleanup(daemon.cleanup)
        daemon.start()
        c = daemon.client()
        for u in ("u1", "u2"):
            self.assertStatus(c.create("users", {"id": u, "userId": u, "type": "user",
                                                 "username": "name-" + u}), 201, u)

        def post(p, user, date):
            body = {"id": p, "postId": p, "type": "post", "userId": user, "title": "t",
                    "content": "c", "creationDate": date, "commentCount": 0, "likeCount": 0}
            resp = c.create("posts", body)
            self.assertStatus(resp, 201, "post " + p)
            return self.assertLsnHeader(resp, "post " + p)

        for i in range(20):
            post("p%d" % i, "u%d" % (1 + i % 2), "2026-01-01T00:00:%02dZ" % i)
        for name in ("usernames", "feed"):
            status, _, body = c.request("POST", "/v1/processors/%s/rebuild?wait=true" % name)
            self.assertEqual(status, 200, "rebuild %s: %r" % (name, body))

        resp = c.patch("users", "u1", "u1", [{"op": "set", "path": "/username", "value": "ann"}])
        self.assertStatus(resp, 200, "rename")
        wait = {"X-Feedd-Min-Lsn": str(self.assertLsnHeader(resp, "rename")),
                "X-Feedd-Wait-Ms": "1000"}
        status, _, body = c.read("posts", "p0", "p0", headers=wait)
        self.assertEqual((status, body.get("userUsername")), (200, "ann"), body)
        wait["X-Feedd-Min-Lsn"] = str(post("newest", "u2", "2027-01-01T00:00:00Z"))
        status, _, body = c.request("POST", query_path("feed"), {
            "partitionKey": "post", "orderBy": "creationDate", "descending": True,
            "limit": 1}, wait)
        self.assertEqual(status, 200, body)
        self.assertEqual([it["id"] for it in body["items"]], ["newest"], body)

        for name, p in processors_status(c).items():
            self.assertEqual(p["source"], "local", p)
            self.assertEqual(p["fromDurableFeed"], 0, "%s (%s envelope): %r" % (name, envelope, p))
            self.assertGreater(p["fromCommitPath"], 0, p)
        head = c.head_lsn()
        deadline = time.monotonic() + 30
        while c.feed_info()["kafka"]["delivered"] < head:
            self.assertLess(time.monotonic(), deadline, c.feed_info())
            time.sleep(0.05)

    def test_a_rebuild_writes_only_what_differs(self):
        """Rebuilding right views writes nothing: no change record, so Kafka
        consumers and readers see no intermediate state; a rebuild after a
        copy was lost writes that copy alone."""
        daemon = FeeddDaemon(name="feedd-rebuild-diff")
        self.addCleanup(daemon.cleanup)
        daemon.start()
        c = daemon.client()
        self.assertStatus(c.create("users", {"id": "u1", "userId": "u1", "type": "user",
                                             "username": "ann"}), 201, "user")
        for i in range(5):
            p = "p%d" % i
            self.assertStatus(c.create("posts", {
                "id": p, "postId": p, "type": "post", "userId": "u1", "title": "t",
                "content": "c", "creationDate": "2026-01-01T00:00:0%dZ" % i}), 201, p)
        wait_views_quiescent(self, c)
        head = c.head_lsn()
        for name in ("usernames", "user_posts", "feed"):
            before = processors_status(c)[name]["viewWrites"]
            status, _, body = c.request("POST", "/v1/processors/%s/rebuild?wait=true" % name)
            self.assertEqual(status, 200, "rebuild %s: %r" % (name, body))
            self.assertEqual(processors_status(c)[name]["viewWrites"], before, name)
        self.assertEqual(c.head_lsn(), head, "a rebuild of right views wrote")

        self.assertStatus(c.delete("feed", "post", "p3", headers=OVERRIDE), 204, "lose a copy")
        head = c.head_lsn()
        status, _, body = c.request("POST", "/v1/processors/feed/rebuild?wait=true")
        self.assertEqual(status, 200, body)
        self.assertEqual(c.head_lsn(), head + 1, "the rebuild wrote more than the lost copy")
        status, _, copy = c.read("feed", "post", "p3")
        self.assertEqual(status, 200, copy)

    def test_a_reset_applies_the_changes_after_its_lsn_again(self):
        """POST /v1/processors/{name}/reset?lsn=N (feedctl reset) moves a
        processor back and applies the changes after N again: a copy lost
        from the view comes back without a rebuild."""
        daemon = FeeddDaemon(name="feedd-reset")
        self.addCleanup(daemon.cleanup)
        daemon.start()
        c = daemon.client()
        lsns = {}
        for i in range(5):
            p = "p%d" % i
            resp = c.create("posts", {"id": p, "postId": p, "type": "post", "userId": "u1",
                                      "title": "t", "content": "c",
                                      "creationDate": "2026-01-01T00:00:0%dZ" % i})
            self.assertStatus(resp, 201, p)
            lsns[p] = self.assertLsnHeader(resp, p)
        wait_views_quiescent(self, c)
        self.assertStatus(c.delete("feed", "post", "p3", headers=OVERRIDE), 204, "lose a copy")
        before = processors_status(c)["feed"]

        status, _, body = c.request("POST", "/v1/processors/feed/reset?lsn=%d" % (lsns["p3"] - 1))
        self.assertEqual(status, 200, body)
        wait_views_quiescent(self, c)
        status, _, copy = c.read("feed", "post", "p3")
        self.assertEqual(status, 200, "the reset did not bring the copy back: %r" % copy)
        after = processors_status(c)["feed"]
        self.assertGreaterEqual(after["applied"] - before["applied"], 2, after)
        self.assertEqual(after["appliedLsn"], c.head_lsn(), after)

        head = c.head_lsn()
        self.assertError(c.request("POST", "/v1/processors/feed/reset?lsn=%d" % (head + 10)),
                         400, "invalid_request", "a reset past the applied LSN")
        self.assertError(c.request("POST", "/v1/processors/feed/reset?lsn=x"), 400,
                         "invalid_request", "a reset to no number")
        self.assertError(c.request("POST", "/v1/processors/feed/reset"), 400,
                         "invalid_request", "a reset without lsn")
        self.assertError(c.request("POST", "/v1/processors/nope/reset?lsn=1"), 404,
                         "not_found", "a reset of no processor")
        feedctl = os.environ.get("FEEDCTL_BIN")
        if feedctl:
            r = subprocess.run([feedctl, "--api", "%s:%d" % (daemon.host, daemon.port), "--json",
                                "reset", "feed", "oldest"], capture_output=True, text=True,
                               timeout=60)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertEqual(json.loads(r.stdout)["name"], "feed", r.stdout)
        wait_views_quiescent(self, c)
        verify_all(self, daemon, c, "after the resets")

    def test_a_paused_view_stands_still_until_resumed(self):
        daemon = FeeddDaemon(name="feedd-pause")
        self.addCleanup(daemon.cleanup)
        daemon.start()
        c = daemon.client()
        feedctl = os.environ.get("FEEDCTL_BIN")

        def control(verb):
            if feedctl:
                r = subprocess.run([feedctl, "--json", "--api", "%s:%d" % (daemon.host, daemon.port),
                                    verb, "feed"], capture_output=True, text=True, timeout=60)
                self.assertEqual(r.returncode, 0, "feedctl %s feed: %s%s" % (verb, r.stdout,
                                                                           r.stderr))
                return json.loads(r.stdout)
            status, _, body = c.request("POST", "/v1/processors/feed/" + verb)
            self.assertEqual(status, 200, body)
            return body

        self.assertEqual(control("pause")["state"], "paused")
        resp = c.create("posts", {"id": "p1", "postId": "p1", "type": "post", "userId": "u1",
                                  "title": "t", "content": "c",
                                  "creationDate": "2026-01-01T00:00:00Z"})
        self.assertStatus(resp, 201, "post")
        lsn = self.assertLsnHeader(resp, "post")
        feed_query = {"partitionKey": "post", "orderBy": "creationDate", "descending": True}
        self.assertError(c.request("POST", query_path("feed"), feed_query,
                                   {"X-Feedd-Min-Lsn": str(lsn), "X-Feedd-Wait-Ms": "200"}),
                         504, "lsn_wait_timeout", "a read of the paused view")
        self.assertLess(processors_status(c)["feed"]["appliedLsn"], lsn)
        self.assertEqual(control("resume")["state"], "running")
        status, _, body = c.request("POST", query_path("feed"), feed_query,
                                    {"X-Feedd-Min-Lsn": str(lsn), "X-Feedd-Wait-Ms": "5000"})
        self.assertEqual(status, 200, body)
        self.assertEqual([it["id"] for it in body["items"]], ["p1"])

    def test_native_envelope(self):
        self.check("native")

    def test_debezium_envelope(self):
        self.check("debezium")


class ScenarioConfigTest(FeeddTestCase):
    """The scenario rule (docs/configuration.md): declared whole, or the
    built-in configs/feedd.conf when nothing is declared."""

    def start(self, name, config_text=None, extra_args=()):
        path = None
        if config_text is not None:
            fd, path = tempfile.mkstemp(prefix="feedd-scenario-", suffix=".conf")
            with os.fdopen(fd, "w") as f:
                f.write(config_text)
            self.addCleanup(os.unlink, path)
        self.daemon = FeeddDaemon(config=path, extra_args=list(extra_args), name=name)
        self.addCleanup(self.daemon.cleanup)
        self.daemon.start()
        return self.daemon.client()

    def scenario(self, client):
        status, _, body = client.request("GET", "/v1/containers")
        self.assertEqual(status, 200, body)
        containers = sorted(c["name"] for c in body["containers"])
        return containers, sorted(processors_status(client))

    def test_a_bare_daemon_runs_the_blog(self):
        c = self.start("feedd-bare")
        self.assertEqual(self.scenario(c), (["feed", "posts", "users"], sorted(PROCESSORS)))
        self.assertIn("the default scenario of the built-in configs/feedd.conf",
                      self.daemon.logs())

    def test_the_blog_containers_declared_by_hand_run_no_processor(self):
        # As configs/feedd.conf declares them, but feed open to clients (a
        # container only processors write needs a declared processor).
        c = self.start("feedd-containers", "[container.users]\npartition_key = /userId\n"
                       "[container.posts]\npartition_key = /postId\nindexes = /userId\n"
                       "[container.feed]\npartition_key = /type\n")
        self.assertEqual(self.scenario(c), (["feed", "posts", "users"], []))
        self.assertNotIn("default scenario", self.daemon.logs())

    def test_a_container_only_processors_write_needs_one(self):
        config = os.path.join(tempfile.mkdtemp(prefix="feedd-scenario-"), "feedd.conf")
        self.addCleanup(shutil.rmtree, os.path.dirname(config))
        with open(config, "w") as f:
            f.write("[container.posts]\npartition_key = /postId\n"
                    "[container.feed]\npartition_key = /type\nwriters = processors\n")
        for extra in (["--check-config"], ["--listen=127.0.0.1:0", "--metrics-listen=127.0.0.1:0",
                                           "--data-dir=" + os.path.dirname(config)]):
            r = subprocess.run([feedd_binary(), "--config", config] + extra,
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn("container feed is written by processors only", r.stderr)
            self.assertIn("none comes from the built-in configs/feedd.conf", r.stderr)


if __name__ == "__main__":
    unittest.main()
