"""Shared pieces of the scenario benchmark (bench/scenario/).

- Conn: a minimal keep-alive HTTP/1.1 client on a raw socket (much less
  per-request overhead than http.client, so the latency figures are mostly
  the daemon's).
- The data set: deterministic, seeded, generated per user, so the generator
  and the driver agree on every key without sharing a file.
- Small helpers: percentiles, Prometheus text parsing, CPU accounting.

Python 3 standard library only.
"""

import bisect
import datetime
import json
import os
import random
import socket
import time
import urllib.parse

# ---------------------------------------------------------------- HTTP client


class HttpError(RuntimeError):
    pass


def bearer_line():
    """The Authorization header line for a daemon with auth.tokens_file
    (docs/security.md): the first line of $FEEDD_TOKEN_FILE, else
    $FEEDD_TOKEN, never an argument; b"" without either."""
    token = os.environ.get("FEEDD_TOKEN", "")
    path = os.environ.get("FEEDD_TOKEN_FILE", "")
    if path:
        with open(path) as f:
            token = f.readline().strip(" \t\r\n")
    return ("Authorization: Bearer %s\r\n" % token).encode() if token else b""


class Conn:
    """One keep-alive connection. Not thread-safe: one per thread/process."""

    def __init__(self, api, timeout=120.0):
        host, _, port = api.rpartition(":")
        self.addr = (host.strip("[]"), int(port))
        self.timeout = timeout
        self.sock = None
        self.buf = b""
        self.hostline = ("Host: %s\r\n" % api).encode() + bearer_line()
        # recv() into one reused buffer: socket.recv(256 KiB) allocates and
        # frees 256 KiB per call (mmap, mremap, munmap and their page
        # faults), ~0.3 ms a call on this box, more than feedd takes to
        # answer Q6 (60 KB).
        self.rbuf = memoryview(bytearray(262144))

    def _connect(self):
        s = socket.create_connection(self.addr, timeout=self.timeout)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = s
        self.buf = b""

    def close(self):
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:
                pass
        self.sock = None

    def request(self, method, path, body=None, headers=None):
        """Returns (status, headers {lower-name: value}, body bytes).

        body: None, bytes, or a JSON-serialisable value.
        """
        if body is not None and not isinstance(body, (bytes, bytearray)):
            body = json.dumps(body, separators=(",", ":")).encode()
        head = ["%s %s HTTP/1.1\r\n" % (method, path)]
        if body is not None:
            head.append("Content-Type: application/json\r\nContent-Length: %d\r\n" % len(body))
        if headers:
            for k, v in headers.items():
                head.append("%s: %s\r\n" % (k, v))
        data = "".join(head).encode() + self.hostline + b"\r\n"
        if body is not None:
            data += body
        if self.sock is None:
            self._connect()
        try:
            self.sock.sendall(data)
            return self._read_response()
        except BaseException:
            self.close()
            raise

    def _recv(self):
        n = self.sock.recv_into(self.rbuf)
        return bytes(self.rbuf[:n])

    def _read_response(self):
        buf = self.buf
        while True:
            end = buf.find(b"\r\n\r\n")
            if end >= 0:
                break
            chunk = self._recv()
            if not chunk:
                raise HttpError("connection closed by the server")
            buf += chunk
        lines = buf[:end].decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        hdrs = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            hdrs[k.strip().lower()] = v.strip()
        rest = buf[end + 4:]
        if "content-length" in hdrs:
            n = int(hdrs["content-length"])
        elif hdrs.get("transfer-encoding", "").lower() == "chunked":
            raise HttpError("chunked responses are not supported by this client")
        else:
            n = 0
        while len(rest) < n:
            chunk = self._recv()
            if not chunk:
                raise HttpError("connection closed by the server mid-body")
            rest += chunk
        self.buf = rest[n:]
        if hdrs.get("connection", "").lower() == "close":
            self.close()
        return status, hdrs, rest[:n]

    # conveniences; all return (status, headers, body bytes)
    def get(self, path, headers=None):
        return self.request("GET", path, None, headers)

    def post(self, path, body, headers=None):
        return self.request("POST", path, body, headers)

    def put(self, path, body, headers=None):
        return self.request("PUT", path, body, headers)


