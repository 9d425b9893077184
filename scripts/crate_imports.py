#!/usr/bin/env python3
"""The imports between one crate's own files, and their circles.

Usage: scripts/crate_imports.py CRATE_DIR   (e.g. malloc-muzero)

Each file of CRATE_DIR/src is a module. An edge A -> B is a `use crate::...`,
`use super::...` or `use child::...` in A's file (its test module left out) naming an item
B defines. A `pub use` is a re-export, not an edge: an item reached through one is followed
to the file that defines it, so a facade (train.rs re-exporting its children) is no hub.
Printed: every edge, the circles (strongly connected groups of more than one file), the
layers (a file's layer is one above the highest layer it imports; layer 0 imports none),
and the edges from a file into one of its ancestor files (a child reaching up into the
file that declares it). Exits 1 when there is a circle.
"""

import os
import re
import sys


def module_of(src, path):
    rel = os.path.relpath(path, src)[:-3].split(os.sep)
    if rel == ["lib"] or rel == ["main"]:
        return ()
    if rel[-1] == "mod":
        rel = rel[:-1]
    return tuple(rel)


def strip_tests(text):
    # The test module's imports are the tests', not the file's.
    m = re.search(r"#\[cfg\(test\)\]\s*(pub(\(\w+\))?\s+)?mod\s+tests\b", text)
    text = text[: m.start()] if m else text
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def use_statements(text):
    """(is_reexport, body) of each `use` statement at any depth."""
    for m in re.finditer(r"(?m)^\s*(pub(\([^)]*\))?\s+)?use\s+([^;]+);", text):
        body = re.sub(r"\s+", " ", m.group(3))
        yield bool(m.group(1)), re.sub(r"\s*([{},]|::)\s*", r"\1", body).strip()


def expand(body):
    """The paths of a use body: `a::{b, c::{d, e}}` -> [a::b, a::c::d, a::c::e]."""
    depth, start = 0, None
    for i, ch in enumerate(body):
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                prefix, inner = body[:start], body[start + 1 : i]
                parts, d, last = [], 0, 0
                for j, c in enumerate(inner):
                    d += c == "{"
                    d -= c == "}"
                    if c == "," and d == 0:
                        parts.append(inner[last:j])
                        last = j + 1
                parts.append(inner[last:])
                out = []
                for p in parts:
                    if p:
                        out += expand(prefix + p)
                return out
    # `x as y` imports x.
    return [body.split(" as ")[0].strip()]


class Crate:
    def __init__(self, src):
        self.files = {}
        for root, _, names in os.walk(src):
            for n in names:
                if n.endswith(".rs"):
                    p = os.path.join(root, n)
                    m = module_of(src, p)
                    # A test module's file is the tests', like an inline one.
                    if not m or m[-1] != "tests":
                        self.files[m] = p
        self.text = {m: strip_tests(open(p).read()) for m, p in self.files.items()}
        self.modules = set(self.files)
        self.reexports = {}
        self.uses = {}
        for m, t in self.text.items():
            for pub, body in use_statements(t):
                for p in expand(body):
                    if p.startswith(("crate::", "super::", "self::")) or p.split("::")[0] in {
                        s[-1] for s in self.modules if s[:-1] == m and s
                    }:
                        (self.reexports if pub else self.uses).setdefault(m, []).append(p)

    def inline_paths(self, m):
        """Paths written out in A's code rather than imported: `crate::x::f()`,
        `super::f()`, and `x::f()` where `use ...::x` (or `x::{self}`) imported module x."""
        code = re.sub(r"(?m)^\s*(pub(\([^)]*\))?\s+)?use\s+[^;]+;", "", self.text[m])
        aliases = {}
        for p in self.uses.get(m, []):
            target = self.resolve(m, p)
            if target and target != m and p.split("::")[-1] in ("self", target[-1]):
                aliases[target[-1]] = target
        out = [c for c in re.findall(r"\b((?:crate|super)(?:::\w+)+)", code)]
        for alias, target in aliases.items():
            for rest in re.findall(r"(?<![\w:])" + alias + r"((?:::\w+)+)", code):
                out.append("crate::" + "::".join(target) + rest)
        return out

    def children(self, m):
        return {s[-1] for s in self.modules if len(s) == len(m) + 1 and s[: len(m)] == m}

    def resolve(self, here, path, seen=()):
        segs = path.split("::")
        if segs[0] == "crate":
            cur, segs = (), segs[1:]
        else:
            cur = here
            while segs and segs[0] in ("super", "self"):
                if segs[0] == "super":
                    cur = cur[:-1]
                segs = segs[1:]
        while segs and segs[0] in self.children(cur):
            cur, segs = cur + (segs[0],), segs[1:]
        if not segs or segs[0] in ("self", "*"):
            return cur
        item = segs[0]
        for p in self.reexports.get(cur, []):
            last = p.split("::")[-1]
            if (last == item or last == "*") and (cur, p) not in seen:
                target = self.resolve(cur, p, seen + ((cur, p),))
                if target != cur and (last == item or item in self.defined(target)):
                    return target
        return cur

    def defined(self, m):
        return set(
            re.findall(
                r"(?m)^\s*(?:pub(?:\([^)]*\))?\s+)?(?:async\s+)?(?:const\s+)?(?:fn|struct|enum|trait|type|const|static|mod|macro_rules!)\s+(\w+)",
                self.text[m],
            )
        )

    def edges(self):
        out = set()
        for m in self.modules:
            for p in self.uses.get(m, []) + self.inline_paths(m):
                t = self.resolve(m, p)
                if t != m:
                    out.add((m, t))
        return sorted(out)


def name(m):
    return "::".join(("crate",) + m)


def sccs(nodes, edges):
    graph = {n: [] for n in nodes}
    for a, b in edges:
        graph[a].append(b)
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            out.append(group)

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    src = os.path.join(sys.argv[1], "src")
    if not os.path.isdir(src):
        sys.exit(f"{src}: no such folder")
    crate = Crate(src)
    edges = crate.edges()
    print(f"{len(crate.modules)} files, {len(edges)} edges")
    for a, b in edges:
        print(f"  {name(a)} -> {name(b)}")
    circles = [sorted(g) for g in sccs(crate.modules, edges) if len(g) > 1]
    print(f"circles: {len(circles)}")
    for g in circles:
        inside = [(a, b) for a, b in edges if a in g and b in g]
        print("  " + ", ".join(name(m) for m in g))
        for a, b in inside:
            print(f"    {name(a)} -> {name(b)}")
    up = [(a, b) for a, b in edges if len(b) < len(a) and a[: len(b)] == b]
    print(f"edges into an ancestor file: {len(up)}")
    for a, b in up:
        print(f"  {name(a)} -> {name(b)}")
    if not circles:
        layer = {}

        def depth(m):
            if m not in layer:
                layer[m] = 1 + max((depth(b) for a, b in edges if a == m), default=-1)
            return layer[m]

        for m in crate.modules:
            depth(m)
        print("layers (each imports only from layers below it):")
        for d in range(max(layer.values()) + 1):
            print(f"  {d}: " + ", ".join(sorted(name(m) for m in layer if layer[m] == d)))
    sys.exit(1 if circles else 0)


if __name__ == "__main__":
    main()
