"""The ``heapjudge admin`` group: the admin console's commands, one module per subject (the
same services as the REST API and the admin pages; heavy imports happen inside the commands)."""

from __future__ import annotations

import typer

from app.cli import (
    admin_imports,
    admin_machine,
    admin_manage,
    admin_plans,
    admin_pools,
    admin_prompts,
    admin_runs,
    admin_training,
)
from app.cli.conventions import Group

app = typer.Typer(
    cls=Group,
    help="Admin console: imports, study plans, pools, progress, users, runs, LLM prompts, "
    "the machine check, training runs.",
)
for subject in (
    admin_imports.app,
    admin_plans.app,
    admin_pools.app,
    admin_manage.app,
    admin_prompts.app,
    admin_training.app,
):
    app.add_typer(subject)
app.add_typer(admin_runs.app, name="runs")
app.add_typer(admin_machine.app, name="machine")
