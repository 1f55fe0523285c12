"""The structure rules of docs/architecture.md#rules, read from the source with :mod:`ast`.

- no import cycles among the project's modules, imports inside functions included (a lazy
  import that dodges a cycle is still a cycle); ``if TYPE_CHECKING:`` imports excluded;
- no private name (``_x``) imported from another module;
- no module over :data:`MAX_MODULE_LINES` lines and no function over
  :data:`MAX_FUNCTION_LINES` lines, unless a reason starting ``Long because`` is written at
  its top (the module's first lines, the function's docstring or first comment);
- ``ranking`` never imports ``labeling`` or ``app``; ``labeling`` never imports ``app``;
- TREC run text is parsed by ``ranking.io`` and ``ranking.trec_eval``'s reader only: every
  other reader of runs (the service's uploads, through
  ``labeling.study.pools.parse_trec_run``) takes a line's columns from
  ``ranking.io.trec.parse_run_line``.

Each checker is run on a small bad tree too, so a checker that sees nothing cannot pass.
``lint-imports`` (the contracts in ``pyproject.toml``) checks the layers and the concept
folders' independence; this file checks what import-linter does not.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("app", "labeling", "ranking")
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80
REASON = "long because"


def module_files(root: Path, packages: Iterable[str] = PACKAGES) -> dict[str, Path]:
    """``{dotted module name: file}`` of every module under ``packages`` of ``root``."""
    found: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            name = test.id if isinstance(test, ast.Name) else getattr(test, "attr", None)
            if name == "TYPE_CHECKING":
                skip |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return skip


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str, path: Path, modules: dict[str, Path]) -> list[tuple[int, str, str]]:
    """(line, imported module, imported name or "") of every first-party import."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    skip = _type_checking_nodes(tree)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[tuple[int, str, str]] = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = _resolve(alias.name, modules)
                if target:
                    found.append((node.lineno, target, ""))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in modules:
                    found.append((node.lineno, sub, ""))
                    continue
                target = _resolve(base, modules)
                if target:
                    found.append((node.lineno, target, alias.name))
    return found


