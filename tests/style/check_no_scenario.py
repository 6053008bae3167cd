#!/usr/bin/env python3
"""Checks that feedd's engine knows no scenario.

    check_no_scenario.py SOURCE_ROOT   exit 0 when no C++ file of util/,
                                       storage/, feed/, processors/ or
                                       daemon/ has a string literal naming
                                       the blog scenario's containers,
                                       processors or fields; 1 listing each
    check_no_scenario.py --self-test   checks that a literal is found and that
                                       comments are not

The scenario (docs/scenario.md) is configuration: the [container.*] and
[processor.*] sections of configs/feedd.conf, which the daemon builds in as
its default (daemon/default_config.h, docs/architecture.md). Code that
spells one of its names would be a scenario the configuration cannot change.
("feed" is left out: it is also the change feed's own name.)
"""

import os
import re
import sys
import tempfile

from source_tree import MODULES, cpp_files, write_tree

NAMES = ["users", "posts", "usernames", "user_posts", "/userId", "/postId", "/username",
         "/userUsername", "/creationDate", "type=user", "type=post"]
LITERAL = re.compile(r'"((?:[^"\\]|\\.)*)"')


def code_of(line):
    """The line without its // comment (a // inside a string literal stays)."""
    in_string = False
    i = 0
    while i < len(line):
        c = line[i]
        if in_string:
            if c == "\\":
                i += 1
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif line.startswith("//", i):
            return line[:i]
        i += 1
    return line


def violations(root):
    found = []
    for module in MODULES:
        for path in cpp_files(root, module):
            with open(path, encoding="utf-8") as f:
                for number, line in enumerate(f, 1):
                    for literal in LITERAL.findall(code_of(line)):
                        if literal in NAMES:
                            found.append("%s:%d: \"%s\" names the scenario" %
                                         (os.path.relpath(path, root), number, literal))
    return found


def self_test():
    with tempfile.TemporaryDirectory() as root:
        files = {
            "storage/bad.cc": 'auto c = Spec{"posts", "/postId"};\n',
            "processors/fine.cc": '// e.g. "users"\nLOG("feed") << "x // \\"users\\"";\n',
        }
        write_tree(root, files)
        found = violations(root)
        expected = ['storage/bad.cc:1: "posts" names the scenario',
                    'storage/bad.cc:1: "/postId" names the scenario']
        if found != expected:
            print("self-test failed: expected %r, got %r" % (expected, found))
            return 1
    print("self-test passed")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    found = violations(sys.argv[1])
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
