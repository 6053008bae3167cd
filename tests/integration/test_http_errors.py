"""Bad input over HTTP: the right status and error code, and nothing written.

Every case checks the error body {"error":{"code","message"}}, that the change
feed head did not move, and that no item appeared.
"""

import http.client
import json
import re
import resource
import signal
import socket
import subprocess
import threading
import time
import unittest
import urllib.request
import uuid

from feedd_harness import (FeeddDaemon, FeeddTestCase, SharedDaemonTestCase, feedd_binary,
                           item_path, items_path, q)

NOT_A_CONTAINER = "nosuchcontainer"


def uid(prefix):
    return "%s-%s" % (prefix, uuid.uuid4().hex[:12])


def recv_all(sock):
    """Everything the peer sends until it closes (a reset ends it too)."""
    data = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return data
        if not chunk:
            return data
        data += chunk


def metrics_text(daemon, timeout=10):
    conn = http.client.HTTPConnection(*daemon.ready["metrics"].rsplit(":", 1), timeout=timeout)
    try:
        conn.request("GET", "/metrics")
        resp = conn.getresponse()
        body = resp.read().decode()
        if resp.status != 200:
            raise AssertionError("/metrics answered %d: %s" % (resp.status, body[:200]))
        return body
    finally:
        conn.close()


def metric_value(text, name, labels=""):
    """The value of `name{labels}` in Prometheus text (0 when absent)."""
    pattern = r"^%s%s (\S+)$" % (re.escape(name), re.escape("{%s}" % labels) if labels else "")
    m = re.search(pattern, text, re.M)
    return float(m.group(1)) if m else 0.0


