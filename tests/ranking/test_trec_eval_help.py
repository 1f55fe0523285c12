"""``heapjudge trec-eval -h``: every option and every measure with its description; with
``-m``, only the named measures (nicknames expanded), as trec_eval 10.0 does."""

from __future__ import annotations

import re

from ranking.trec_eval.help import MEASURE_HELP
from ranking.trec_eval.registry import MEASURES, NICKNAMES
from tests.ranking.trec_eval_support import ours


def _listed(out: str) -> list[str]:
    """The measure names of the help's measure section, in order."""
    section = out.split("Measures (in output order")[1]
    return re.findall(r"^ (\S+)$", section, flags=re.MULTILINE)


def test_every_measure_has_a_description() -> None:
    assert list(MEASURE_HELP) == [m.name for m in MEASURES]
    assert all(len(text) > 20 for text in MEASURE_HELP.values())


def test_full_help_lists_every_option_and_measure() -> None:
    status, out, err = ours("-h")
    assert (status, err) == (0, "")
    assert _listed(out) == [m.name for m in MEASURES]
    flat = " ".join(out.split())
    for text in MEASURE_HELP.values():
        assert " ".join(text.split()) in flat
    for option in (
        "-h, --help",
        "-v, --version",
        "-q, --query_eval_wanted",
        "-m, --measure",
        "-c, --complete_rel_info_wanted",
        "-l, --level_for_rel",
        "-n, --nosummary",
        "-D, --Debug_level",
        "-N, --Number_docs_in_coll",
        "-J, --Judged_docs_only",
        "-M, --Max_retrieved_per_topic",
        "-R, --Rel_info_format",
        "-Z, --Zscore",
        "-T, --Results_format",
        "-o, --Output_old_results_format",
        "--lenient",
    ):
        assert option in out, option  # fmt: skip
    for nick in NICKNAMES:
        assert f" {nick}: " in out
    assert all(len(line) <= 96 for line in out.splitlines())


def test_help_with_measures_describes_only_those() -> None:
    status, out, _ = ours("-h", "-m", "bpref", "-m", "P.5,10", "-m", "qrels_jg")
    assert status == 0
    assert _listed(out) == ["runid", "num_q", "bpref", "P", "map_avgjg", "P_avgjg",
                            "Rprec_mult_avgjg"]  # fmt: skip
    assert ours("--help", "-m", "nosuch")[0] == 1
