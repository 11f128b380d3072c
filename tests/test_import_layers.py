"""Imports run one way, downward: no module of evalbeam imports, directly or through
others, a module that imports it back, and no package of `transforms` does either.

Read from the source (AST), lazy imports inside functions included: a cycle hidden in
a function body is still a cycle in the design."""
from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("schemas", "transforms", "pipeline", "evalbeam")


def _modules() -> dict[str, Path]:
    out = {}
    for top in PACKAGES:
        for path in (ROOT / top).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _imports(mods: dict[str, Path]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = defaultdict(set)
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                graph[name].update(a.name for a in node.names if a.name in mods)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[:len(package.split(".")) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if target in mods:
                    graph[name].add(target)
                graph[name].update(f"{target}.{a.name}" for a in node.names
                                   if f"{target}.{a.name}" in mods)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    nodes = set(graph) | {w for ws in graph.values() for w in ws}
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    component = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        component.append(w)
                        if w == v:
                            break
                    if len(component) > 1:
                        out.append(sorted(component))
    return out


def _packages(graph: dict[str, set[str]], depth: int) -> dict[str, set[str]]:
    """The graph between `transforms` packages `depth` names deep (own edges dropped)."""
    def key(m: str) -> str | None:
        parts = m.split(".")
        return ".".join(parts[:depth]) if parts[0] == "transforms" and len(parts) > depth \
            else None
    out: dict[str, set[str]] = defaultdict(set)
    for a, bs in graph.items():
        for b in bs:
            ka, kb = key(a), key(b)
            if ka and kb and ka != kb:
                out[ka].add(kb)
    return out


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_module_imports_itself_back():
    graph = _imports(_modules())
    assert sum(len(v) for v in graph.values()) > 300  # the graph was really read (460 edges)
    assert _cycles(graph) == []


def test_no_transforms_package_imports_itself_back():
    graph = _imports(_modules())
    for depth in (2, 3):  # transforms.<package>, transforms.<package>.<sub>
        assert _cycles(_packages(graph, depth)) == [], depth