def wait_for(condition, what, timeout_s=20.0):
    """Polls `condition` until it is true; fails after timeout_s."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(0.02)


class _ErrorsBase(SharedDaemonTestCase):
    daemon_name = "feedd-errors"
    daemon_args = ("--processors.enabled=false",)

    def setUp(self):
        super().setUp()
        self.head = self.c.wait_quiescent()

    def assertNothingWritten(self, *keys, what=""):
        """The head LSN did not move and none of (container, pk, id) exists."""
        checker = self.daemon.client()
        try:
            self.assertEqual(checker.head_lsn(), self.head, "%s: the change feed head moved" % what)
            for container, pk, item_id in keys:
                r = checker.read(container, pk, item_id)
                self.assertEqual(r[0], 404, "%s: item %s/%s/%s exists: %r"
                                 % (what, container, pk, item_id, r[2]))
        finally:
            checker.close()

    def expect(self, resp, status, code, *keys, what=""):
        self.assertError(resp, status, code, what)
        self.assertNothingWritten(*keys, what=what)


class HttpErrorsTest(_ErrorsBase):
    def test_malformed_json(self):
        pk, item_id = uid("p"), uid("i")
        for what, raw in [
            ("truncated", b'{"id":"%s","postId":"%s"' % (item_id.encode(), pk.encode())),
            ("trailing garbage", b'{"id":"%s","postId":"%s"} x' % (item_id.encode(), pk.encode())),
            ("single quotes", b"{'id':'%s','postId':'%s'}" % (item_id.encode(), pk.encode())),
            ("trailing comma", b'{"id":"%s","postId":"%s",}' % (item_id.encode(), pk.encode())),
            ("empty body", b""),
            ("not json at all", b"hello"),
        ]:
            with self.subTest(what):
                self.expect(self.c.create("posts", raw), 400, "invalid_json",
                            ("posts", pk, item_id), what="POST " + what)
                self.expect(self.c.upsert("posts", pk, item_id, raw), 400, "invalid_json",
                            ("posts", pk, item_id), what="PUT " + what)
        existing = self.c.create("posts", {"id": item_id, "postId": pk})
        self.assertStatus(existing, 201)
        self.head = self.c.wait_quiescent()
        self.expect(self.c.request("PATCH", item_path("posts", pk, item_id), b'{"operations":[}'),
                    400, "invalid_json", what="PATCH malformed")
        self.expect(self.c.request("POST", "/v1/containers/posts/partitions/%s/batch" % q(pk),
                                   b'{"operations":['), 400, "invalid_json", what="batch malformed")
        self.expect(self.c.request("POST", "/v1/containers/posts/query", b'{"filter":'),
                    400, "invalid_json", what="query malformed")
        self.assertEqual(self.c.read("posts", pk, item_id)[2], existing[2])

    def test_invalid_utf8(self):
        pk, item_id = uid("p"), uid("i")
        for what, bad in [("0xff", b"\xff"), ("truncated sequence", b"\xc3"), ("overlong", b"\xc0\xaf"),
                          ("surrogate encoded", b"\xed\xa0\x80")]:
            with self.subTest(what):
                raw = b'{"id":"%s","postId":"%s","title":"a%sb"}' % (item_id.encode(), pk.encode(), bad)
                self.expect(self.c.create("posts", raw), 400, "invalid_json",
                            ("posts", pk, item_id), what="invalid UTF-8 " + what)
                raw = b'{"id":"%s","postId":"%s","k%s":1}' % (item_id.encode(), pk.encode(), bad)
                self.expect(self.c.create("posts", raw), 400, "invalid_json",
                            ("posts", pk, item_id), what="invalid UTF-8 in a name " + what)

    def test_item_over_max_item_bytes_default(self):
        pk, item_id = uid("p"), uid("i")
        big = {"id": item_id, "postId": pk, "blob": "x" * (2 * 1024 * 1024 + 10)}
        self.expect(self.c.create("posts", big), 413, "payload_too_large", ("posts", pk, item_id),
                    what="item over 2 MiB")
        self.expect(self.c.upsert("posts", pk, item_id, big), 413, "payload_too_large",
                    ("posts", pk, item_id), what="PUT item over 2 MiB")

    def test_non_object_bodies(self):
        for what, raw in [("array", b'[{"id":"a","postId":"b"}]'), ("string", b'"x"'), ("number", b"42"),
                          ("null", b"null"), ("true", b"true")]:
            with self.subTest(what):
                self.expect(self.c.create("posts", raw), 400, "invalid_item", what="POST " + what)
                self.expect(self.c.upsert("posts", "b", "a", raw), 400, "invalid_item",
                            ("posts", "b", "a"), what="PUT " + what)

    def test_bad_ids(self):
        pk = uid("p")
        cases = [
            ("empty", ""),
            ("256 bytes", "a" * 256),
            ("256 bytes of 2-byte chars", "é" * 128),
            ("slash", "a/b"),
            ("backslash", "a\\b"),
            ("question mark", "a?b"),
            ("hash", "a#b"),
            ("control char", "a\x01b"),
            ("newline", "a\nb"),
            ("DEL", "a\x7fb"),
        ]
        for what, bad in cases:
            with self.subTest(what):
                self.expect(self.c.create("posts", {"id": bad, "postId": pk}), 400, "invalid_id",
                            what="id " + what)
                r = self.c.batch("posts", pk, [{"op": "create", "body": {"id": bad, "postId": pk}}])
                self.expect(r, 400, "invalid_id", what="batch id " + what)
        for what, bad in [("number", 12), ("null", None), ("object", {"a": 1}), ("array", ["a"]),
                          ("bool", True)]:
            with self.subTest(what):
                self.expect(self.c.create("posts", {"id": bad, "postId": pk}), 400, "invalid_id",
                            what="id " + what)
        self.assertNothingWritten()

    def test_missing_id(self):
        self.expect(self.c.create("posts", {"postId": uid("p"), "title": "no id"}), 400, "invalid_id",
                    what="item without id")

    def test_bad_partition_keys(self):
        item_id = uid("i")
        for what, body in [
            ("missing", {"id": item_id, "title": "x"}),
            ("number", {"id": item_id, "postId": 7}),
            ("null", {"id": item_id, "postId": None}),
            ("object", {"id": item_id, "postId": {"a": "b"}}),
            ("array", {"id": item_id, "postId": ["a"]}),
            ("bool", {"id": item_id, "postId": False}),
        ]:
            with self.subTest(what):
                self.expect(self.c.create("posts", body), 400, "invalid_partition_key",
                            what="partition key " + what)
        self.expect(self.c.create("feed", {"id": item_id, "kind": "post"}), 400, "invalid_partition_key",
                    ("feed", "post", item_id), what="feed item without /type")
        self.expect(self.c.create("users", {"id": item_id, "userId": 5}), 400, "invalid_partition_key",
                    ("users", "5", item_id), what="users item with a numeric /userId")

    def test_partition_key_mismatch(self):
        pk, item_id = uid("p"), uid("i")
        body = {"id": item_id, "postId": pk + "-body"}
        self.expect(self.c.upsert("posts", pk, item_id, body), 400, "partition_key_mismatch",
                    ("posts", pk, item_id), ("posts", pk + "-body", item_id), what="PUT pk path != body")
        r = self.c.batch("posts", pk, [{"op": "upsert", "body": body}])
        self.expect(r, 400, "partition_key_mismatch", ("posts", pk, item_id),
                    ("posts", pk + "-body", item_id), what="batch pk != body")

    def test_put_id_mismatch(self):
        pk, item_id = uid("p"), uid("i")
        self.expect(self.c.upsert("posts", pk, item_id, {"id": item_id + "-x", "postId": pk}), 400,
                    "invalid_id", ("posts", pk, item_id), ("posts", pk, item_id + "-x"),
                    what="PUT id path != body")

    def test_unknown_container(self):
        pk, item_id = uid("p"), uid("i")
        body = {"id": item_id, "postId": pk}
        c = self.c
        for what, resp in [
            ("POST", c.create(NOT_A_CONTAINER, body)),
            ("PUT", c.upsert(NOT_A_CONTAINER, pk, item_id, body)),
            ("GET", c.read(NOT_A_CONTAINER, pk, item_id)),
            ("PATCH", c.patch(NOT_A_CONTAINER, pk, item_id, [{"op": "set", "path": "/a", "value": 1}])),
            ("DELETE", c.delete(NOT_A_CONTAINER, pk, item_id)),
            ("batch", c.batch(NOT_A_CONTAINER, pk, [{"op": "create", "body": body}])),
            ("query", c.query(NOT_A_CONTAINER, {})),
        ]:
            with self.subTest(what):
                self.expect(resp, 404, "container_not_found", what="unknown container " + what)

    def test_wrong_method(self):
        pk, item_id = uid("p"), uid("i")
        for method, path in [
            ("DELETE", "/v1/containers"),
            ("POST", "/v1/containers"),
            ("GET", items_path("posts")),
            ("DELETE", items_path("posts")),
            ("POST", item_path("posts", pk, item_id)),
            ("GET", "/v1/containers/posts/query"),
            ("GET", "/v1/containers/posts/partitions/%s/batch" % q(pk)),
            ("POST", "/v1/changefeed"),
            ("PUT", "/v1/feed"),
            ("POST", "/healthz"),
        ]:
            with self.subTest(method=method, path=path):
                body = {"id": item_id, "postId": pk} if method in ("POST", "PUT") else None
                r = self.c.request(method, path, body)
                self.expect(r, 405, "method_not_allowed", ("posts", pk, item_id),
                            what="%s %s" % (method, path))
                self.assertTrue(r[1].get("Allow"), "405 without an Allow header for %s %s" % (method, path))

    def test_wrong_content_type(self):
        pk, item_id = uid("p"), uid("i")
        body = {"id": item_id, "postId": pk}
        for ctype in ("text/plain", "application/x-www-form-urlencoded", "application/xml"):
            with self.subTest(ctype):
                self.expect(self.c.create("posts", body, headers={"Content-Type": ctype}), 415,
                            "unsupported_media_type", ("posts", pk, item_id), what="POST " + ctype)
                self.expect(self.c.upsert("posts", pk, item_id, body, headers={"Content-Type": ctype}),
                            415, "unsupported_media_type", ("posts", pk, item_id), what="PUT " + ctype)
        # docs/api.md: parameters are allowed, a missing Content-Type is JSON.
        r = self.c.create("posts", body, headers={"Content-Type": "application/json; charset=utf-8"})
        self.assertStatus(r, 201, "Content-Type with a charset parameter")
        other = {"id": uid("i"), "postId": pk}
        r = self.c.create("posts", other, headers={"Content-Type": None})
        self.assertStatus(r, 201, "no Content-Type")

    def test_bad_changefeed_parameters(self):
        for what, qs, code in [
            ("from=garbage", "from=garbage", "invalid_request"),
            ("from negative", "from=-1", "invalid_request"),
            ("from empty", "from=", "invalid_request"),
            ("limit 0", "from=beginning&limit=0", "invalid_request"),
            ("limit too big", "from=beginning&limit=10001", "invalid_request"),
            ("limit text", "from=beginning&limit=abc", "invalid_request"),
            ("waitMs too big", "from=now&waitMs=30001", "invalid_request"),
            ("waitMs negative", "from=now&waitMs=-5", "invalid_request"),
        ]:
            with self.subTest(what):
                self.expect(self.c.request("GET", "/v1/changefeed?" + qs), 400, code, what=what)
        self.expect(self.c.request("GET", "/v1/changefeed?from=beginning&container=" + NOT_A_CONTAINER),
                    404, "container_not_found", what="changefeed of an unknown container")

    def test_unknown_paths(self):
        for path in ("/", "/v1", "/v2/containers", "/v1/containers/posts/itemz",
                     "/v1/containers/posts/items/a/b/c", "/nope", "/v1/containers/posts/partitions/p"):
            with self.subTest(path):
                self.expect(self.c.request("GET", path), 404, "not_found", what="GET " + path)

    def test_bad_percent_escape(self):
        self.expect(self.c.request("GET", "/v1/containers/posts/items/%zz/a"), 400, "invalid_request",
                    what="bad percent escape")
        self.expect(self.c.request("PUT", "/v1/containers/posts/items/p/%2", {"id": "%2", "postId": "p"}),
                    400, "invalid_request", ("posts", "p", "%2"), what="truncated percent escape")

    def test_refused_requests_count_under_their_route_template(self):
        # The route matched from the head labels the request, whatever
        # answers it: the router, or an import stream that refuses it.
        cases = [
            ("GET", "/v1/containers/posts/items/%zz/a", None, 400, "other"),
            ("GET", "/nope", None, 404, "other"),
            ("DELETE", "/v1/containers", None, 405, "/v1/containers"),
            ("GET", "/v1/containers/%s/items/p/a" % NOT_A_CONTAINER, None, 404,
             "/v1/containers/{c}/items/{pk}/{id}"),
            ("POST", "/v1/containers/%s/import" % NOT_A_CONTAINER, {"id": "a"}, 404,
             "/v1/containers/{c}/import"),
        ]
        labels = ['method="%s",route="%s",status="%d"' % (method, route, status)
                  for method, _, _, status, route in cases]
        before = metrics_text(self.daemon)
        for method, path, body, status, _ in cases:
            self.assertStatus(self.c.request(method, path, body), status, "%s %s" % (method, path))
        after = metrics_text(self.daemon)
        for label in labels:
            with self.subTest(label):
                self.assertEqual(metric_value(after, "feedd_http_requests_total", label)
                                 - metric_value(before, "feedd_http_requests_total", label), 1)

    def test_invalid_utf8_in_the_path(self):
        # A percent-encoded id or partition key that is not UTF-8 is refused,
        # and no error message echoes the raw bytes (the body stays JSON).
        body = {"id": "a", "postId": "p"}
        for method in ("GET", "PUT", "PATCH", "DELETE"):
            with self.subTest(method):
                payload = {"operations": [{"op": "set", "path": "/a", "value": 1}]} \
                    if method == "PATCH" else (body if method == "PUT" else None)
                self.expect(self.c.request(method, "/v1/containers/posts/items/p/a%E2%82", payload),
                            400, "invalid_id", what=method + " invalid UTF-8 id")
                self.expect(self.c.request(method, "/v1/containers/posts/items/%FF/a", payload),
                            400, "invalid_partition_key", what=method + " invalid UTF-8 pk")
        self.expect(self.c.request("POST", "/v1/containers/posts/partitions/%C0%AF/batch",
                                   {"operations": [{"op": "create", "body": body}]}),
                    400, "invalid_partition_key", what="batch on an invalid UTF-8 pk")
        r = self.c.request("GET", "/v1/containers/x%FF/items/p/a")
        self.expect(r, 404, "container_not_found", what="invalid UTF-8 container name")
        self.assertIn("\ufffd", r[2]["error"]["message"])
        self.expect(self.c.request("GET", "/v1/x%E2%82"), 404, "not_found",
                    what="invalid UTF-8 in an unknown path")

    def test_bad_if_match_and_batch_shape(self):
        pk, item_id = uid("p"), uid("i")
        self.expect(self.c.batch("posts", pk, [5]), 400, "invalid_request", what="batch op not an object")
        self.expect(self.c.request("GET", item_path("posts", pk, item_id),
                                   headers={"X-Feedd-Min-Lsn": "abc"}), 400, "invalid_request",
                    what="X-Feedd-Min-Lsn not a number")

    def test_errors_keep_the_connection_usable(self):
        for _ in range(20):
            self.assertError(self.c.create("posts", b"{bad"), 400, "invalid_json")
            self.assertError(self.c.read("posts", "p", "missing-" + uuid.uuid4().hex), 404, "not_found")
        self.assertEqual(self.c.connects, 1)
        self.assertNothingWritten()


def nested(depth, leaf=None):
    """A JSON value nesting `depth` arrays (depth 0: `leaf`)."""
    value = leaf
    for _ in range(depth):
        value = [] if value is None else [value]
    return value


class JsonLimitsTest(_ErrorsBase):
    """Numbers and nesting the API accepts can be read back by every reader:
    the commit pipeline, the Kafka publisher (re-encoding envelopes over
    kafka.max_envelope_bytes) and the processors (docs/api.md, "Numbers and
    nesting")."""

    daemon_args = ("--kafka.max_envelope_bytes=1024",)
    MAX_DEPTH = 64

    def wait_published(self):
        """Waits until the publisher has handled every change, then checks the
        daemon is still up."""
        head = self.c.head_lsn()
        deadline = time.monotonic() + 30
        while self.c.feed_info().get("publishedLsn") is None or self.c.feed_info()["publishedLsn"] < head:
            self.assertTrue(self.daemon.alive(), "feedd exited:\n" + self.daemon.logs())
            self.assertLess(time.monotonic(), deadline, "the publisher did not reach LSN %d" % head)
            time.sleep(0.05)
        self.assertTrue(self.daemon.alive(), "feedd exited:\n" + self.daemon.logs())
        self.assertStatus(self.c.request("GET", "/healthz"), 200)

    def test_non_finite_numbers_are_refused(self):
        blob = "x" * 2000  # over kafka.max_envelope_bytes: the publisher re-encodes
        for what, literal in [("1e309", "1e309"), ("-1e400", "-1e400"), ("1E999", "[1E999]")]:
            with self.subTest(what):
                item_id = uid("b")
                raw = '{"id":"%s","userId":"%s","v":%s,"blob":"%s"}' % (item_id, item_id, literal, blob)
                self.expect(self.c.create("users", raw), 400, "invalid_number",
                            ("users", item_id, item_id), what="POST " + what)
                self.expect(self.c.upsert("users", item_id, item_id, raw), 400, "invalid_number",
                            ("users", item_id, item_id), what="PUT " + what)
                r = self.c.request("POST", "/v1/containers/users/partitions/%s/batch" % q(item_id),
                                   '{"operations":[{"op":"create","body":%s}]}' % raw)
                self.expect(r, 400, "invalid_number", ("users", item_id, item_id), what="batch " + what)
        # The extremes of int64 and uint64 are kept exactly.
        item_id = uid("b")
        raw = ('{"id":"%s","userId":"%s","min":-9223372036854775808,"max":18446744073709551615,'
               '"blob":"%s"}' % (item_id, item_id, blob))
        self.assertStatus(self.c.create("users", raw), 201)
        self.c.read("users", item_id, item_id)
        self.assertIn(b'"min":-9223372036854775808,"max":18446744073709551615', self.c.last_raw)
        self.wait_published()

    def test_incr_out_of_range(self):
        item_id = uid("n")
        body = {"id": item_id, "userId": item_id, "n": 2 ** 63 - 1, "m": -2 ** 63, "u": 2 ** 64 - 1, "d": 1e308}
        self.assertStatus(self.c.create("users", body), 201)
        before = self.c.read("users", item_id, item_id)[2]
        self.head = self.c.wait_quiescent()
        for what, ops, code in [
            ("int64 min - 1", [{"op": "incr", "path": "/m", "value": -1}], "invalid_number"),
            ("uint64 max + 1", [{"op": "incr", "path": "/u", "value": 1}], "invalid_number"),
            ("1e308 + 1e308", [{"op": "incr", "path": "/d", "value": 1e308}], "invalid_number"),
            ("set 1e309", '{"operations":[{"op":"set","path":"/x","value":1e309}]}', "invalid_number"),
        ]:
            with self.subTest(what):
                if isinstance(ops, str):
                    r = self.c.request("PATCH", item_path("users", item_id, item_id), ops)
                else:
                    r = self.c.patch("users", item_id, item_id, ops)
                self.expect(r, 400, code, what="PATCH " + what)
                if not isinstance(ops, str):
                    r = self.c.batch("users", item_id, [{"op": "patch", "id": item_id, "operations": ops}])
                    self.expect(r, 400, code, what="batch patch " + what)
        self.assertEqual(self.c.read("users", item_id, item_id)[2], before)
        # int64 max + 1 fits uint64: an exact integer, not 9.223372036854776E18.
        r = self.c.patch("users", item_id, item_id, [{"op": "incr", "path": "/n", "value": 1}])
        self.assertStatus(r, 200, "int64 max + 1")
        self.assertIn(b'"n":9223372036854775808,', self.c.last_raw)
        self.wait_published()

    def test_deep_items_round_trip(self):
        user, post = uid("u"), uid("p")
        deep = nested(self.MAX_DEPTH - 1, 7)  # the item itself is the 64th level
        body = {"id": post, "postId": post, "type": "post", "userId": user, "title": "t",
                "content": "c", "creationDate": "2026-11-24T10:00:00Z", "deep": deep}
        r = self.c.create("posts", body)
        self.assertStatus(r, 201, "an item nesting %d levels" % self.MAX_DEPTH)
        lsn = self.assertLsnHeader(r)
        self.assertEqual(self.c.read("posts", post, post)[2]["deep"], deep)
        status, _, page = self.c.changefeed("posts", start=lsn, limit=1)
        self.assertEqual(status, 200)
        self.assertEqual(page["changes"][0]["after"]["deep"], deep)
        # The user_posts processor copies the post into `users`.
        r = self.c.read("users", user, post, headers={"X-Feedd-Min-Lsn": str(lsn),
                                                      "X-Feedd-Wait-Ms": "20000"})
        self.assertStatus(r, 200, "the processors' copy of the deep post")
        self.assertEqual(r[2]["deep"], deep)
        # Through a batch (the request nests 3 levels more) too.
        other = dict(body, id=uid("p2"))
        other["postId"] = post
        r = self.c.batch("posts", post, [{"op": "create", "body": other}])
        self.assertStatus(r, 200, "a batch creating a %d-level item" % self.MAX_DEPTH)
        _, _, processors = self.c.request("GET", "/v1/processors")
        for p in processors["processors"]:
            self.assertEqual(p["parked"], 0, "processor %s parked a change: %r" % (p["name"], p))
        self.wait_published()
        # One level more is refused, by a write or by a patch.
        self.head = self.c.wait_quiescent()
        too_deep = dict(body, id=uid("p3"), deep=nested(self.MAX_DEPTH, 7))
        self.expect(self.c.create("posts", too_deep), 400, "invalid_json", ("posts", post, too_deep["id"]),
                    what="an item nesting %d levels" % (self.MAX_DEPTH + 1))
        r = self.c.patch("posts", post, post,
                         [{"op": "set", "path": "/more", "value": nested(self.MAX_DEPTH, 7)}])
        self.expect(r, 400, "invalid_json", what="a patch nesting the item %d levels" % (self.MAX_DEPTH + 1))


class QueryFiltersDefaultTest(_ErrorsBase):
    """query.max_filters at its default (16)."""

    def test_too_many_filters(self):
        filters = {"f%d" % i: i for i in range(17)}
        r = self.c.query("posts", {"filter": filters})
        self.assertError(r, 400, "query_too_expensive", "17 filters")
        self.assertIn("query.max_filters", r[2]["error"]["message"])
        self.assertEqual(r[2]["error"]["cost"]["itemsRead"], 0)
        del filters["f16"]
        self.assertStatus(self.c.query("posts", {"filter": filters}), 200, "16 filters")
        # 30,000 filters: refused without reading anything either.
        r = self.c.query("posts", {"filter": {"f%d" % i: i for i in range(30000)}})
        self.assertError(r, 400, "query_too_expensive", "30,000 filters")
        self.assertEqual(r[2]["error"]["cost"]["bytesRead"], 0)


class QueryAndPageLimitsTest(_ErrorsBase):
    """Small query budget and page byte caps."""

    PAGE_BYTES = 20000
    daemon_args = ("--processors.enabled=false", "--query.max_items_read=50",
                   "--query.max_page_bytes=%d" % PAGE_BYTES,
                   "--feed.max_page_bytes=%d" % PAGE_BYTES)

    def test_query_over_budget_answers_its_cost(self):
        for i in range(60):
            pk = uid("p")
            self.assertStatus(self.c.create("posts", {"id": pk, "postId": pk, "type": "draft"}),
                              201, "create")
        # A full scan that matches nothing reads every item: past the budget.
        r = self.c.query("posts", {"filter": {"type": "no-such-type"}})
        self.assertError(r, 400, "query_too_expensive", "full scan of 60+ items")
        cost = r[2]["error"]["cost"]
        self.assertEqual(cost["itemsRead"], 51, "it stops at the first item past the budget")
        self.assertGreater(cost["bytesRead"], 0)
        self.assertEqual(cost["partitionsScanned"], 51)
        self.assertIn("query.max_items_read", r[2]["error"]["message"])
        # A partition query within the budget still answers.
        pk = uid("p")
        self.assertStatus(self.c.create("posts", {"id": pk, "postId": pk}), 201, "create")
        status, _, body = self.c.query("posts", {"partitionKey": pk})
        self.assertEqual(status, 200, body)
        self.assertEqual(len(body["items"]), 1)

    def test_query_pages_are_cut_by_bytes(self):
        kind = uid("kind")  # one partition of `feed` (partition key /type)
        ids = ["i%02d" % i for i in range(12)]
        for n, item_id in enumerate(ids):
            item = {"id": item_id, "type": kind, "pad": "x" * (3000 + 500 * n)}
            self.assertStatus(self.c.create("feed", item, headers={"X-Feedd-Override": "derived"}),
                              201, "create")
        for spec in ({}, {"orderBy": "id", "descending": True}):
            got, pages = [], 0
            query = dict(spec, partitionKey=kind, limit=1000)
            while True:
                pages += 1
                self.assertLess(pages, 20)
                status, _, body = self.c.query("feed", query)
                self.assertEqual(status, 200, body)
                self.assertTrue(body["items"], "a page holds at least one item")
                size = sum(len(json.dumps(i, separators=(",", ":"))) for i in body["items"])
                if len(body["items"]) > 1:
                    self.assertLessEqual(size, self.PAGE_BYTES, "page %d of %r" % (pages, spec))
                got.extend(i["id"] for i in body["items"])
                if body["continuation"] is None:
                    break
                query["continuation"] = body["continuation"]
            want = sorted(ids, reverse=bool(spec))
            self.assertEqual(got, want, spec)
            self.assertGreaterEqual(pages, 4, "~75 KB in pages of at most 20 KB")

    def test_changefeed_pages_are_cut_by_bytes(self):
        start = self.c.head_lsn() + 1
        lsns = []
        for n in range(12):
            u = uid("u")
            r = self.c.create("users", {"id": u, "userId": u, "pad": "y" * (3000 + 500 * n)})
            self.assertStatus(r, 201, "create")
            lsns.append(int(r[1]["X-Feedd-Lsn"]))
        got, pages, nxt = [], 0, start
        while nxt <= lsns[-1]:
            pages += 1
            self.assertLess(pages, 20)
            status, _, body = self.c.changefeed("users", nxt, limit=1000)
            self.assertEqual(status, 200, body)
            self.assertTrue(body["changes"], "a page holds at least one change")
            size = sum(len(json.dumps(c, separators=(",", ":"))) for c in body["changes"])
            if len(body["changes"]) > 1:
                self.assertLessEqual(size, self.PAGE_BYTES, "page %d" % pages)
            got.extend(c["lsn"] for c in body["changes"])
            self.assertGreater(int(body["next"]), nxt)
            nxt = int(body["next"])
        self.assertEqual(got, lsns, "every change, in LSN order, once")
        self.assertGreaterEqual(pages, 4)
        # A change larger than the cap still comes, alone on its page.
        u = uid("u")
        r = self.c.create("users", {"id": u, "userId": u, "pad": "z" * 30000})
        lsn = int(r[1]["X-Feedd-Lsn"])
        status, _, body = self.c.changefeed("users", lsn, limit=1000)
        self.assertEqual(status, 200, body)
        self.assertEqual([c["lsn"] for c in body["changes"]], [lsn])


class SmallLimitsTest(_ErrorsBase):
    """A daemon with small http.max_request_bytes and storage.max_item_bytes."""

    daemon_args = ("--processors.enabled=false", "--http.max_request_bytes=65536",
                   "--storage.max_item_bytes=16384")

    def test_body_over_max_request_bytes(self):
        pk, item_id = uid("p"), uid("i")
        body = {"id": item_id, "postId": pk, "blob": "y" * 70000}
        r = self.c.create("posts", body)
        self.expect(r, 413, "payload_too_large", ("posts", pk, item_id), what="request body over 64 KiB")

    def test_body_over_max_request_bytes_raw_socket(self):
        # A client announcing a huge body and sending more than the limit
        # gets its 413 without having to send the whole body.
        pk, item_id = uid("p"), uid("i")
        s = socket.create_connection((self.daemon.host, self.daemon.port), timeout=10)
        try:
            try:
                s.sendall(b"POST /v1/containers/posts/items HTTP/1.1\r\nHost: x\r\n"
                          b"Content-Type: application/json\r\nContent-Length: 1000000\r\n\r\n"
                          b'{"id":"' + item_id.encode() + b'","postId":"' + pk.encode() + b'","b":"'
                          + b"v" * 70000)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the daemon may answer and close before reading it all
            data = b""
            while b"\r\n\r\n" not in data:
                try:
                    chunk = s.recv(65536)
                except ConnectionResetError:
                    break
                if not chunk:
                    break
                data += chunk
        finally:
            s.close()
        self.assertTrue(data.startswith(b"HTTP/1.1 413"), "got %r" % data[:200])
        self.assertNothingWritten(("posts", pk, item_id))

    def test_item_over_max_item_bytes(self):
        pk, item_id = uid("p"), uid("i")
        body = {"id": item_id, "postId": pk, "blob": "z" * 20000}
        self.expect(self.c.create("posts", body), 413, "payload_too_large", ("posts", pk, item_id),
                    what="item over storage.max_item_bytes")
        r = self.c.batch("posts", pk, [{"op": "create", "body": body}])
        self.expect(r, 413, "payload_too_large", ("posts", pk, item_id), what="batch item over limit")
        # An item under the limit (system properties not counted) is accepted.
        ok = {"id": item_id, "postId": pk, "blob": "z" * 15000}
        self.assertStatus(self.c.create("posts", ok), 201, "item under storage.max_item_bytes")
        # A patch that grows it over the limit is refused and changes nothing.
        before = self.c.read("posts", pk, item_id)[2]
        self.head = self.c.wait_quiescent()
        r = self.c.patch("posts", pk, item_id, [{"op": "set", "path": "/more", "value": "w" * 5000}])
        self.assertError(r, 413, "payload_too_large", "patch growing the item over the limit")
        self.assertEqual(self.c.head_lsn(), self.head)
        self.assertEqual(self.c.read("posts", pk, item_id)[2], before)


class TransferEncodingTest(_ErrorsBase):
    """RFC 9112 6.1: only `chunked` (alone) is understood; anything else is
    refused, the connection closed, and the body never read as a request."""

    def send_raw(self, data):
        s = socket.create_connection((self.daemon.host, self.daemon.port), timeout=20)
        try:
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
            return recv_all(s)
        finally:
            s.close()

    def test_other_transfer_codings_are_refused_and_the_body_is_not_a_request(self):
        pk, victim = uid("p"), uid("victim")
        self.assertStatus(self.c.create("posts", {"id": victim, "postId": pk}), 201)
        self.head = self.c.wait_quiescent()
        hidden = ("DELETE %s HTTP/1.1\r\nHost: x\r\n\r\n" % item_path("posts", pk, victim)).encode()
        new_id = uid("i")
        item = json.dumps({"id": new_id, "postId": pk}).encode()
        chunked_item = b"%x\r\n%s\r\n0\r\n\r\n" % (len(item), item)
        for te, body in [(b"identity", hidden), (b"chunked, identity", hidden),
                         (b"gzip", hidden), (b"gzip, chunked", chunked_item),
                         (b"chunked, chunked", chunked_item)]:
            with self.subTest(te=te):
                data = self.send_raw(b"POST /v1/containers/posts/items HTTP/1.1\r\nHost: x\r\n"
                                     b"Content-Type: application/json\r\n"
                                     b"Transfer-Encoding: " + te + b"\r\n\r\n" + body)
                status = data[:12]
                self.assertIn(status, (b"HTTP/1.1 501", b"HTTP/1.1 400"), "got %r" % data[:300])
                self.assertEqual(data.count(b"HTTP/1.1 "), 1,
                                 "a second response: the body was parsed as a request: %r" % data)
                self.assertIn(b"Connection: close", data)
                self.assertNothingWritten(("posts", pk, new_id), what="Transfer-Encoding " + te.decode())
                self.assertStatus(self.c.read("posts", pk, victim), 200, "the hidden DELETE ran")
        # Both a Content-Length and a Transfer-Encoding: a smuggling attempt.
        data = self.send_raw(b"POST /v1/containers/posts/items HTTP/1.1\r\nHost: x\r\n"
                             b"Content-Type: application/json\r\nContent-Length: %d\r\n"
                             b"Transfer-Encoding: chunked\r\n\r\n%s" % (len(chunked_item), chunked_item))
        self.assertTrue(data.startswith(b"HTTP/1.1 400"), "got %r" % data[:300])
        self.assertNothingWritten(("posts", pk, new_id), what="Content-Length with Transfer-Encoding")

    def test_plain_chunked_still_works(self):
        # Any case, and with empty list elements, which RFC 9110 5.6.1 says
        # a recipient ignores.
        for te in (b"Chunked", b", chunked", b"chunked ,"):
            with self.subTest(te=te):
                pk, item_id = uid("p"), uid("i")
                item = json.dumps({"id": item_id, "postId": pk}).encode()
                data = self.send_raw(b"POST /v1/containers/posts/items HTTP/1.1\r\nHost: x\r\n"
                                     b"Content-Type: application/json\r\nTransfer-Encoding: " + te +
                                     b"\r\nConnection: close\r\n\r\n%x\r\n%s\r\n0\r\n\r\n"
                                     % (len(item), item))
                self.assertTrue(data.startswith(b"HTTP/1.1 201"), "got %r" % data[:300])
                self.assertStatus(self.c.read("posts", pk, item_id), 200)


class ConnectionLimitTest(_ErrorsBase):
    """http.max_connections: connections beyond it are answered 503 and closed."""

    daemon_args = ("--processors.enabled=false", "--http.max_connections=4")

    def test_connections_over_the_cap_are_refused_and_the_daemon_recovers(self):
        self.c.close()  # its kept-alive connection would count
        before = metric_value(metrics_text(self.daemon), "feedd_http_connections_rejected_total",
                              'reason="max_connections"')
        idle = [socket.create_connection((self.daemon.host, self.daemon.port), timeout=20)
                for _ in range(4)]
        try:
            wait_for(lambda: metric_value(metrics_text(self.daemon),
                                          "feedd_http_connections_open") == 4,
                     "4 open connections")
            extra = [socket.create_connection((self.daemon.host, self.daemon.port), timeout=20)
                     for _ in range(3)]
            for s in extra:
                data = recv_all(s)
                s.close()
                self.assertTrue(data.startswith(b"HTTP/1.1 503"), "got %r" % data[:300])
                self.assertIn(b"http.max_connections", data)
                self.assertIn(b"Retry-After", data)
            text = metrics_text(self.daemon)
            self.assertEqual(metric_value(text, "feedd_http_connections_rejected_total",
                                          'reason="max_connections"') - before, 3)
        finally:
            for s in idle:
                s.close()

        def healthy():
            c = self.daemon.client(timeout=20)
            try:
                return c.request("GET", "/healthz")[0] == 200
            except (ConnectionError, http.client.HTTPException):
                return False
            finally:
                c.close()
        wait_for(healthy, "/healthz once the idle connections closed")

    def test_max_connections_must_fit_the_open_files_limit(self):
        def check(max_connections):
            return subprocess.run(
                [feedd_binary(), "--check-config", "--http.max_connections=%d" % max_connections],
                preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024)),
                stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
        r = check(900)
        self.assertEqual(r.returncode, 2, r)
        self.assertIn("http.max_connections", r.stderr)
        self.assertIn("ulimit -n", r.stderr)
        r = check(700)
        self.assertEqual(r.returncode, 0, r)


