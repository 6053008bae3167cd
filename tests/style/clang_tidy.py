#!/usr/bin/env python3
"""Runs clang-tidy, as the repository's .clang-tidy configures it, over
feedd's own sources.

    clang_tidy.py BUILD_DIR [--jobs N] [--clang-tidy PATH] [FILE ...]
        reads BUILD_DIR/compile_commands.json (CMAKE_EXPORT_COMPILE_COMMANDS)
        and checks each translation unit of util/, storage/, feed/,
        processors/ and daemon/ (or only the FILEs given), their headers
        through .clang-tidy's HeaderFilterRegex, N at a time (default: the
        number of processors); exit 0 when clang-tidy reports nothing, 1
        printing what it reported, 2 when it could not run
    clang_tidy.py --self-test [--clang-tidy PATH]
        checks, with the repository's .clang-tidy, a small tree of one unit
        with a finding and one without, and that only the first is reported
"""

import argparse
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

SOURCE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LAYERS = ("util", "storage", "feed", "processors", "daemon")


def units(build_dir, root, files):
    """The translation units to check: `files`, or those of LAYERS."""
    with open(os.path.join(build_dir, "compile_commands.json"), encoding="utf-8") as f:
        entries = json.load(f)
    wanted = {os.path.abspath(p) for p in files}
    found = set()
    for e in entries:
        path = os.path.abspath(os.path.join(e["directory"], e["file"]))
        if wanted:
            if path in wanted:
                found.add(path)
        elif os.path.relpath(path, root).split(os.sep)[0] in LAYERS:
            found.add(path)
    return sorted(found)


def check(tidy, build_dir, todo, jobs):
    """Runs clang-tidy on each of `todo`; returns {unit: what it reported}
    for those with findings."""

    # -Wno-error: a compiler warning (the build's flags, FEEDD_WERROR) is the
    # build's to report; here only the checks count.
    def run(path):
        r = subprocess.run([tidy, "-p", build_dir, "--quiet", "--extra-arg=-Wno-error",
                            "--warnings-as-errors=*", path],
                           capture_output=True, text=True)
        return path, r.returncode, r.stdout + r.stderr

    findings = {}
    with concurrent.futures.ThreadPoolExecutor(max(1, jobs)) as pool:
        for path, code, out in pool.map(run, todo):
            if code != 0:
                findings[path] = out
    return findings


def self_test(tidy):
    with tempfile.TemporaryDirectory() as root:
        shutil.copy(os.path.join(SOURCE_ROOT, ".clang-tidy"), root)
        sources = {
            "bad.cc": "double Half(int n) { return n / 2; }\n",  # bugprone-integer-division
            "good.cc": "double Half(int n) { return n / 2.0; }\n",
        }
        entries = []
        for name, text in sources.items():
            with open(os.path.join(root, name), "w", encoding="utf-8") as f:
                f.write(text)
            entries.append({"directory": root, "file": name,
                            "command": "clang++ -std=c++20 -c " + name})
        with open(os.path.join(root, "compile_commands.json"), "w", encoding="utf-8") as f:
            json.dump(entries, f)
        todo = units(root, root, [os.path.join(root, n) for n in sources])
        findings = check(tidy, root, todo, 2)
        bad = os.path.join(root, "bad.cc")
        if sorted(findings) != [bad] or "bugprone-integer-division" not in findings[bad]:
            print("self-test failed: findings %r, expected bugprone-integer-division in bad.cc"
                  % findings)
            return 1
    print("self-test passed")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build_dir", nargs="?")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--clang-tidy", default=shutil.which("clang-tidy"))
    parser.add_argument("--self-test", action="store_true")
    parser.add_argument("files", nargs="*")
    args = parser.parse_args()

    tidy = args.clang_tidy
    if tidy is None:
        print("clang-tidy is not installed (scripts/install-deps.sh installs it)")
        return 2
    if args.self_test:
        return self_test(tidy)
    if args.build_dir is None:
        parser.print_usage()
        return 2
    todo = units(args.build_dir, SOURCE_ROOT, args.files)
    if not todo:
        print("no translation unit to check in %s/compile_commands.json" % args.build_dir)
        return 2
    started = time.monotonic()
    findings = check(tidy, args.build_dir, todo, args.jobs)
    for out in findings.values():
        sys.stdout.write(out)
    print("clang-tidy: %d of %d translation units have findings (%.0f s, %d at a time)" %
          (len(findings), len(todo), time.monotonic() - started, args.jobs))
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
