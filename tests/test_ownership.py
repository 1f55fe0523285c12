"""One way each (docs/architecture.md#rules): the rows of a task and of a judgment are written
by one concept only, read from the source with :mod:`ast`.

- a ``Task`` is created only in ``app.tasks`` (``app.tasks.service.new_task``: plans,
  campaigns, simulations and the CLI call it);
- a ``Judgment`` is inserted only in ``app.judging`` (``app.judging.answers.record_answer``
  and the repository under it).

"Created" means any of: calling the model (``Task(...)``), ``insert(Task)`` or
``insert(Task.__table__)`` (SQLAlchemy's or a dialect's), ``Task.__table__.insert()``, or the
same through a module-level alias (``T = Task.__table__``). Updates of the stored row
(status, timings) are not creation and stay with whoever owns the change. The checker also
runs on a small bad tree, so a checker that sees nothing cannot pass.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.test_structure import module_files

REPO = Path(__file__).resolve().parents[1]
MODELS = "app.kernel.models"
OWNERS = {"Task": ("app.tasks",), "Judgment": ("app.judging",)}


def _model_names(tree: ast.AST) -> dict[str, str]:
    """``{local name: model}`` for the owned models a module imports from the models."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == MODELS:
            for alias in node.names:
                if alias.name in OWNERS:
                    names[alias.asname or alias.name] = alias.name
    return names


def _table_of(node: ast.expr, models: dict[str, str], tables: dict[str, str]) -> str | None:
    """The owned model ``node`` names: the class, its ``__table__`` or an alias of that."""
    if isinstance(node, ast.Name):
        return models.get(node.id) or tables.get(node.id)
    if (
        isinstance(node, ast.Attribute)
        and node.attr == "__table__"
        and isinstance(node.value, ast.Name)
    ):
        return models.get(node.value.id)
    return None


def _created(node: ast.Call, models: dict[str, str], tables: dict[str, str]) -> str | None:
    func = node.func
    if isinstance(func, ast.Name) and func.id in models:
        return models[func.id]  # Task(...)
    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
    if name == "insert":
        if node.args:  # insert(Task), dialect.insert(T)
            return _table_of(node.args[0], models, tables)
        if isinstance(func, ast.Attribute):  # Task.__table__.insert(), T.insert()
            return _table_of(func.value, models, tables)
    return None


def creations(modules: dict[str, Path]) -> list[str]:
    """``module:line creates Model`` for every creation of an owned model outside its owner."""
    found: list[str] = []
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        models = _model_names(tree)
        if not models:
            continue
        tables = {
            target.id: models[value.value.id]
            for stmt in ast.walk(tree)
            if isinstance(stmt, ast.Assign)
            and isinstance(value := stmt.value, ast.Attribute)
            and value.attr == "__table__"
            and isinstance(value.value, ast.Name)
            and value.value.id in models
            for target in stmt.targets
            if isinstance(target, ast.Name)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and (model := _created(node, models, tables)):
                owners = OWNERS[model]
                if not any(module == o or module.startswith(f"{o}.") for o in owners):
                    found.append(f"{module}:{node.lineno} creates {model}")
    return sorted(found)


def test_only_the_owners_create_tasks_and_judgments() -> None:
    assert creations(module_files(REPO, ("app",))) == []


def test_the_owners_do_create_them() -> None:
    """The rule is not vacuous: the owners' own creations are seen when they are not owners."""
    modules = module_files(REPO, ("app",))
    owned = {m: p for m, p in modules.items() if m.startswith(("app.tasks", "app.judging"))}
    saved = dict(OWNERS)
    try:
        OWNERS.update({"Task": ("app.nobody",), "Judgment": ("app.nobody",)})
        seen = creations(owned)
    finally:
        OWNERS.update(saved)
    assert any(line.startswith("app.tasks.service:") and line.endswith("Task") for line in seen)
    assert any(
        line.startswith("app.judging.repository:") and line.endswith("Judgment") for line in seen
    )


@pytest.fixture
def bad_tree(tmp_path: Path) -> dict[str, Path]:
    files = {
        "app/__init__.py": "",
        "app/tasks/__init__.py": "",
        "app/tasks/service.py": "from app.kernel.models import Task\nt = Task(id=1)\n",
        "app/plans/__init__.py": "",
        "app/plans/a.py": "from app.kernel.models import Task\nt = Task(id=1)\n",
        "app/plans/b.py": "from sqlalchemy import insert\nfrom app.kernel.models import Task as X\n"
        "q = insert(X)\nr = insert(X.__table__)\n",
        "app/plans/c.py": "from app.kernel.models import Judgment, Task\nJ = Judgment.__table__\n"
        "q = J.insert()\nr = Task.__table__.insert()\ns = dialect.insert(J)\nu = J.update()\n",
        "app/plans/d.py": "from other import Task\nt = Task(id=1)\n",
    }
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return module_files(tmp_path, ("app",))


def test_the_checker_sees_a_bad_tree(bad_tree: dict[str, Path]) -> None:
    assert creations(bad_tree) == [
        "app.plans.a:2 creates Task",
        "app.plans.b:3 creates Task",
        "app.plans.b:4 creates Task",
        "app.plans.c:3 creates Judgment",
        "app.plans.c:4 creates Task",
        "app.plans.c:5 creates Judgment",
    ]