class BufferedBodyLimitTest(_ErrorsBase):
    """http.max_buffered_bytes bounds the request bodies held across connections."""

    daemon_args = ("--processors.enabled=false", "--http.max_request_bytes=200000",
                   "--http.max_buffered_bytes=300000")

    def start_body(self, length, chunk=b"x" * 1000):
        s = socket.create_connection((self.daemon.host, self.daemon.port), timeout=20)
        s.sendall(b"POST /v1/containers/posts/items HTTP/1.1\r\nHost: x\r\n"
                  b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (length, chunk))
        return s

    def test_unfinished_bodies_over_the_cap_are_refused(self):
        gauge = lambda: metric_value(metrics_text(self.daemon), "feedd_http_buffered_body_bytes")
        refused = lambda: metric_value(metrics_text(self.daemon), "feedd_http_requests_refused_total",
                                       'reason="max_buffered_bytes"')
        before = refused()
        held = [self.start_body(150000), self.start_body(140000)]
        try:
            wait_for(lambda: gauge() == 290000, "290000 buffered body bytes")
            s = self.start_body(20000)
            data = recv_all(s)
            s.close()
            self.assertTrue(data.startswith(b"HTTP/1.1 503"), "got %r" % data[:300])
            self.assertIn(b"Retry-After", data)
            self.assertIn(b"http.max_buffered_bytes", data)
            self.assertEqual(refused() - before, 1)
            # A chunked body is counted as it grows.
            s = socket.create_connection((self.daemon.host, self.daemon.port), timeout=20)
            s.sendall(b"POST /v1/containers/posts/items HTTP/1.1\r\nHost: x\r\n"
                      b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                      b"%x\r\n%s\r\n" % (20000, b"y" * 20000))
            data = recv_all(s)
            s.close()
            self.assertTrue(data.startswith(b"HTTP/1.1 503"), "got %r" % data[:300])
            self.assertEqual(refused() - before, 2)
        finally:
            for s in held:
                s.close()
        wait_for(lambda: gauge() == 0, "the buffered bytes released")
        pk, item_id = uid("p"), uid("i")
        self.assertStatus(self.c.create("posts", {"id": item_id, "postId": pk, "b": "z" * 100000}), 201)