def import_cycles(modules: dict[str, Path]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    edges = {m: {t for _, t, _ in _imports(m, p, modules) if t != m} for m, p in modules.items()}
    # A package's own imports of its submodules are not cycles of the code: `pkg/__init__`
    # re-exporting `pkg.sub` while `pkg.sub` imports `pkg.other` is how packages work.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = [0]

    def visit(start: str) -> None:
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(sorted(component))

    for module in sorted(edges):
        if module not in index:
            visit(module)
    return sorted(components)


def _module_aliases(module: str, path: Path, modules: dict[str, Path]) -> dict[str, str]:
    """``{local name: module}`` for the names a module binds to other project modules."""
    aliases: dict[str, str] = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname and alias.name in modules:
                    aliases[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                if sub in modules:
                    aliases[alias.asname or alias.name] = sub
    return aliases


def private_imports(modules: dict[str, Path]) -> list[str]:
    """``file:line: name from module`` for every private name taken from another module:
    imported (``from m import _x``) or read off an imported module (``m._x``)."""
    found: list[str] = []
    for module, path in modules.items():
        found += [
            f"{path.name}:{line}: {name} from {target}"
            for line, target, name in _imports(module, path, modules)
            if name.startswith("_") and not name.startswith("__") and target != module
        ]
        aliases = _module_aliases(module, path, modules)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                target = aliases[node.value.id]
                found.append(f"{path.name}:{node.lineno}: {node.attr} from {target}")
    return sorted(found)


def _has_reason(lines: list[str]) -> bool:
    return any(REASON in line.lower() for line in lines)


def oversized(modules: dict[str, Path], root: Path) -> list[str]:
    """Modules and functions over the limits without a written reason."""
    problems: list[str] = []
    for path in modules.values():
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        rel = path.relative_to(root)
        if len(lines) > MAX_MODULE_LINES and not _has_reason(lines[:40]):
            problems.append(f"{rel}: {len(lines)} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                body_start = node.body[0].lineno - 1
                head = lines[node.lineno - 1 : body_start + 6]
                if length > MAX_FUNCTION_LINES and not _has_reason(head):
                    problems.append(f"{rel}:{node.lineno} {node.name}: {length} lines")
    return problems


def core_dependencies(modules: dict[str, Path]) -> list[str]:
    """Imports against the cores' direction: ranking -> labeling/app, labeling -> app."""
    banned = {"ranking": ("labeling", "app"), "labeling": ("app",)}
    return [
        f"{module}:{line} imports {target}"
        for module, path in modules.items()
        for line, target, _ in _imports(module, path, modules)
        if target.split(".")[0] in banned.get(module.split(".")[0], ())
    ]


#: Where TREC run text may be parsed: ranking.io (its readers and the compiled scan, whose
#: importers import-linter restricts) and trec_eval's own exact reader.
TREC_RUN_READERS = ("ranking.io", "ranking.trec_eval.readers", "ranking.trec_eval.fast_read")


def _compares_len_with(node: ast.AST, value: int) -> bool:
    if not isinstance(node, ast.Compare):
        return False
    sides = [node.left, *node.comparators]
    has_len = any(
        isinstance(x, ast.Call) and isinstance(x.func, ast.Name) and x.func.id == "len"
        for x in sides
    )
    return has_len and any(isinstance(x, ast.Constant) and x.value == value for x in sides)


def trec_run_parsers(modules: dict[str, Path]) -> list[str]:
    """``module.function`` of every function outside :data:`TREC_RUN_READERS` that parses TREC
    run lines: it splits text and compares a length with 6 (``qid Q0 docno rank score
    tag``)."""
    found: list[str] = []
    for module, path in modules.items():
        if any(module == r or module.startswith(r + ".") for r in TREC_RUN_READERS):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            inner = list(ast.walk(node))
            splits = any(
                isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute)
                and n.func.attr in ("split", "rsplit")
                for n in inner
            )
            if splits and any(_compares_len_with(n, 6) for n in inner):
                found.append(f"{module}.{node.name}")
    return sorted(found)


# -- the project ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def project() -> dict[str, Path]:
    return module_files(REPO)


def test_no_import_cycles(project: dict[str, Path]) -> None:
    assert import_cycles(project) == []


def test_no_private_names_across_modules(project: dict[str, Path]) -> None:
    assert private_imports(project) == []


def test_sizes(project: dict[str, Path]) -> None:
    assert oversized(project, REPO) == []


def test_core_direction(project: dict[str, Path]) -> None:
    assert core_dependencies(project) == []


def test_only_the_readers_parse_trec_runs(project: dict[str, Path]) -> None:
    """TREC runs are read by ranking.io and trec_eval's reader (the compiled scan: the
    import-linter contract in pyproject.toml), and by no other function."""
    assert trec_run_parsers(project) == []


# -- the checkers on a known-bad tree ---------------------------------------------------------


@pytest.fixture
def bad_tree(tmp_path: Path) -> dict[str, Path]:
    files = {
        "ranking/__init__.py": "",
        "ranking/a.py": "from labeling.b import thing\n",
        "labeling/__init__.py": "",
        "labeling/b.py": "def thing():\n    from labeling.c import _hidden\n    return _hidden\n",
        "labeling/c.py": "import labeling.b\n_hidden = 1\n",
        "labeling/f.py": "from labeling import c\nvalue = c._hidden\n",
        "labeling/d.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
        "    from labeling.e import x\n",
        "labeling/e.py": "from labeling.d import TYPE_CHECKING as x\n",
        "labeling/runs.py": "def parse(text):\n    return [line.split() for line in text"
        ".splitlines() if len(line.split()) == 6]\n",
        "ranking/io/__init__.py": "",
        "ranking/io/trec.py": "def read(line):\n    return len(line.split()) == 6\n",
        "labeling/big.py": "\n" * (MAX_MODULE_LINES + 1)
        + "def f():\n"
        + "    pass\n" * MAX_FUNCTION_LINES
        + "def g():\n    # Long because: a table.\n"
        + "    pass\n" * MAX_FUNCTION_LINES,
    }
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return module_files(tmp_path, ("ranking", "labeling"))


def test_checkers_see_a_bad_tree(bad_tree: dict[str, Path], tmp_path: Path) -> None:
    # the lazy import in b.thing closes b <-> c; d -> e is TYPE_CHECKING only, e -> d is not
    assert import_cycles(bad_tree) == [["labeling.b", "labeling.c"]]
    assert private_imports(bad_tree) == [
        "b.py:2: _hidden from labeling.c",
        "f.py:2: _hidden from labeling.c",
    ]
    assert oversized(bad_tree, tmp_path) == [
        f"labeling/big.py: {MAX_MODULE_LINES + 1 + 2 * MAX_FUNCTION_LINES + 3} lines",
        f"labeling/big.py:{MAX_MODULE_LINES + 2} f: {MAX_FUNCTION_LINES + 1} lines",
    ]
    assert core_dependencies(bad_tree) == ["ranking.a:1 imports labeling.b"]
    assert trec_run_parsers(bad_tree) == ["labeling.runs.parse"]  # ranking.io may
