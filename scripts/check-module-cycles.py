#!/usr/bin/env python3
"""Module graph of a Rust crate's src/ directory, and whether it has cycles.

Every `crate::...`, `super::...` and `self::...` path in code (use
declarations and inline paths alike; comments and `#[cfg(test)] mod tests`
blocks are skipped) becomes an edge from the module of the file to the
longest existing module that the path names. A module's own children do not
count as a dependency of the child on its parent: a `mod.rs` that only
declares and re-exports its children is a parent, not a cycle. Likewise a
path to an item that a module only re-exports (`crate::TaskId` where lib.rs
says `pub use task::TaskId;`) is a dependency on the module that defines
the item, not on the one that re-exports it.

Usage: check-module-cycles.py [SRC_DIR...]   (default: bridge/src)
Prints the graph, then either "no cycles" (exit 0) or each cycle (exit 1).
"""

import os
import re
import sys


def module_of(src, path):
    rel = os.path.relpath(path, src)[: -len(".rs")].split(os.sep)
    if rel in (["lib"], ["main"]):
        return ()
    if rel[-1] == "mod":
        rel = rel[:-1]
    return tuple(rel)


def strip(text):
    """Code without comments, string/char literals and test modules."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        elif c == "r" and re.match(r'r#*"', text[i:]) and not re.match(r"\w", text[i - 1 : i] or " "):
            hashes = re.match(r"r(#*)\"", text[i:]).group(1)
            close = '"' + hashes
            j = text.find(close, i + 2 + len(hashes))
            out.append('""')
            i = n if j < 0 else j + len(close)
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""')
            i = j + 1
        elif c == "'" and re.match(r"'(\\.[^']*|[^\\'])'", text[i:]):
            i += re.match(r"'(\\.[^']*|[^\\'])'", text[i:]).end()
            out.append("' '")
        else:
            out.append(c)
            i += 1
    code = "".join(out)
    m = re.search(r"#\[cfg\(test\)\]\s*mod\s+\w+\s*\{", code)
    if m:
        # Drop the test module: from its start to its matching brace.
        depth, i = 0, m.end() - 1
        while i < len(code):
            if code[i] == "{":
                depth += 1
            elif code[i] == "}":
                depth -= 1
                if depth == 0:
                    break
            i += 1
        code = code[: m.start()] + code[i + 1 :]
    return code


def use_tree_paths(s, i):
    """Paths of a use tree starting at s[i] (after `crate::` etc.).

    Returns (list of segment lists, index after the tree)."""
    if s[i] == "{":
        out, i = [], i + 1
        while True:
            while s[i] in " \t\n,":
                i += 1
            if s[i] == "}":
                return out, i + 1
            sub, i = use_tree_paths(s, i)
            out.extend(sub)
    m = re.match(r"(\w+)", s[i:])
    if not m:
        return [[]], i
    seg, i = m.group(1), i + m.end()
    if s.startswith("::", i):
        sub, i = use_tree_paths(s, i + 2)
        return [[seg] + p for p in sub], i
    return [[seg]], i


def reexports(modules):
    """Per module, the names it re-exports from its children: name -> the
    absolute path (segments) of what it names."""
    out = {}
    for m, path in modules.items():
        code = strip(open(path, encoding="utf-8").read())
        names = {}
        for hit in re.finditer(r"\bpub(?:\([^)]*\))?\s+use\s+", code):
            j = hit.end()
            if code.startswith("self::", j):
                j += len("self::")
            elif code.startswith("crate::", j) or code.startswith("super::", j):
                continue
            paths, _ = use_tree_paths(code, j)
            for p in paths:
                if len(p) >= 2 and (m + (p[0],)) in modules:
                    names[p[-1]] = m + tuple(p)
                elif len(p) >= 2 and p[0] not in ("crate", "super", "self"):
                    # Another crate's item: no module of this one.
                    names[p[-1]] = None
        out[m] = names
    return out


def resolve(full, modules, exported):
    """The module that defines what the path `full` names, following
    re-exports; None for another crate's item re-exported here."""
    target = ()
    for _ in range(16):
        target = max((t for t in modules if full[: len(t)] == t), key=len, default=())
        rest = full[len(target) :]
        if not rest or rest[0] not in exported.get(target, {}):
            return target
        if exported[target][rest[0]] is None:
            return None
        full = exported[target][rest[0]] + rest[1:]
    return target


def deps(src, modules):
    graph = {m: set() for m in modules}
    exported = reexports(modules)
    for m, path in modules.items():
        code = strip(open(path, encoding="utf-8").read())
        # Paths through a child module, e.g. `pub use basic::BasicType;`.
        for hit in re.finditer(r"(?<![\w:])(\w+)::", code):
            child = m + (hit.group(1),)
            if hit.group(1) not in ("crate", "super", "self") and child in modules:
                paths, _ = use_tree_paths(code, hit.end())
                for p in paths:
                    full = child + tuple(p)
                    graph[m].add(max((t for t in modules if full[: len(t)] == t), key=len))
        for hit in re.finditer(r"\b(crate|super|self)::", code):
            kind = hit.group(1)
            if kind == "crate":
                base = ()
            elif kind == "super":
                base = m[:-1]
            else:
                base = m
            j = hit.end()
            # `super::super::...`
            while kind == "super" and code.startswith("super::", j):
                base, j = base[:-1], j + len("super::")
            paths, _ = use_tree_paths(code, j)
            for p in paths:
                target = resolve(base + tuple(p), modules, exported)
                if target is not None and target != m:
                    graph[m].add(target)
    return graph


def cycles(graph):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
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
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def name(m):
    return "crate" if not m else "::".join(m)


def main():
    status = 0
    for src in sys.argv[1:] or ["bridge/src"]:
        status |= check(src)
    return status


def check(src):
    modules = {}
    for root, _, files in os.walk(src):
        for f in files:
            if f.endswith(".rs"):
                path = os.path.join(root, f)
                modules[module_of(src, path)] = path
    graph = deps(src, modules)
    for m in sorted(graph, key=name):
        print(f"{name(m):24} -> {', '.join(sorted(name(t) for t in graph[m])) or '-'}")
    found = cycles(graph)
    if not found:
        print(f"no cycles among the {len(graph)} modules of {src}")
        return 0
    for comp in found:
        print("CYCLE among: " + ", ".join(name(m) for m in comp))
        # One concrete edge list inside the component, for the reader.
        for m in comp:
            inside = sorted(name(t) for t in graph[m] if t in comp)
            print(f"    {name(m)} -> {', '.join(inside)}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