class MetricsSlowClientsTest(_ErrorsBase):
    """Idle connections to the metrics port do not block /metrics for long."""

    def test_idle_metrics_connections_time_out(self):
        host, port = self.daemon.ready["metrics"].rsplit(":", 1)
        idle = [socket.create_connection((host, int(port)), timeout=20) for _ in range(4)]
        try:
            # The metrics port serves while they idle, and drops them after
            # metrics.request_timeout_ms (3 s), below this client's timeout.
            self.assertIn("feedd_http_requests_total", metrics_text(self.daemon, timeout=15))
        finally:
            for s in idle:
                s.close()

    def test_a_taken_metrics_port_is_a_clear_start_up_error(self):
        other = FeeddDaemon(extra_args=("--processors.enabled=false",), name="feedd-metrics-port")
        try:
            base = other.command

            def command():
                cmd = base()
                cmd[cmd.index("--metrics-listen") + 1] = self.daemon.ready["metrics"]
                return cmd
            other.command = command
            with self.assertRaises(AssertionError):
                other.start()
            logs = other.logs()
            self.assertIn("metrics.listen", logs)
            self.assertIn("Address already in use", logs)
        finally:
            other.cleanup()


class ShutdownAnswersWaitsTest(FeeddTestCase):
    """SIGTERM answers parked long polls and read-your-writes waits at once."""

    def test_sigterm_answers_a_long_poll_and_a_min_lsn_wait(self):
        daemon = FeeddDaemon(extra_args=("--http.shutdown_grace_seconds=120",), name="feedd-stop")
        self.daemon = daemon
        try:
            daemon.start()
            c = daemon.client()
            pk, item_id = uid("p"), uid("i")
            self.assertStatus(c.create("posts", {"id": item_id, "postId": pk}), 201)
            c.close()
            results = {}

            def call(name, path, headers):
                # Shorter than both waits: an answer must come from the stop.
                conn = http.client.HTTPConnection(daemon.host, daemon.port, timeout=20)
                try:
                    conn.request("GET", path, headers=headers)
                    resp = conn.getresponse()
                    results[name] = (resp.status, resp.getheader("Retry-After"), resp.read())
                except Exception as e:  # reset, EOF or timeout: no answer
                    results[name] = e
                finally:
                    conn.close()
            threads = [
                threading.Thread(target=call, args=("poll", "/v1/changefeed?from=now&waitMs=30000", {})),
                threading.Thread(target=call, args=("wait", item_path("posts", pk, item_id),
                                                    {"X-Feedd-Min-Lsn": "1000000000",
                                                     "X-Feedd-Wait-Ms": "60000"})),
            ]
            for t in threads:
                t.start()
            wait_for(lambda: metric_value(metrics_text(daemon), "feedd_http_requests_in_flight") >= 2,
                     "both requests parked")
            daemon.proc.send_signal(signal.SIGTERM)
            for t in threads:
                t.join()
            self.assertEqual(daemon.proc.wait(timeout=60), 0)
            poll, wait = results["poll"], results["wait"]
            self.assertIsInstance(poll, tuple, "the long poll got no answer: %r" % (poll,))
            self.assertIn(poll[0], (200, 503), poll)
            if poll[0] == 200:
                self.assertEqual(json.loads(poll[2])["changes"], [])
            self.assertIsInstance(wait, tuple, "the min-LSN wait got no answer: %r" % (wait,))
            self.assertEqual(wait[0], 503, wait)
            self.assertEqual(wait[1], "1", wait)
            self.assertEqual(json.loads(wait[2])["error"]["code"], "unavailable")
        finally:
            daemon.cleanup()


