#!/usr/bin/env python3
"""Import circles between the modules of each crate: exits 1 and names them if there are any.

The crates' Cargo.toml files hold imports between crates to the layers; this holds the modules
inside a crate to a direction. A module's imports are the `crate::…` and `super::…` paths in its
file (test code at the file's end, and comments, left out), each resolved to the longest module
path that exists; a module's own ancestors and descendants are not counted (a parent owns its
children). A circle is a strongly connected component of more than one module.

Usage: scripts/import-circles.py [REPO_ROOT]
"""
import os
import re
import sys
from collections import defaultdict

sys.setrecursionlimit(100000)


def module_of(src, path):
    parts = os.path.relpath(path, src)[:-3].split("/")
    return tuple(parts[:-1] if parts[-1] in ("mod", "lib", "main") else parts)


def without_tests(text):
    for marker in ("#[cfg(test)]\nmod tests", "#[cfg(test)]\npub(crate) mod tests"):
        at = text.find(marker)
        if at >= 0:
            text = text[:at]
    return re.sub(r"//[^\n]*", "", text)


def referenced(module, text):
    """Every module path the text names through `crate::` or `super::`."""
    for m in re.finditer(r"\b(crate|super(?:::super)*)::((?:[a-z_][a-z0-9_]*::)*[a-z_][a-z0-9_]*|\{)", text):
        base = () if m.group(1) == "crate" else module[: len(module) - m.group(1).count("super")]
        if m.group(2) != "{":
            yield base + tuple(m.group(2).split("::"))
            continue
        depth, end = 1, m.end()
        while depth and end < len(text):
            depth += {"{": 1, "}": -1}.get(text[end], 0)
            end += 1
        for item in re.findall(r"[a-z_][a-z0-9_]*(?:::[a-z_][a-z0-9_]*)*", text[m.end() : end]):
            yield base + tuple(item.split("::"))


def circles(src):
    files = {}
    for folder, _, names in os.walk(src):
        for name in names:
            if name.endswith(".rs"):
                module = module_of(src, os.path.join(folder, name))
                if not (module and module[-1] in ("tests", "test_support")):
                    files[module] = os.path.join(folder, name)
    known = {m[:k] for m in files for k in range(1, len(m) + 1)}
    graph = defaultdict(set)
    for module, path in files.items():
        with open(path, encoding="utf-8") as f:
            text = without_tests(f.read())
        for ref in referenced(module, text):
            target = next((ref[:k] for k in range(len(ref), 0, -1) if ref[:k] in known), None)
            if target is None or target[: len(module)] == module or module[: len(target)] == target:
                continue
            graph[module].add(target)
    # Tarjan's strongly connected components.
    index, low, stack, on_stack, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted("::".join(m) for m in component))

    for v in list(graph):
        if v not in index:
            visit(v)
    return found


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    sources = [os.path.join(root, "src")] + sorted(
        os.path.join(root, "crates", c, "src") for c in os.listdir(os.path.join(root, "crates"))
    )
    total = 0
    for src in sources:
        for circle in circles(src):
            total += 1
            print(f"{os.path.relpath(src, root)}: import circle: {' -> '.join(circle)}")
    print(f"import circles: {total} in {len(sources)} crates")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
