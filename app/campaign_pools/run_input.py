"""The runs a campaign pool is built from (docs/campaigns.md#pools-in-the-service): uploaded
TREC files, read by the one run parser every upload shares
(:func:`labeling.study.pools.parse_trec_run`, every bad line of every file reported at once),
or runs stored on the collection, named by name or id, ranked as trec_eval ranks them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from app.kernel.db import Database
from app.kernel.errors import Invalid, issue_items
from app.runs import service as stored_runs
from labeling.identifiers import normal_identifier
from labeling.sources import SourceError
from labeling.sources.base import merge_errors
from labeling.study.pools import parse_trec_run

__all__ = [
    "ALL_STORED",
    "MAX_RUNS",
    "Runs",
    "StoredChoice",
    "read_runs",
    "run_name",
    "stored_rankings",
]

#: At most this many runs in one pool.
MAX_RUNS = 200
#: Runs by name: query id → documents best first.
Runs = dict[str, dict[str, list[str]]]
#: ``BuildSpec.stored``'s value for every run stored on the collection.
ALL_STORED = "all"
#: Stored runs to pool: names (str) or ids (int), in run order, or :data:`ALL_STORED`.
StoredChoice = Sequence[str | int] | str


def run_name(filename: str) -> str:
    """A run's name from its file name: the last path component without its last suffix."""
    base = filename.replace("\\", "/").rsplit("/", 1)[-1]
    stem, dot, _suffix = base.rpartition(".")
    return stem if dot and stem else base


def read_runs(
    files: Mapping[str, str | bytes | Iterable[bytes]], file_names: Mapping[str, str] | None = None
) -> Runs:
    """Parse every run (name → TREC text); Invalid listing each bad line as ``{file, line,
    msg}`` of every file at once (``file_names``: the file of each run, default its name), or
    a bad name."""
    if not files:
        raise Invalid("give at least one run")
    if len(files) > MAX_RUNS:
        raise Invalid(f"at most {MAX_RUNS} runs per pool, got {len(files)}")
    out: Runs = {}
    errors = []
    for name, data in files.items():
        if not name or len(name) > 100 or any(c.isspace() for c in name):
            raise Invalid(f"run name {name[:120]!r}: 1..100 characters without spaces")
        try:
            parsed = parse_trec_run(data, file=(file_names or {}).get(name, name))
        except SourceError as err:
            errors.append(err)
            continue
        out[name] = {q: [e.doc_id for e in entries] for q, entries in parsed.items()}
    merged = merge_errors(errors)
    if merged is not None:
        raise Invalid(
            issue_items(merged.issues),
            extra={"message": "the runs have errors; nothing was stored"},
        )
    return out


def _stored_names(infos: Sequence[Any], chosen: Sequence[str | int]) -> list[str]:
    """The names of the chosen stored runs (a str names a run, an int is its id), in the order
    given, each once; Invalid naming every one the collection lacks."""
    by_name = {r.name: r.name for r in infos}
    by_id = {r.id: r.name for r in infos}
    names: list[str] = []
    unknown: list[str] = []
    for item in chosen:
        if isinstance(item, int) and not isinstance(item, bool):
            found = by_id.get(item)
        else:
            found = by_name.get(normal_identifier(str(item).strip()))
        if found is None:
            unknown.append(str(item))
        elif found not in names:
            names.append(found)
    if unknown:
        shown = ", ".join(repr(u[:100]) for u in unknown[:20])
        more = f" and {len(unknown) - 20} more" if len(unknown) > 20 else ""
        raise Invalid(
            f"the collection has no stored run {shown}{more} (a run is named by its name or "
            "id; heapjudge admin runs list shows them); nothing was stored",
            extra={"unknown_runs": unknown[:100]},
        )
    if not names:
        raise Invalid("name at least one stored run")
    return names


def stored_rankings(*, db: Database, collection_id: int, chosen: StoredChoice) -> Runs:
    """Runs stored on the collection as rankings (run → query → documents best first, ranked
    as trec_eval ranks them: :func:`app.runs.service.run_rankings`): those named (names or
    ids, in the order given) or, with :data:`ALL_STORED`, every stored run by upload order.
    404 for no collection; Invalid naming the runs the collection lacks, or for none."""
    infos = stored_runs.list_runs(db=db, collection_id=collection_id)
    if isinstance(chosen, str):
        if chosen != ALL_STORED:
            raise Invalid(f"stored runs: a list of names or ids, or {ALL_STORED!r}")
        names = [r.name for r in infos]
        if not names:
            raise Invalid("the collection has no stored run: upload runs first")
    else:
        names = _stored_names(infos, chosen)
    if len(names) > MAX_RUNS:
        raise Invalid(f"at most {MAX_RUNS} runs per pool, got {len(names)}")
    return stored_runs.run_rankings(db=db, collection_id=collection_id, names=names)
