#!/usr/bin/env python3
"""Checks that feedd's modules include only their own layer and those below.

    check_layers.py SOURCE_ROOT      exit 0 when every include is allowed,
                                     1 listing each one that is not
    check_layers.py --self-test      builds a small tree with one allowed and
                                     one forbidden include and checks that
                                     only the forbidden one is reported

The layers, lowest first (docs/architecture.md, "Modules"):
util <- storage <- feed <- processors <- daemon. A file of one layer may
include a header of its own layer or of a layer below, never above, so that
the engine, say, cannot come to depend on the HTTP API. tests/, bench/ and
tools may include anything.
"""

import os
import re
import sys
import tempfile

from source_tree import MODULES as LAYERS, cpp_files, write_tree

INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/[^"]+"', re.M)


def violations(root):
    found = []
    for rank, layer in enumerate(LAYERS):
        for path in cpp_files(root, layer):
            with open(path, encoding="utf-8") as f:
                text = f.read()
            for m in INCLUDE.finditer(text):
                target = m.group(1)
                if target in LAYERS and LAYERS.index(target) > rank:
                    line = text.count("\n", 0, m.start()) + 1
                    found.append("%s:%d: %s includes %s, a higher layer" %
                                 (os.path.relpath(path, root), line, layer, m.group(0).strip()))
    return found


def self_test():
    with tempfile.TemporaryDirectory() as root:
        files = {
            "storage/ok.cc": '#include "util/status.h"\n#include "storage/ok.h"\n',
            "storage/bad.h": '#pragma once\n#include "daemon/api_router.h"\n',
            "daemon/fine.cc": '#include "processors/x.h"\n#include <vector>\n',
        }
        write_tree(root, files)
        found = violations(root)
        expected = ['storage/bad.h:2: storage includes #include "daemon/api_router.h", '
                    'a higher layer']
        if found != expected:
            print("self-test failed: found %r, expected %r" % (found, expected))
            return 1
    print("self-test passed")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    found = violations(sys.argv[1])
    for v in found:
        print(v)
    print("%d layering violations" % len(found))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
