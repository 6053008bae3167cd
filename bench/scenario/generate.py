#!/usr/bin/env python3
"""Loads the scenario's data set into a running feedd through its HTTP API.

    generate.py --api HOST:PORT --sf 0.01 [--seed 42] [--mode v3|v1] [--workers 4]
                [--out result.json]

SF=1 is 100,000 users with 5-50 posts each, 0-25 comments and 0-100 likes
per post (uniform, seeded: the same SF and seed give the same items); a
smaller SF scales the user count.  The load runs in --workers processes, each
with one keep-alive connection, and goes the way the application writes:

  users     PUT /v1/containers/users/items/u<u>/u<u>   {"id","userId","type":"user","username"}
  posts     POST /v1/containers/posts/items            (one request per post)
  comments  POST /v1/containers/posts/partitions/<postId>/batch: the post's
  likes     comments (resp. up to 99 of its likes) as creates and, in V3, one
            {"op":"patch","operations":[{"op":"incr","path":"/commentCount","value":n}]}
            of the post -- the C3/C4 transaction, several at a time.

--mode v1 writes the normalized items (no userUsername, no counts, no patch);
--mode v3 the denormalized ones (userUsername on posts, comments and likes,
counts on posts).  Users are written first (all workers), then each worker
writes its users' posts with their comments and likes.

Prints and (with --out) writes its throughput: items/s and requests/s, overall
and per phase.
"""

import argparse
import json
import multiprocessing as mp
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scenario as S  # noqa: E402

BATCH_CREATES = 99   # + 1 patch = 100 ops, the batch limit


def worker(wid, nworkers, args, go, out_q):
    conn = S.Conn(args.api)
    n = S.n_users(args.sf)
    v3 = args.mode == "v3"
    stats = {"users": 0, "posts": 0, "comments": 0, "likes": 0,
             "req_users": 0, "req_posts": 0, "req_batches": 0}
    my_users = range(wid, n, nworkers)
    t0 = time.monotonic()
    for u in my_users:
        it = S.user_item(u)
        S.check(conn.put(S.item_path("users", it["userId"], it["id"]), it), "PUT user")
        stats["users"] += 1
        stats["req_users"] += 1
    t_users = time.monotonic() - t0
    out_q.put(("users_done", wid))
    go.wait()
    t1 = time.monotonic()
    for u in my_users:
        for post, comments, likes in S.user_data(args.seed, u, n, v3):
            pid = post["id"]
            S.check(conn.post(S.items_path("posts"), post), "POST post")
            stats["posts"] += 1
            stats["req_posts"] += 1
            for kind, items, counter in (("comments", comments, "/commentCount"),
                                         ("likes", likes, "/likeCount")):
                for i in range(0, len(items), BATCH_CREATES):
                    chunk = items[i:i + BATCH_CREATES]
                    ops = [{"op": "create", "body": x} for x in chunk]
                    if v3:
                        ops.append({"op": "patch", "id": pid, "operations": [
                            {"op": "incr", "path": counter, "value": len(chunk)}]})
                    S.check(conn.post(S.batch_path("posts", pid), {"operations": ops}),
                            "batch " + kind)
                    stats[kind] += len(chunk)
                    stats["req_batches"] += 1
    t_rest = time.monotonic() - t1
    conn.close()
    stats["t_users"] = t_users
    stats["t_rest"] = t_rest
    out_q.put(("done", stats))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--api", required=True, help="HOST:PORT of feedd's HTTP API")
    ap.add_argument("--sf", type=float, required=True, help="scale factor (1 = 100,000 users)")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--mode", choices=["v1", "v3"], default="v3")
    ap.add_argument("--workers", type=int, default=4, help="client processes (one connection each)")
    ap.add_argument("--out", help="write the throughput summary (JSON) here")
    args = ap.parse_args()

    n = S.n_users(args.sf)
    nworkers = max(1, min(args.workers, n))
    go = mp.Event()
    out_q = mp.Queue()
    procs = [mp.Process(target=worker, args=(w, nworkers, args, go, out_q), daemon=True)
             for w in range(nworkers)]
    t0 = time.monotonic()
    for p in procs:
        p.start()

    def collect(tag, count):
        got = []
        while len(got) < count:
            try:
                t, v = out_q.get(timeout=1.0)
                if t == tag:
                    got.append(v)
            except Exception:
                if any(p.exitcode not in (None, 0) for p in procs):
                    for p in procs:
                        if p.exitcode is None:
                            p.terminate()
                    sys.exit("generate.py: a worker failed (see its traceback above)")
        return got

    collect("users_done", nworkers)   # every user exists before the first post
    t_users = time.monotonic() - t0
    go.set()
    results = collect("done", nworkers)
    for p in procs:
        p.join()
    t_total = time.monotonic() - t0
    tot = {k: sum(r[k] for r in results) for k in results[0] if not k.startswith("t_")}
    items = tot["users"] + tot["posts"] + tot["comments"] + tot["likes"]
    reqs = tot["req_users"] + tot["req_posts"] + tot["req_batches"]
    t_rest = t_total - t_users
    summary = {
        "mode": args.mode, "sf": args.sf, "seed": args.seed, "workers": nworkers,
        "users": tot["users"], "posts": tot["posts"], "comments": tot["comments"],
        "likes": tot["likes"], "items": items, "requests": reqs,
        "seconds": round(t_total, 3), "items_per_s": round(items / t_total, 1),
        "requests_per_s": round(reqs / t_total, 1),
        "user_phase": {"seconds": round(t_users, 3),
                       "items_per_s": round(tot["users"] / max(t_users, 1e-9), 1)},
        "post_phase": {"seconds": round(t_rest, 3),
                       "items_per_s": round((items - tot["users"]) / max(t_rest, 1e-9), 1),
                       "requests_per_s": round((reqs - tot["req_users"]) / max(t_rest, 1e-9), 1)},
    }
    print("generate %s SF=%g: %d users, %d posts, %d comments, %d likes = %d items in %d requests, "
          "%.1f s: %.0f items/s, %.0f req/s (users %.0f items/s; posts+batches %.0f items/s, %.0f req/s)"
          % (args.mode, args.sf, tot["users"], tot["posts"], tot["comments"], tot["likes"], items,
             reqs, t_total, summary["items_per_s"], summary["requests_per_s"],
             summary["user_phase"]["items_per_s"], summary["post_phase"]["items_per_s"],
             summary["post_phase"]["requests_per_s"]), flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(summary, f, indent=1)


if __name__ == "__main__":
    main()