def q(seg):
    return urllib.parse.quote(seg, safe="")


def item_path(c, pk, i):
    return "/v1/containers/%s/items/%s/%s" % (c, q(pk), q(i))


def items_path(c):
    return "/v1/containers/%s/items" % c


def batch_path(c, pk):
    return "/v1/containers/%s/partitions/%s/batch" % (c, q(pk))


def query_path(c):
    return "/v1/containers/%s/query" % c


def check(resp, what, ok=(200, 201, 204)):
    status, _, body = resp
    if status not in ok:
        raise HttpError("%s -> HTTP %d: %s" % (what, status, body[:300].decode("utf-8", "replace")))
    return resp


# ---------------------------------------------------------------- data set

# SF=1: 100,000 users, 5-50 posts each, 0-25 comments and 0-100 likes per
# post (uniform).  Smaller scale factors scale the user count only.
USERS_AT_SF1 = 100_000
POSTS_PER_USER = (5, 50)
COMMENTS_PER_POST = (0, 25)
LIKES_PER_POST = (0, 100)
POST_CONTENT_CHARS = (200, 1000)     # views keep the first 200 (short form)
COMMENT_CONTENT_CHARS = (20, 300)
TITLE_CHARS = (20, 80)
DATE_BASE = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
DATE_SPAN_S = 365 * 86400            # posts are spread over 2024
REACTION_SPAN_S = 30 * 86400         # comments/likes within 30 days of the post

ADJ = ["brave", "calm", "eager", "fancy", "gentle", "happy", "jolly", "kind",
       "lively", "merry", "nice", "proud", "silly", "witty", "zany", "bold"]
NOUN = ["otter", "falcon", "panda", "tiger", "koala", "lynx", "heron", "bison",
        "gecko", "moose", "raven", "shark", "whale", "zebra", "yak", "wolf"]


def n_users(sf):
    return max(1, int(round(USERS_AT_SF1 * sf)))


