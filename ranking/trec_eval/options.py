"""trec_eval's command line (``trec_eval.c``): the same short and long options, read the way
``getopt_long`` reads them (``-q -c``, ``-qc``, ``-M100``, ``-M 100``, ``--measure=P.5``,
``--measure P.5``, options after the file names)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ranking.trec_eval.c_numbers import c_atol
from ranking.trec_eval.errors import TrecEvalError

__all__ = ["USAGE", "Options", "parse_args"]

USAGE = """Usage: heapjudge trec-eval [-h] [-q] {-m measure}* trec_rel_file trec_top_file
   -h: Give full help information, including other options
   -q: In addition to summary evaluation, give evaluation for each query
   -m: calculate and print measures indicated by 'measure'
       ('-m all_trec' prints all qrels measures, '-m official' is default)
"""

_LONG = {
    "help": ("h", False),
    "version": ("v", False),
    "query_eval_wanted": ("q", False),
    "measure": ("m", True),
    "complete_rel_info_wanted": ("c", False),
    "level_for_rel": ("l", True),
    "nosummary": ("n", False),
    "Debug_level": ("D", True),
    "Judged_docs_only": ("J", False),
    "Number_docs_in_coll": ("N", True),
    "Max_retrieved_per_topic": ("M", True),
    "Rel_info_format": ("R", True),
    "Results_format": ("T", True),
    "Output_old_results_format": ("o", True),
    "Zscore": ("Z", True),
    "lenient": ("lenient", False),
}
_WITH_ARG = set("mlDNMRTZ")
_FLAGS = set("hvqcnJo")


@dataclass
class Options:
    """The parsed command line (trec_eval's ``EPI`` and file names)."""

    query: bool = False
    summary: bool = True
    complete: bool = False
    judged_only: bool = False
    level: int = 1
    num_docs: int = 0
    max_ret: int = 2147483647
    rel_format: str = "qrels"
    results_format: str = "trec_results"
    zscores: str | None = None
    measures: list[str] = field(default_factory=list)
    help: bool = False
    version: bool = False
    lenient: bool = False
    files: list[str] = field(default_factory=list)


def _apply(options: Options, letter: str, value: str | None) -> None:
    if letter in {"h"}:
        options.help = True
    elif letter == "v":
        options.version = True
    elif letter == "q":
        options.query = True
    elif letter == "c":
        options.complete = True
    elif letter == "n":
        options.summary = False
    elif letter == "J":
        options.judged_only = True
    elif letter == "lenient":
        options.lenient = True
    elif letter == "o":
        pass  # obsolete in trec_eval, accepted and ignored
    else:
        _apply_value(options, letter, value or "")


def _apply_value(options: Options, letter: str, value: str) -> None:
    if letter == "m":
        options.measures.append(value)
    elif letter == "l":
        options.level = c_atol(value.encode())
    elif letter == "N":
        options.num_docs = c_atol(value.encode())
    elif letter == "M":
        options.max_ret = c_atol(value.encode())
    elif letter == "R":
        options.rel_format = value
    elif letter == "T":
        options.results_format = value
    elif letter == "Z":
        options.zscores = value
    # -D (debug level) is accepted; heapjudge prints no debug traces


def _long(options: Options, args: list[str], i: int) -> int:
    body = args[i][2:]
    name, eq, inline = body.partition("=")
    matches = [key for key in _LONG if key.startswith(name)]
    exact = name if name in _LONG else (matches[0] if len(matches) == 1 else None)
    if exact is None:
        raise TrecEvalError(USAGE, 1)
    letter, takes = _LONG[exact]
    if takes and not eq:
        if i + 1 >= len(args):
            raise TrecEvalError(USAGE, 1)
        _apply(options, letter, args[i + 1])
        return i + 2
    _apply(options, letter, inline if takes else None)
    return i + 1


def _short(options: Options, args: list[str], i: int) -> int:
    arg = args[i]
    j = 1
    while j < len(arg):
        letter = arg[j]
        if letter in _FLAGS:
            _apply(options, letter, None)
            j += 1
            continue
        if letter not in _WITH_ARG:
            raise TrecEvalError(USAGE, 1)
        if j + 1 < len(arg):
            _apply(options, letter, arg[j + 1 :])
            return i + 1
        if i + 1 >= len(args):
            raise TrecEvalError(USAGE, 1)
        _apply(options, letter, args[i + 1])
        return i + 2
    return i + 1


def parse_args(args: list[str]) -> Options:
    """Options and the two file names; a usage error raises :class:`TrecEvalError` (1)."""
    options = Options()
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            options.files.extend(args[i + 1 :])
            break
        if arg.startswith("--"):
            i = _long(options, args, i)
        elif arg.startswith("-") and arg != "-":
            i = _short(options, args, i)
        else:
            options.files.append(arg)
            i += 1
    return options
