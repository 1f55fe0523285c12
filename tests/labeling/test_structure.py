"""The shape of the labeling core: its subpackages depend on each other in one direction, no
module imports another in a cycle (imports inside functions count), the ``robust`` modifier
knows the strategies only through ``strategies.base``, and ``ranking`` never imports
``labeling``. The checkers are proven on known-bad sources first."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

#: What each part of ``labeling`` may import from ``labeling`` (besides itself); a part is a
#: subpackage or a top-level module. ``ranking`` is open to every part (never the reverse).
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "identifiers": set(),
    "csv_safety": set(),
    "strategies": {"errors", "machine"},
    "protocol": {"errors", "strategies"},
    "analysis": {"errors", "protocol"},
    "study": {
        "errors",
        "csv_safety",
        "identifiers",
        "machine",
        "protocol",
        "sources",
        "strategies",
    },
    "retrieval": {"errors"},
    "sources": {"errors", "identifiers"},
    "machine": {"errors", "retrieval"},
}

#: Modifiers: they may import only these modules of ``labeling.strategies``.
MODIFIERS = {
    "labeling.strategies.robust": {"labeling.strategies.base"},
    # The +robust accounting of stakes is shared.
    "labeling.strategies.assist": {"labeling.strategies.base", "labeling.strategies.robust"},
}


def _imports(source: str) -> Iterator[str]:
    """Absolute modules ``source`` imports (at any depth, inside functions too), except under
    ``if TYPE_CHECKING:``; for ``from m import name`` both ``m`` and ``m.name``."""
    tree = ast.parse(source)
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            skipped.update(id(n) for child in node.body for n in ast.walk(child))
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


def module_graph(sources: Mapping[str, str]) -> dict[str, set[str]]:
    """Module -> the modules of ``sources`` it imports (a name is resolved to its module)."""
    graph: dict[str, set[str]] = {}
    for name, source in sources.items():
        targets = set()
        for imported in _imports(source):
            while imported and imported not in sources:
                imported = imported.rpartition(".")[0]
            if imported and imported != name:
                targets.add(imported)
        graph[name] = targets
    return graph


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def _part(module: str) -> str:
    return module.split(".")[1] if module.count(".") else ""


def layer_problems(graph: Mapping[str, set[str]]) -> list[str]:
    """Imports between parts of ``labeling`` that :data:`ALLOWED` and :data:`MODIFIERS` forbid."""
    problems = []
    for module, targets in sorted(graph.items()):
        part = _part(module)
        for target in sorted(t for t in targets if t.startswith("labeling.")):
            other = _part(target)
            if other != part and other not in ALLOWED.get(part, set()):
                problems.append(f"{module} imports {target}")
            allowed = MODIFIERS.get(module)
            if allowed is not None and other == "strategies" and target not in allowed:
                problems.append(f"{module} imports {target}")
    return problems


def _sources(root: str) -> dict[str, str]:
    out = {}
    for path in sorted((REPO / root).rglob("*.py")):
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path.read_text(encoding="utf-8")
    return out


def test_the_checkers_see_what_they_look_for() -> None:
    bad = {
        "labeling.strategies.heap": "from labeling.protocol.session import open_session\n",
        "labeling.protocol.session": (
            "def f():\n    from labeling.strategies.heap import HeapTopK\n"
        ),
        "labeling.strategies.robust": "from labeling.strategies.heap import HeapTopK\n",
        "labeling.strategies.base": (
            "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from labeling.protocol.session import open_session\n"
        ),
    }
    graph = module_graph(bad)
    assert cycles(graph) == [["labeling.protocol.session", "labeling.strategies.heap"]]
    assert layer_problems(graph) == [
        "labeling.strategies.heap imports labeling.protocol.session",
        "labeling.strategies.robust imports labeling.strategies.heap",
    ]


def test_labeling_has_no_import_cycles() -> None:
    assert cycles(module_graph(_sources("labeling"))) == []


def test_labeling_parts_depend_in_one_direction() -> None:
    graph = module_graph(_sources("labeling"))
    assert {_part(m) for m in graph} - {""} <= set(ALLOWED)
    assert layer_problems(graph) == []


def test_ranking_never_imports_labeling() -> None:
    problems = [
        f"{name} imports {imported}"
        for name, source in _sources("ranking").items()
        for imported in _imports(source)
        if imported.split(".")[0] == "labeling"
    ]
    assert problems == []