def username(u):
    """Deterministic username of user u (mirrored in wrk/common.lua)."""
    return "%s_%s%d" % (ADJ[u % 16], NOUN[(u // 16) % 16], u)


def user_id(u):
    return "u%d" % u


def post_id(u, k):
    return "p%d.%d" % (u, k)


_CORPUS = None


def corpus():
    """64 KiB of seeded lorem-like text; content is sliced out of it."""
    global _CORPUS
    if _CORPUS is None:
        rng = random.Random(12345)
        words = ["lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing",
                 "elit", "sed", "do", "eiusmod", "tempor", "incididunt", "ut", "labore",
                 "et", "dolore", "magna", "aliqua", "enim", "ad", "minim", "veniam",
                 "quis", "nostrud", "exercitation", "ullamco", "laboris", "nisi",
                 "aliquip", "ex", "ea", "commodo", "consequat", "partition", "feed",
                 "document", "change", "view", "post", "comment", "like", "user"]
        parts, n = [], 0
        while n < 70000:
            w = rng.choice(words)
            parts.append(w)
            n += len(w) + 1
        _CORPUS = " ".join(parts)[:65536 + 1024]
    return _CORPUS


def text(rng, lo_hi):
    c = corpus()
    n = rng.randint(*lo_hi)
    off = rng.randrange(0, len(c) - n)
    return c[off:off + n]


def iso(seconds_after_base, ms=0):
    t = DATE_BASE + datetime.timedelta(seconds=seconds_after_base, milliseconds=ms)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (t.microsecond // 1000)


def now_iso():
    t = datetime.datetime.now(datetime.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (t.microsecond // 1000)


def user_rng(seed, u):
    return random.Random(seed * 1_000_003 + u)


def user_post_count(seed, u):
    """n_posts of user u: the first draw of its generator (cheap)."""
    return user_rng(seed, u).randint(*POSTS_PER_USER)


def user_item(u):
    return {"id": user_id(u), "userId": user_id(u), "type": "user", "username": username(u)}


def user_data(seed, u, n_total_users, v3):
    """Yields (post, comments, likes) for every post of user u.

    V1 items are normalized; V3 items carry userUsername (the application
    knows its own user's name) and posts start with commentCount/likeCount 0.
    """
    rng = user_rng(seed, u)
    n_posts = rng.randint(*POSTS_PER_USER)
    uid = user_id(u)
    for k in range(n_posts):
        pid = post_id(u, k)
        t = rng.randrange(DATE_SPAN_S)
        post = {"id": pid, "postId": pid, "type": "post", "userId": uid,
                "title": text(rng, TITLE_CHARS), "content": text(rng, POST_CONTENT_CHARS),
                "creationDate": iso(t, rng.randrange(1000))}
        if v3:
            post["userUsername"] = username(u)
            post["commentCount"] = 0
            post["likeCount"] = 0
        n_c = rng.randint(*COMMENTS_PER_POST)
        n_l = min(rng.randint(*LIKES_PER_POST), n_total_users)
        comments = []
        for j in range(n_c):
            a = rng.randrange(n_total_users)
            c = {"id": "c%d.%d.%d" % (u, k, j), "postId": pid, "type": "comment",
                 "userId": user_id(a), "content": text(rng, COMMENT_CONTENT_CHARS),
                 "creationDate": iso(t + rng.randrange(REACTION_SPAN_S), rng.randrange(1000))}
            if v3:
                c["userUsername"] = username(a)
            comments.append(c)
        likes = []
        if n_l:
            likers = rng.sample(range(n_total_users), n_l)
            for a in likers:
                lk = {"id": "l%d.%d.%d" % (u, k, a), "postId": pid, "type": "like",
                      "userId": user_id(a),
                      "creationDate": iso(t + rng.randrange(REACTION_SPAN_S), rng.randrange(1000))}
                if v3:
                    lk["userUsername"] = username(a)
                likes.append(lk)
        yield post, comments, likes


class KeySpace:
    """The existing users and posts of a data set, for drawing keys."""

    def __init__(self, sf, seed):
        self.users = n_users(sf)
        self.seed = seed
        self.cum = []
        total = 0
        for u in range(self.users):
            total += user_post_count(seed, u)
            self.cum.append(total)
        self.posts = total

    def post_of_user(self, u):
        return user_post_count(self.seed, u)

    def random_user(self, rng):
        return rng.randrange(self.users)

    def random_post(self, rng):
        """Uniform over all posts: (u, k)."""
        i = rng.randrange(self.posts)
        u = bisect.bisect_right(self.cum, i)
        k = i - (self.cum[u - 1] if u else 0)
        return u, k


# ---------------------------------------------------------------- statistics


# After a write run drains, the publisher must publish the head of that
# moment within this time (driver.py publish_catchup, report.py).
PUBLISH_CATCHUP_TIMEOUT_S = 5.0


def percentile(sorted_values, p):
    """Nearest-rank percentile of an ascending list (p in 0..100)."""
    if not sorted_values:
        return None
    k = max(0, min(len(sorted_values) - 1, int(-(-p * len(sorted_values) // 100)) - 1))
    return sorted_values[k]


def parse_prometheus(text_):
    """{(name, frozenset(labels.items())): value} of a text exposition."""
    out = {}
    for line in text_.splitlines():
        if not line or line.startswith("#"):
            continue
        try:
            name_labels, value = line.rsplit(" ", 1)
            value = float(value)
        except ValueError:
            continue
        if "{" in name_labels:
            name, rest = name_labels.split("{", 1)
            labels = {}
            for part in _split_labels(rest.rstrip("}")):
                k, _, v = part.partition("=")
                labels[k] = v.strip('"')
        else:
            name, labels = name_labels, {}
        out[(name, frozenset(labels.items()))] = value
    return out


def _split_labels(s):
    parts, cur, inq = [], [], False
    for ch in s:
        if ch == '"':
            inq = not inq
        if ch == "," and not inq:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if cur:
        parts.append("".join(cur))
    return parts


def histogram(metrics, name, match=None):
    """Cumulative buckets [(le, count)] summed over series whose labels
    include `match`."""
    acc = {}
    for (n, labels), v in metrics.items():
        if n != name + "_bucket":
            continue
        d = dict(labels)
        if match and any(d.get(k) != val for k, val in match.items()):
            continue
        le = float("inf") if d["le"] == "+Inf" else float(d["le"])
        acc[le] = acc.get(le, 0.0) + v
    return sorted(acc.items())


def histogram_diff(after, before):
    b = dict(before)
    return [(le, c - b.get(le, 0.0)) for le, c in after]


def histogram_quantile(buckets, qv):
    """Prometheus-style quantile (linear inside the bucket)."""
    if not buckets or buckets[-1][1] <= 0:
        return None
    total = buckets[-1][1]
    rank = qv * total
    prev_le, prev_c = 0.0, 0.0
    for le, c in buckets:
        if c >= rank:
            if le == float("inf"):
                return float("inf")   # above the largest finite bucket
            if c == prev_c:
                return le
            return prev_le + (le - prev_le) * (rank - prev_c) / (c - prev_c)
        prev_le, prev_c = le, c
    return prev_le


# ---------------------------------------------------------------- CPU accounting

TICK = os.sysconf("SC_CLK_TCK")


def machine_cpu():
    with open("/proc/stat") as f:
        v = list(map(int, f.readline().split()[1:9]))
    user, nice, system, idle, iowait, irq, softirq, steal = v
    return (user + nice + system + irq + softirq) / TICK


def tree_cpu(roots):
    """CPU seconds of the processes in `roots` and their live descendants."""
    parent, cpu = {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                st = f.read()
        except OSError:
            continue
        fields = st[st.rindex(")") + 2:].split()
        parent[int(entry)] = int(fields[1])
        cpu[int(entry)] = (int(fields[11]) + int(fields[12])) / TICK
    roots = set(roots)
    total = 0.0
    for pid, seconds in cpu.items():
        p = pid
        while p > 1 and p not in roots:
            p = parent.get(p, 0)
        if p in roots:
            total += seconds
    return total


class CpuWatch:
    """Cores used by our process tree and by everything else, over a span."""

    def __init__(self, roots=None):
        self.roots = roots or [os.getpid()]

    def __enter__(self):
        self.m0, self.t0, self.w0 = machine_cpu(), tree_cpu(self.roots), time.monotonic()
        return self

    def __exit__(self, *exc):
        self.m1, self.t1, self.w1 = machine_cpu(), tree_cpu(self.roots), time.monotonic()
        wall = max(1e-6, self.w1 - self.w0)
        self.mine = (self.t1 - self.t0) / wall
        self.bg = max(0.0, (self.m1 - self.m0) / wall - self.mine)
        return False


def wait_idle(roots, limit_s, threshold=0.25):
    """Waits up to limit_s for other processes to use < threshold cores."""
    deadline = time.monotonic() + limit_s
    others = 0.0
    while limit_s > 0:
        m0, t0 = machine_cpu(), tree_cpu(roots)
        time.sleep(0.5)
        m1, t1 = machine_cpu(), tree_cpu(roots)
        others = ((m1 - m0) - (t1 - t0)) / 0.5
        if others < threshold or time.monotonic() >= deadline:
            break
    return others


# ---------------------------------------------------------------- daemon state


def processors_status(conn):
    status, _, body = conn.get("/v1/processors")
    if status != 200:
        raise HttpError("GET /v1/processors -> %d" % status)
    return json.loads(body)["processors"]


def settle(api, metrics_api=None, timeout=600, want_compaction=True, log=print):
    """Waits until every processor has applied the head (lag 0) and, if asked,
    RocksDB has no pending compaction. Returns seconds waited."""
    c = Conn(api)
    t0 = time.monotonic()
    last = None
    try:
        while True:
            procs = processors_status(c)
            lag = sum(p["lag"]["changes"] for p in procs)
            pending = 0.0
            if want_compaction and metrics_api:
                m = Conn(metrics_api)
                try:
                    _, _, body = m.get("/metrics")
                finally:
                    m.close()
                pm = parse_prometheus(body.decode())
                pending = pm.get(("feedd_rocksdb_pending_compaction_bytes", frozenset()), 0.0)
            if lag == 0 and pending == 0:
                return time.monotonic() - t0
            now = time.monotonic()
            if last is None or now - last > 10:
                log("  settling: processor lag %d changes, pending compaction %.0f MiB"
                    % (lag, pending / 2**20))
                last = now
            if now - t0 > timeout:
                log("  settle: gave up after %d s (lag %d, pending %.0f MiB)"
                    % (timeout, lag, pending / 2**20))
                return time.monotonic() - t0
            time.sleep(0.25)
    finally:
        c.close()
