"""The layer rules of docs/architecture.md#rules, read from the source with :mod:`ast`.

- HTTP (``app/http/``, the web pages in ``app/web/`` and every concept's ``endpoints``
  modules) is thin: it neither imports SQLAlchemy (its exception classes aside) nor runs SQL
  nor opens a transaction; queries live in the concepts' use cases and repositories;
- the kernel (``app/kernel/``) and the concepts' use cases, repositories and schemas import
  neither FastAPI nor Starlette;
- the kernel imports nothing of the service but itself;
- the protocol cores (``labeling/``, ``ranking/``) import neither FastAPI nor SQLAlchemy (nor
  Starlette or pydantic's web side through them).

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
