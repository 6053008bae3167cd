#!/usr/bin/python3
"""Writes the scenario's data set (bench/scenario: same generator, seed and
SF as generate.py --mode v3) as four CSV files for PostgreSQL's COPY:
users.csv, posts.csv, comments.csv, likes.csv, with the integer keys of
schema.sql (user u is user_no u+1, posts are numbered in generation order)
and the counts a post ends with. Prints the number of posts (pgbench's
:nposts) and of items.

    load.py --sf SF [--seed 42] [--zstd] --out DIR

With --zstd the files are users.csv.zst, ... (zstd -1, one thread each):
SF 1's 30 GB of CSV take about 7.
"""

import argparse
import csv
import io
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scenario"))
import scenario as S  # noqa: E402


def user_no(user_id):
    return int(user_id[1:]) + 1


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sf", type=float, required=True)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--zstd", action="store_true", help="write the files compressed")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    n_users = S.n_users(args.sf)
    files, zstds = {}, []
    for name in ("users", "posts", "comments", "likes"):
        path = os.path.join(args.out, name + ".csv")
        if args.zstd:
            z = subprocess.Popen(["zstd", "-1", "-q", "-T1", "-f", "-o", path + ".zst"],
                                 stdin=subprocess.PIPE)
            zstds.append(z)
            files[name] = io.TextIOWrapper(z.stdin, newline="")  # closing it ends zstd's input
        else:
            files[name] = open(path, "w", newline="")
    w = {name: csv.writer(f) for name, f in files.items()}
    post_no = comment_no = like_no = 0
    for u in range(n_users):
        w["users"].writerow([u + 1, S.user_id(u), S.username(u)])
        for post, comments, likes in S.user_data(args.seed, u, n_users, True):
            post_no += 1
            w["posts"].writerow([post_no, post["id"], u + 1, post["userUsername"], post["title"],
                                 post["content"], post["creationDate"], len(comments),
                                 len(likes)])
            for c in comments:
                comment_no += 1
                w["comments"].writerow([comment_no, post_no, user_no(c["userId"]),
                                        c["userUsername"], c["content"], c["creationDate"]])
            for lk in likes:
                like_no += 1
                w["likes"].writerow([like_no, post_no, user_no(lk["userId"]), lk["userUsername"],
                                     lk["creationDate"]])
    for f in files.values():
        f.close()
    for z in zstds:
        if z.wait() != 0:
            sys.exit("zstd exited %d" % z.returncode)
    print("users %d posts %d comments %d likes %d items %d" % (
        n_users, post_no, comment_no, like_no, n_users + post_no + comment_no + like_no))


if __name__ == "__main__":
    main()
