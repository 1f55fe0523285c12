"""The layer rules of docs/architecture.md#layers, read from the source with :mod:`ast`.

- HTTP (``app/http/``, the web pages in ``app/web/`` and every concept's ``endpoints``
  modules) is thin: it neither imports SQLAlchemy (its exception classes aside) nor runs SQL
  nor opens a transaction; queries live in the concepts' use cases and repositories;
- the kernel (``app/kernel/``) and the concepts' use cases, repositories and schemas import
  neither FastAPI nor Starlette;
- the kernel imports nothing of the service but itself;
- the protocol cores (``labeling/``, ``ranking/``) import neither FastAPI nor SQLAlchemy (nor
  Starlette or pydantic's web side through them);
- the service's modules import each other without cycles (an import inside a function counts:
  deferring an import hides a cycle, it does not remove it), and no module imports another's
  private names (``_name``): a use case calls another concept only through its public
  functions.

Each checker is run on a small bad module too, so a checker that sees nothing cannot pass.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

#: Methods that run SQL, on whatever object: DB-API cursors, SQLAlchemy sessions and
#: connections.
SQL_CALLS = frozenset({"execute", "executemany", "exec_driver_sql", "scalar", "scalars"})
#: Methods of the app's ``Database`` that open a transaction or take a connection, flagged when
#: called on ``db`` or ``<something>.db`` (an upload's ``read()`` is not a transaction).
TRANSACTION_CALLS = frozenset({"read", "write", "raw_read", "raw_write", "raw_connection"})


def _is_database(node: ast.expr) -> bool:
    return (isinstance(node, ast.Name) and node.id == "db") or (
        isinstance(node, ast.Attribute) and node.attr == "db"
    )


def _imported_modules(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, module) of every import in ``tree`` (``from a.b import c``: ``a.b``)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.append((node.lineno, node.module))
    return found


def router_problems(source: str, name: str) -> list[str]:
    """What breaks the HTTP layer's rule in one module's ``source``."""
    tree = ast.parse(source, name)
    problems = [
        f"{name}:{line}: imports {module}"
        for line, module in _imported_modules(tree)
        if module.split(".")[0] == "sqlalchemy" and module != "sqlalchemy.exc"
    ]
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        method = node.func.attr
        if method in SQL_CALLS or (method in TRANSACTION_CALLS and _is_database(node.func.value)):
            problems.append(f"{name}:{node.lineno}: calls .{method}()")
    return sorted(problems, key=lambda problem: int(problem.split(":")[1]))


def core_problems(source: str, name: str) -> list[str]:
    """What breaks the protocol cores' rule in one module's ``source``."""
    return banned_imports(source, name, {"fastapi", "starlette", "sqlalchemy"})


def banned_imports(source: str, name: str, banned: set[str]) -> list[str]:
    """The imports of ``source`` from the top-level packages ``banned``."""
    return [
        f"{name}:{line}: imports {module}"
        for line, module in _imported_modules(ast.parse(source, name))
        if module.split(".")[0] in banned
    ]


def kernel_problems(source: str, name: str) -> list[str]:
    """What breaks the kernel's rule in one module's ``source``: no web framework, and nothing
    of the service outside ``app.kernel``."""
    problems = banned_imports(source, name, {"fastapi", "starlette"})
    problems += [
        f"{name}:{line}: imports {module}"
        for line, module in _imported_modules(ast.parse(source, name))
        if module.split(".")[0] == "app" and not module.startswith("app.kernel")
    ]
    return sorted(problems, key=lambda problem: int(problem.split(":")[1]))


def import_graph(sources: dict[str, str]) -> dict[str, set[str]]:
    """Module -> the modules among ``sources`` (module name -> source) it imports, anywhere in
    its body (``from a import b`` names module ``a.b`` when that is one, else ``a``)."""
    graph: dict[str, set[str]] = {}
    for name, source in sources.items():
        targets: set[str] = set()
        for node in ast.walk(ast.parse(source, name)):
            if isinstance(node, ast.Import):
                targets |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    sub = f"{node.module}.{alias.name}"
                    targets.add(sub if sub in sources else node.module)
        graph[name] = {target for target in targets if target in sources and target != name}
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles of ``graph``: its strongly connected components of more than one
    module (Tarjan's algorithm), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def private_imports(source: str, name: str, modules: set[str]) -> list[str]:
    """Where ``source`` uses a private name (``_x``, not dunder) of another module among
    ``modules``: ``from m import _x``, or ``alias._x`` on a module it imported."""
    tree = ast.parse(source, name)
    problems: list[str] = []
    aliases: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                if f"{node.module}.{alias.name}" in modules:
                    aliases.add(alias.asname or alias.name)
                elif node.module in modules and _private(alias.name):
                    problems.append(f"{name}:{node.lineno}: imports {node.module}.{alias.name}")
        elif isinstance(node, ast.Import):
            aliases |= {alias.asname for alias in node.names if alias.asname}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
            and _private(node.attr)
        ):
            problems.append(f"{name}:{node.lineno}: uses {node.value.id}.{node.attr}")
    return sorted(problems, key=lambda problem: int(problem.split(":")[1]))


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules(*parts: str) -> list[Path]:
    files = sorted(p for part in parts for p in (REPO / part).rglob("*.py"))
    assert files, f"no modules found under {parts}"
    return files


#: The service's folders that are not concepts.
NOT_CONCEPTS = frozenset({"kernel", "http", "web", "commands", "static"})


def _concept_modules() -> list[Path]:
    """Every module of the concept folders (``app/<concept>/``)."""
    return [
        path
        for path in _modules("app")
        if len(path.relative_to(REPO / "app").parts) > 1
        and path.relative_to(REPO / "app").parts[0] not in NOT_CONCEPTS
    ]


def _is_endpoints(path: Path) -> bool:
    return path.stem == "endpoints" or path.stem.endswith("_endpoints")


def test_http_runs_no_sql() -> None:
    http = _modules("app/http", "app/web") + [p for p in _concept_modules() if _is_endpoints(p)]
    assert len(http) > 20
    problems = [
        problem
        for path in http
        for problem in router_problems(path.read_text(), str(path.relative_to(REPO)))
    ]
    assert problems == []


def test_use_cases_import_no_web_framework() -> None:
    inner = [p for p in _concept_modules() if not _is_endpoints(p)]
    assert len(inner) > 20
    problems = [
        problem
        for path in inner
        for problem in banned_imports(
            path.read_text(), str(path.relative_to(REPO)), {"fastapi", "starlette"}
        )
    ]
    assert problems == []


def test_kernel_imports_only_itself() -> None:
    problems = [
        problem
        for path in _modules("app/kernel")
        for problem in kernel_problems(path.read_text(), str(path.relative_to(REPO)))
    ]
    assert problems == []


#: Import cycles not broken yet, each with where it is to go: none may be added.
KNOWN_CYCLES = [
    # the training queue and its use case (jobs.py runs training.service.execute_run)
    ["app.training.jobs", "app.training.service"],
]


def test_the_service_has_no_import_cycles() -> None:
    sources = {_module_name(path): path.read_text() for path in _modules("app")}
    cycles = import_cycles(import_graph(sources))
    assert [cycle for cycle in cycles if cycle not in KNOWN_CYCLES] == []


def test_no_module_uses_another_modules_private_names() -> None:
    paths = _modules("app", "labeling", "ranking")
    modules = {_module_name(path) for path in paths}
    problems = [
        problem
        for path in paths
        for problem in private_imports(path.read_text(), str(path.relative_to(REPO)), modules)
    ]
    assert problems == []


def test_protocol_cores_import_neither_fastapi_nor_sqlalchemy() -> None:
    problems = [
        problem
        for path in _modules("labeling", "ranking")
        for problem in core_problems(path.read_text(), str(path.relative_to(REPO)))
    ]
    assert problems == []


def test_the_checkers_see_what_they_look_for() -> None:
    bad_router = (
        "from sqlalchemy import select, text\n"
        "import sqlalchemy.orm\n"
        "def page(db, s, cursor):\n"
        "    with db.read() as s:\n"
        "        s.execute(select(1))\n"
        "    cursor.execute(text('SELECT 1'))\n"
        "    with request.app.state.db.raw_write() as c:\n"
        "        return s.scalars(select(2))\n"
    )
    assert router_problems(bad_router, "bad.py") == [
        "bad.py:1: imports sqlalchemy",
        "bad.py:2: imports sqlalchemy.orm",
        "bad.py:4: calls .read()",
        "bad.py:5: calls .execute()",
        "bad.py:6: calls .execute()",
        "bad.py:7: calls .raw_write()",
        "bad.py:8: calls .scalars()",
    ]
    good_router = (
        "import sqlalchemy.exc\n"
        "from app.judging import service as judging\n"
        "async def page(db, upload, spool):\n"
        "    spool.write(await upload.read())\n"
        "    return judging.x(db=db)\n"
    )
    assert router_problems(good_router, "good.py") == []
    bad_core = "import fastapi\nfrom sqlalchemy.orm import Session\nfrom starlette import x\n"
    assert core_problems(bad_core, "core.py") == [
        "core.py:1: imports fastapi",
        "core.py:2: imports sqlalchemy.orm",
        "core.py:3: imports starlette",
    ]
    bad_kernel = (
        "from app.kernel.db import Database\n"
        "from starlette import x\n"
        "from app.users import tokens\n"
    )
    assert kernel_problems(bad_kernel, "kernel.py") == [
        "kernel.py:2: imports starlette",
        "kernel.py:3: imports app.users",
    ]
    graph = import_graph(
        {
            "a": "import b\n",
            "b": "def f():\n    from c import x\n",
            "c": "from a import y\n",
            "d": "from c import z\nimport os\n",
        }
    )
    assert graph == {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"c"}}
    assert import_cycles(graph) == [["a", "b", "c"]]
    bad_private = "from m import _x, y\nfrom p import mod\nmod._z()\nmod.__name__\n"
    assert private_imports(bad_private, "u.py", {"m", "p", "p.mod"}) == [
        "u.py:1: imports m._x",
        "u.py:3: uses mod._z",
    ]
