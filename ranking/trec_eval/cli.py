"""``heapjudge trec-eval``: trec_eval 10.0's command line and output, byte for byte
(docs/trec-eval.md). Also ``python -m ranking.trec_eval`` and ``heapjudge-trec-eval``."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TextIO

from ranking.trec_eval.errors import TrecEvalError
from ranking.trec_eval.evaluate import evaluate_merged, format_lines
from ranking.trec_eval.fast_merge import FastMerged, fast_merge
from ranking.trec_eval.merge import merge
from ranking.trec_eval.options import USAGE, Options, parse_args
from ranking.trec_eval.registry import Context
from ranking.trec_eval.select import select

# The readers (readers.py, fast_read.py, strict_text.py) and the help are imported where
# they are used: the compiled join reads most files, and every start pays for the modules
# it imports (docs/trec-eval.md#speed).

__all__ = ["main", "run"]

VERSION = "10.0 (heapjudge)"


def _evaluate(options: Options) -> list[str]:
    requested = select(options.measures)
    if options.results_format != "trec_results":
        raise TrecEvalError(
            f"trec_eval: Illegal retrieval results format '{options.results_format}'", 2
        )
    if options.rel_format != "qrels":
        from ranking.trec_eval.prefs_cli import evaluate_prefs

        return evaluate_prefs(options, requested)
    rel_file, run_file = options.files
    # The C join refuses every qrels file that last_fields_are_integers refuses (its grades
    # are integer text of at most 8 characters ending the line), so that check, one more
    # pass over the file, is made only when the join has declined.
    joined = fast_merge(
        rel_file,
        run_file,
        level=options.level,
        max_ret=options.max_ret,
        judged_only=options.judged_only,
        complete=options.complete,
    )
    if joined is None:
        from ranking.trec_eval.fast_read import fast_qrels, fast_run
        from ranking.trec_eval.readers import read_qrels, read_run
        from ranking.trec_eval.strict_text import last_fields_are_integers

        # the compiled scan takes grades as doubles (1e1 = 10): integer text only (strict_text)
        integers = last_fields_are_integers(rel_file)
        fast = fast_qrels(rel_file) if integers else None
        qrels = fast or read_qrels(rel_file, lenient=options.lenient)
        run = fast_run(run_file) or read_run(run_file, lenient=options.lenient)
    zscores = None
    if options.zscores:
        from ranking.trec_eval.readers import read_zscores

        zscores = read_zscores(options.zscores, lenient=options.lenient)
    for item in requested:
        if item.measure.source != "qrels":
            raise TrecEvalError(
                f"trec_eval: measure '{item.measure.name}' needs -R {item.measure.source}\n"
                f"trec_eval: Can't calculate measure '{item.measure.name}'",
                4,
            )
    if joined is None:
        merged = merge(
            qrels,
            run,
            level=options.level,
            max_ret=options.max_ret,
            judged_only=options.judged_only,
            complete=options.complete,
        )
        joined = FastMerged(merged, run.runid, int((qrels.rel > 0).sum()))
    ev = evaluate_merged(
        joined.merged,
        requested,
        context=Context(num_docs=options.num_docs),
        runid=joined.runid,
        qrels_rel_count=joined.qrels_rel_count,
        zscores=zscores,
        query=options.query,
    )
    lines = format_lines(
        ev,
        query=options.query,
        summary=options.summary,
        complete=options.complete,
        zmode=zscores is not None,
    )
    if ev.error is not None:
        raise TrecEvalError(ev.error, 4, lines)
    return lines


def run(args: Sequence[str], out: TextIO, err: TextIO) -> int:
    """Run the command line ``args``; the exit status trec_eval would give."""
    try:
        options = parse_args(list(args))
        if options.help:
            from ranking.trec_eval.help import help_text

            out.write(help_text(options.measures))
            return 0
        if options.version:
            err.write(f"trec_eval version {VERSION}\n")
            return 0
        if len(options.files) != 2:
            raise TrecEvalError(USAGE, 1)
        lines = _evaluate(options)
    except TrecEvalError as error:
        _write(out, error.lines)
        out.flush()
        message = error.message
        err.write(message if message.endswith("\n") else message + "\n")
        return error.status
    _write(out, lines)
    return 0


def _write(out: TextIO, lines: list[str]) -> None:
    """Each line (or block of ``-q`` lines) and its newline, without one string of the whole
    output (``-q`` on a large run prints more than the run's size)."""
    for line in lines:
        out.write(line)
        out.write("\n")


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point (``heapjudge-trec-eval``)."""
    args = sys.argv[1:] if argv is None else argv
    status = run(args, sys.stdout, sys.stderr)
    sys.stdout.flush()
    raise SystemExit(status)
