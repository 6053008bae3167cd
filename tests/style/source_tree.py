"""What the style checks share: the engine's modules, lowest layer first,
their C++ files, and a throwaway tree for the checks' self-tests."""

import os

MODULES = ["util", "storage", "feed", "processors", "daemon"]


def cpp_files(root, module):
    """The .h and .cc files below root/module, in a stable order."""
    for dirpath, dirs, files in os.walk(os.path.join(root, module)):
        dirs.sort()
        for name in sorted(files):
            if name.endswith((".h", ".cc")):
                yield os.path.join(dirpath, name)


def write_tree(root, files):
    """Writes {relative path: text} below root."""
    for rel, text in files.items():
        os.makedirs(os.path.join(root, os.path.dirname(rel)), exist_ok=True)
        with open(os.path.join(root, rel), "w", encoding="utf-8") as f:
            f.write(text)
