#!/usr/bin/env python3
"""Writes the scenario's data set as NDJSON files for the bulk import.

    ndjson.py --sf 0.01 [--seed 42] [--mode v3|v1] --out DIR

DIR/users.ndjson (one user per line) and DIR/posts.ndjson (each post, then
its comments and likes), the same items generate.py loads over HTTP for the
same SF and seed. In V3 a post carries its final commentCount and likeCount
(the state after generate.py's C3/C4 batches) and every item its author's
userUsername; V1 items are normalized. Prints the item counts.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scenario as S  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sf", type=float, required=True)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--mode", choices=("v3", "v1"), default="v3")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    n = S.n_users(args.sf)
    v3 = args.mode == "v3"
    dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
    counts = {"users": 0, "posts": 0, "comments": 0, "likes": 0}
    with open(os.path.join(args.out, "users.ndjson"), "w", encoding="utf-8") as f:
        for u in range(n):
            f.write(dumps(S.user_item(u)) + "\n")
            counts["users"] += 1
    with open(os.path.join(args.out, "posts.ndjson"), "w", encoding="utf-8") as f:
        for u in range(n):
            for post, comments, likes in S.user_data(args.seed, u, n, v3):
                if v3:
                    post["commentCount"] = len(comments)
                    post["likeCount"] = len(likes)
                f.write(dumps(post) + "\n")
                for item in comments + likes:
                    f.write(dumps(item) + "\n")
                counts["posts"] += 1
                counts["comments"] += len(comments)
                counts["likes"] += len(likes)
    counts["items"] = sum(counts.values())
    print(json.dumps(counts))


if __name__ == "__main__":
    main()
