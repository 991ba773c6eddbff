#!/usr/bin/env python3
"""Checks the layout rules of crates/*/src: no import circle between files, none between
top-level modules (a folder such as `model/` or a file such as `translate.rs` counts as one, so two
folders that import each other are a circle too), no file over 400 lines (in src/ and in tests/).

A file imports another when it names a path into it: `use crate::a::b`, `use super::x`,
`self::x`, `use child::x` (a child module), or an inline `crate::a::b::f(...)`. Paths resolve to the longest module that is a
file (`a/b.rs` or `a/b/mod.rs`); Re-exports (`pub use`) count as imports of the file that holds
the item: a module's `pub use` is its interface, not a dependency, and a path through it leads
to the file that defines the item. Circles are strongly connected components of that graph.

Usage: scripts/check-imports.py [ROOT]   (exit 1 and a list of the circles and long files)
"""
import os
import re
import sys

MAX_LINES = 400
PATH = re.compile(r"\b(crate|super|self)((?:::\w+)+)")


def modules(src):
    """Map module path tuple -> file, for one crate's src directory."""
    out = {}
    for dirpath, _, files in os.walk(src):
        for f in files:
            if not f.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, f), src)
            parts = rel[:-3].split(os.sep)
            if parts[-1] in ("mod", "lib", "main"):
                parts = parts[:-1]
            out[tuple(parts)] = os.path.join(dirpath, f)
    return out


def resolve(mods, base, kind, rest, reexports=None):
    """The file a path names, from module `base` (a tuple); through `pub use` re-exports
    when `reexports` is given."""
    if kind == "crate":
        path = list(rest)
    elif kind == "self":
        path = list(base) + list(rest)
    else:
        path = list(base[:-1])
        while rest and rest[0] == "super":
            path, rest = path[:-1], rest[1:]
        path += list(rest)
    for n in range(len(path), -1, -1):
        if tuple(path[:n]) in mods:
            f = mods[tuple(path[:n])]
            if reexports and n < len(path) and path[n] in reexports[f]:
                return reexports[f][path[n]]
            return f
    return None


def strip_comments(text):
    """The code without comments and without its unit tests (`#[cfg(test)] mod tests`, whose
    `super` is the file itself)."""
    text = re.split(r"#\[cfg\(test\)\]\s*mod tests\b", text)[0]
    return "\n".join(line.split("//")[0] for line in text.splitlines())


PUB_USE = re.compile(r"\bpub(?:\([\w:]+\))?\s+use\s+[^;]*;", re.S)


def use_refs(stmt, mod, mods):
    """`(kind, path, alias)` for every path a `use` statement names."""
    body = re.sub(r"^.*?\buse\s+", "", stmt, flags=re.S).rstrip(";").strip()
    out = []

    def walk(prefix, tree):
        tree = tree.strip()
        m = re.match(r"^([\w:]*?)::\{(.*)\}$", tree, re.S)
        if m:
            pre = prefix + [p for p in m.group(1).split("::") if p]
            depth, cur, parts = 0, "", []
            for ch in m.group(2):
                if ch == "," and depth == 0:
                    parts.append(cur)
                    cur = ""
                    continue
                depth += ch == "{"
                depth -= ch == "}"
                cur += ch
            parts.append(cur)
            for part in parts:
                if part.strip():
                    walk(pre, part)
            return
        name, _, alias = tree.partition(" as ")
        path = prefix + [p for p in name.strip().split("::") if p]
        if path:
            out.append((path, alias.strip() or path[-1]))

    walk([], body)
    refs = []
    for path, alias in out:
        if path[0] in ("crate", "super", "self"):
            refs.append((path[0], path[1:], alias))
        elif mod + (path[0],) in mods:
            refs.append(("self", path, alias))
    return refs


def edges(mods):
    """File -> the files it imports; a path through a module's `pub use` leads to the file
    that holds the item."""
    texts = {f: strip_comments(open(f, encoding="utf-8").read()) for f in mods.values()}
    reexports = {f: {} for f in mods.values()}
    for mod, f in mods.items():
        for stmt in PUB_USE.findall(texts[f]):
            for kind, rest, alias in use_refs(stmt, mod, mods):
                target = resolve(mods, mod, kind, rest)
                if target and target != f:
                    reexports[f][alias] = target
    g = {f: set() for f in mods.values()}
    for mod, f in mods.items():
        text = PUB_USE.sub("", texts[f])
        refs = []
        for stmt in re.findall(r"\buse\s+[^;]*;", text, re.S):
            refs += [(k, r) for k, r, _ in use_refs(stmt, mod, mods)]
        text = re.sub(r"\buse\s+[^;]*;", "", text, flags=re.S)
        for kind, rest in PATH.findall(text):
            refs.append((kind, [p for p in rest.split("::") if p]))
        for kind, rest in refs:
            target = resolve(mods, mod, kind, rest, reexports)
            if target and target != f:
                g[f].add(target)
    return g


def cycles(g):
    """Strongly connected components with more than one file (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in g[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in g:
        if v not in index:
            visit(v)
    return out


def folder_edges(g, src):
    """The file graph `g` collapsed to top-level modules: `src/a/b.rs` belongs to `a`."""
    def top(f):
        rel = os.path.relpath(f, src).split(os.sep)
        return os.path.join(src, rel[0] if len(rel) > 1 else rel[0][:-3])
    out = {}
    for f, targets in g.items():
        out.setdefault(top(f), set()).update(top(t) for t in targets if top(t) != top(f))
        for t in targets:
            out.setdefault(top(t), set())
    return out


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    crates = os.path.join(root, "crates")
    bad = 0
    for c in sorted(os.listdir(crates)):
        src = os.path.join(crates, c, "src")
        if not os.path.isdir(src):
            continue
        mods = modules(src)
        g = edges(mods)
        for comp in cycles(g):
            bad += 1
            print("import circle: " + " <-> ".join(os.path.relpath(f, root) for f in comp))
        for comp in cycles(folder_edges(g, src)):
            bad += 1
            print("import circle between top-level modules: " + " <-> ".join(os.path.relpath(f, root) for f in comp))
        # The cap holds for the tests too (issue 77): every .rs file under src/ and tests/.
        tests = os.path.join(crates, c, "tests")
        test_files = [os.path.join(d, f) for d, _, fs in os.walk(tests) for f in fs if f.endswith(".rs")]
        for f in sorted(list(mods.values()) + test_files):
            n = sum(1 for _ in open(f, encoding="utf-8"))
            if n > MAX_LINES:
                bad += 1
                print(f"{os.path.relpath(f, root)}: {n} lines (limit {MAX_LINES})")
    if bad:
        sys.exit(1)
    print("layout ok: no import circle between files or top-level modules, no file over 400 lines")


if __name__ == "__main__":
    main()
