#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The layers of runtime/ (docs/ARCHITECTURE.md), checked from the sources.

    cli -> migrate -> cr -> oci -> freeze -> base

1. A file includes headers of its own layer or of a layer below it
   (the build enforces the same through each layer's -iquote list; this
   says which rule broke, and also covers headers that include headers).
2. No include circle between files: a .c file "uses" another when it
   includes that file's header; the graph of uses (one node per
   basename, a.c and a.h together) has no cycle.
3. No .c file under runtime/ is longer than MAX_LINES lines, and at most
   MAX_TOP .c files sit at the top of runtime/.
4. Given the build dir: no layer's library (libcryo_<layer>.a) needs a
   symbol that only a higher layer defines (a call through a declaration
   the include check can't see, or a table of a higher layer's objects).

    lint-layers.py [SRC [BUILD]]

Exit 0 when clean, 1 with one line per violation.
"""
import os
import re
import sys

LAYERS = ["base", "freeze", "oci", "cr", "migrate", "cli"]
MAX_LINES = 1100
# Files still over MAX_LINES, each with the work that brings it under: the
# check fails as soon as one of them grows, or another file goes over.
OVER = {}
MAX_TOP = 12
# generated headers: the layer whose library makes them available
GENERATED = {"version.h": "base", "manifest.pb-c.h": "base", "migrate.pb-c.h": "base",
             "criu-rpc.pb-c.h": "base", "cryo_freezer.h": "freeze"}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def link_check(build, rank):
    """Undefined symbols of each layer's archive, defined only higher up."""
    import subprocess
    libs = {l: os.path.join(build, "runtime", f"libcryo_{l}.a") for l in LAYERS if l != "cli"}
    defined = {}
    undefined = {}
    for l, a in libs.items():
        if not os.path.exists(a):
            return [f"{a}: not built"]
        out = subprocess.run(["nm", "-g", a], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            f = line.split()
            if len(f) == 3 and f[1] in "TDRBV":
                defined.setdefault(f[2], l)
            elif len(f) == 2 and f[0] == "U":
                undefined.setdefault(l, set()).add(f[1])
    errors = []
    for l, syms in undefined.items():
        for sym in sorted(syms):
            d = defined.get(sym)
            if d and rank[d] > rank[l]:
                errors.append(f"runtime/{l}/: libcryo_{l}.a uses {sym} of runtime/{d}/, a higher layer")
    return errors


def main(root, build=None):
    rt = os.path.join(root, "runtime")
    errors = []
    where = {}   # header basename -> layer
    files = []   # (layer, path)
    for layer in LAYERS:
        d = os.path.join(rt, layer)
        if not os.path.isdir(d):
            errors.append(f"runtime/{layer}/: missing layer folder")
            continue
        for name in sorted(os.listdir(d)):
            if name.endswith((".c", ".h")):
                files.append((layer, os.path.join(d, name)))
                if name.endswith(".h"):
                    if name in where:
                        errors.append(f"runtime/{layer}/{name}: a header of that name is in runtime/{where[name]}/ too")
                    where[name] = layer
    for k, v in GENERATED.items():
        where.setdefault(k, v)

    top = [n for n in os.listdir(rt) if n.endswith(".c")]
    if len(top) > MAX_TOP:
        errors.append(f"runtime/: {len(top)} .c files at the top (at most {MAX_TOP})")

    rank = {l: i for i, l in enumerate(LAYERS)}
    uses = {}
    for layer, path in files:
        rel = os.path.relpath(path, root)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        if path.endswith(".c"):
            n = text.count("\n")
            cap, why = OVER.get(rel, (MAX_LINES, ""))
            if n > cap:
                errors.append(f"{rel}: {n} lines (at most {MAX_LINES})")
            elif n > MAX_LINES:
                print(f"{rel}: {n} lines, over {MAX_LINES} until {why}")
        node = os.path.splitext(os.path.basename(path))[0]
        for inc in INCLUDE.findall(text):
            base = os.path.basename(inc)
            if base not in where:
                continue  # a system header spelled with quotes, or a test's own
            il = where[base]
            if rank[il] > rank[layer]:
                errors.append(f"{rel}: includes {inc} of runtime/{il}/, a higher layer than {layer}/")
            dep = os.path.splitext(base)[0]
            if base in GENERATED or dep == node:
                continue
            uses.setdefault(node, set()).add(dep)

    # cycles: iterative DFS with colours
    WHITE, GREY, BLACK = 0, 1, 2
    colour = {}
    seen_cycles = set()
    for start in sorted(uses):
        if colour.get(start, WHITE) != WHITE:
            continue
        stack = [(start, iter(sorted(uses.get(start, ()))))]
        path = [start]
        colour[start] = GREY
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                colour[node] = BLACK
                stack.pop()
                path.pop()
                continue
            c = colour.get(nxt, WHITE)
            if c == GREY:
                cyc = path[path.index(nxt):] + [nxt]
                key = frozenset(cyc)
                if key not in seen_cycles:
                    seen_cycles.add(key)
                    errors.append("include circle: " + " -> ".join(cyc))
            elif c == WHITE:
                colour[nxt] = GREY
                path.append(nxt)
                stack.append((nxt, iter(sorted(uses.get(nxt, ())))))

    if build:
        errors += link_check(build, rank)
    for e in errors:
        print(e)
    if not errors:
        print(f"layers: clean ({len(files)} files in {len(LAYERS)} layers, no circles, no new file over {MAX_LINES} lines)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."),
                  sys.argv[2] if len(sys.argv) > 2 else None))