if __name__ == "__main__":
    unittest.main()


def _proc_status(pid, field):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError("no %s in /proc/%d/status" % (field, pid))


def _map_count(pid):
    with open("/proc/%d/maps" % pid) as f:
        return sum(1 for _ in f)


class AdminTasksTest(FeeddTestCase):
    """Rebuild and verify run on a bounded executor (docs/processors.md): a
    second one on the same processor is 409, more than
    processors.max_admin_tasks at once 429, and neither threads nor their
    stacks accumulate (each verify used to leave an unjoined thread whose
    stack stayed mapped until shutdown: ~33,000 calls exhausted
    vm.max_map_count)."""

    def test_sequential_verifies_leave_nothing_behind(self):
        daemon = FeeddDaemon(name="feedd-admin")
        self.addCleanup(daemon.cleanup)
        daemon.start()
        c = daemon.client()
        pid = daemon.proc.pid
        path = "/v1/processors/feed/verify?wait=true"
        self.assertStatus(c.request("POST", path), 200, "warm-up verify")
        maps, threads = _map_count(pid), _proc_status(pid, "Threads")
        for i in range(300):
            self.assertStatus(c.request("POST", path), 200, "verify #%d" % i)
        grown = _map_count(pid) - maps
        self.assertLess(grown, 100, "300 verifies added %d memory mappings" % grown)
        self.assertLessEqual(_proc_status(pid, "Threads"), threads + 2)
        daemon.stop()

    def test_limits_and_a_clean_shutdown_during_a_long_verify(self):
        # Paused processors: their verifies wait (30 s) for a change they do
        # not take, so they are still running while the test asks again.
        daemon = FeeddDaemon(name="feedd-admin-limits",
                             extra_args=["--processors.max_admin_tasks=2"])
        self.addCleanup(daemon.cleanup)
        daemon.start()
        c = daemon.client()
        for name in ("feed", "user_posts"):
            status, _, body = c.request("POST", "/v1/processors/%s/pause" % name)
            self.assertEqual((status, body.get("state")), (200, "paused"), body)
        self.assertStatus(c.create("posts", {
            "id": "p1", "postId": "p1", "type": "post", "userId": "u1", "title": "t",
            "content": "c", "creationDate": "2026-11-21T10:00:00Z"}), 201, "post")

        answers = {}

        def verify_in_background(name):
            def run():
                # Its own connection: daemon.stop() closes the harness' clients.
                conn = http.client.HTTPConnection(daemon.host, daemon.port, timeout=90)
                try:
                    conn.request("POST", "/v1/processors/%s/verify?wait=true" % name)
                    resp = conn.getresponse()
                    answers[name] = (resp.status, dict(resp.getheaders()),
                                     json.loads(resp.read() or b"null"))
                finally:
                    conn.close()
            t = threading.Thread(target=run, daemon=True)
            t.start()
            return t

        def metrics():
            with urllib.request.urlopen("http://%s/metrics" % daemon.ready["metrics"],
                                        timeout=30) as r:
                return r.read().decode()

        def until_running(n):
            """Until n admin tasks run (the background requests arrived)."""
            deadline = time.monotonic() + 30
            while not re.search(r"(?m)^feedd_admin_tasks_running %d$" % n, metrics()):
                self.assertLess(time.monotonic(), deadline, "%d tasks never ran" % n)
                time.sleep(0.05)

        background = [verify_in_background("feed")]
        until_running(1)
        self.assertError(c.request("POST", "/v1/processors/feed/verify?wait=true"), 409,
                         "operation_in_progress")
        self.assertError(c.request("POST", "/v1/processors/feed/rebuild?wait=true"), 409,
                         "operation_in_progress")
        background.append(verify_in_background("user_posts"))
        until_running(2)
        # Two run: a third processor's verify is over the limit.
        self.assertError(c.request("POST", "/v1/processors/usernames/verify"), 429,
                         "too_many_requests")
        self.assertError(c.request("POST", "/v1/processors/usernames/rebuild"), 429,
                         "too_many_requests")
        threads = _proc_status(daemon.proc.pid, "Threads")
        for _ in range(100):
            self.assertError(c.request("POST", "/v1/processors/feed/verify?wait=true"), 409,
                             "operation_in_progress")
        self.assertLessEqual(_proc_status(daemon.proc.pid, "Threads"), threads)
        text = metrics()
        self.assertRegex(text, r"(?m)^feedd_admin_tasks_running 2$")
        self.assertRegex(text,
                         r'(?m)^feedd_admin_tasks_refused_total\{reason="too_many"\} [1-9]')
        self.assertRegex(text,
                         r'(?m)^feedd_admin_tasks_refused_total\{reason="in_progress"\} [1-9]')

        # SIGTERM while both verifies wait: they are answered 503, the
        # daemon exits 0 (the harness checks) - not reading freed memory
        # after the store is gone.
        daemon.stop()
        for t in background:
            t.join(timeout=60)
            self.assertFalse(t.is_alive())
        for name in ("feed", "user_posts"):
            self.assertError(answers[name], 503, "unavailable", name)
