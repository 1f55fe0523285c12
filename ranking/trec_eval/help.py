"""``heapjudge trec-eval -h``: the full help, laid out as trec_eval 10.0's (usage, every option
with its long form, the evaluation procedure, the input formats, then the measures with their
descriptions). trec_eval prints the descriptions of the measures named with ``-m`` only; here
``-h`` alone lists every measure, ``-h -m bpref -m P`` (or a nickname) only those. The
descriptions are heapjudge's, written from the definitions in the measure modules
(:mod:`ranking.trec_eval.m_cutoffs`, ``m_judged``, ``m_interp``, ``m_gain``,
``prefs_measures``) and docs/trec-eval.md#measures.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from ranking.trec_eval.errors import TrecEvalError
from ranking.trec_eval.options import USAGE
from ranking.trec_eval.registry import MEASURES, NICKNAMES, Measure

__all__ = ["MEASURE_HELP", "help_text"]

OPTIONS = """
Options (trec_eval 10.0's, short and long forms):
 -h, --help: this help; with -m, only the named measures' descriptions.
 -v, --version: the version (to standard error) and exit.
 -q, --query_eval_wanted: per-query values too, queries in strcmp order of their ids.
 -m, --measure measure[.params]: add a measure or a nickname (repeatable). Parameters follow
     a '.', separated by ',': -m P.5,10  -m ndcg.1=3,2=9  -m rbp.p=0.8. The first -m of a
     measure sets its parameters. Default: -m official.
 -c, --complete_rel_info_wanted: average over every query of the judgments; a query missing
     from the results counts 0 (trec_eval's stand-in: one unjudged document).
 -l, --level_for_rel <num>: least grade counted relevant (default 1).
 -n, --nosummary: no summary ('all') lines.
 -D, --Debug_level <num>: accepted; no debug traces are printed.
 -N, --Number_docs_in_coll <num>: documents in the collection (utility's fourth term).
 -M, --Max_retrieved_per_topic <num>: only the first <num> ranked documents of each query.
 -J, --Judged_docs_only: drop unjudged documents from every ranking first (a ranking may be
     left empty; the values then look reasonable and are not comparable to others).
 -R, --Rel_info_format qrels|prefs|qrels_prefs|qrels_jg: the judgment file's format.
 -T, --Results_format trec_results: the results file's format (the only one).
 -Z, --Zscore <file>: print Z scores (value - mean) / stddev, from 'qid measure mean stddev'
     lines (-1000000 where the file has none), names prefixed with Z.
 -o, --Output_old_results_format: obsolete in trec_eval; accepted and ignored.
heapjudge's own:
 --lenient: read numbers as trec_eval does (atol/atof: '1.5' is grade 1, 'high' grade 0)
     instead of refusing the line with file:line: expected ... (exit status 2).
A results file '-' is read from standard input.
"""

PROCEDURE = """
Evaluation procedure:
Each query's retrieved documents are ranked by score descending, ties by document id
descending (strcmp; the rank column is ignored), then cut at -M. A document the judgments do
not name is unjudged (grade -1; -2 marks a pooled but unjudged one, which infAP samples);
most measures count unjudged documents as non-relevant, bpref, infAP, unj and
num_nonrel_judged_ret tell them apart. A document is relevant when its grade is at least -l.
Queries without judgments are ignored; queries with judgments but no results are ignored
too unless -c. Summaries are means over the queries (counts: sums; gm_*: geometric means).
Exit status: 1 usage or unknown measure, 2 unreadable or malformed input or a bad
parameter, 4 a query that cannot be evaluated.
"""

FORMATS = {
    "trec_results": "results (-T trec_results): 'qid iter docno rank sim run_id' lines; "
    "fields after the sixth are ignored, '#' lines and blank lines skipped; run_id of the "
    "last line is the runid.",
    "qrels": "qrels (-R qrels, the default): 'qid iter docno rel' lines, rel an integer "
    "grade (-1 unjudged); iter is ignored; '#' lines skipped.",
    "qrels_jg": "qrels_jg: 'qid jg docno rel', one set of judgments per judgment group "
    "(e.g. per assessor); map_avgjg, P_avgjg, Rprec_mult_avgjg average over the groups.",
    "prefs": "prefs: 'qid jg jsg docno rel_level'; within judgment group jg each sub-group "
    "jsg prefers every document of a higher rel_level to every one of a lower level; a "
    "group's preferences are closed under transitivity and must be consistent; groups may "
    "contradict each other; rel_level 0 means non-relevant.",
    "qrels_prefs": "qrels_prefs: graded qrels read as preferences, the iter column the "
    "judgment group.",
}

_CUT = "cutoffs [5,10,15,20,30,100,200,500,1000]"

#: One description per measure of :data:`ranking.trec_eval.registry.MEASURES`; R = relevant
#: judged documents, ret = retrieved, rel_i = 1 if the document at rank i is relevant.
MEASURE_HELP: dict[str, str] = {
    "runid": "The run's tag (the run_id of the results file's last line).",
    "num_q": "Number of queries evaluated (summary only).",
    "num_ret": "Number of documents retrieved (after -M and -J); summary: the sum.",
    "num_rel": "Number of relevant judged documents R; summary: the sum (with -c: of every "
    "judged query).",
    "num_rel_ret": "Number of relevant documents retrieved; summary: the sum.",
    "map": "Mean average precision: sum over relevant retrieved documents of the precision "
    "at their rank, divided by R (Buckley & Voorhees, 'Retrieval System Evaluation', 2005).",
    "gm_map": "Geometric mean of average precision over queries, each floored at 0.00001 "
    "(summary only).",
    "Rprec": "Precision after R documents retrieved (R-precision).",
    "bpref": "Binary preference: (1/R) sum over retrieved relevant r of 1 - min(n_r, R) / "
    "min(N, R), n_r the judged non-relevant documents ranked above r, N the judged "
    "non-relevant ones; unjudged documents are skipped (Buckley & Voorhees, 'Retrieval "
    "Evaluation with Incomplete Information', SIGIR 2004).",
    "recip_rank": "Reciprocal rank of the first relevant document (0 if none is retrieved).",
    "iprec_at_recall": "Interpolated precision at recall levels [0,.1,...,1]: the highest "
    "precision at or after the rank of the lround(x*R)-th relevant document.",
    "P": f"Precision at {_CUT}: relevant in the top k / k (a short ranking counts its "
    "missing documents non-relevant).",
    "relstring": "The grades of the first documents [10] as characters: the grade 0-9, '>' "
    "above 9, '-' not in the pool, '.' pooled but unjudged (per query only).",
    "recall": f"Recall at {_CUT}: relevant in the top k / R.",
    "infAP": "Inferred average precision for sampled judgments (grade -2: pooled, not "
    "judged): at a relevant document at 0-based position j with r relevant, n non-relevant "
    "and u pooled-unjudged above it, 1/(j+1) + (j/(j+1)) ((r+n+u)/j) ((r+e)/(r+n+2e)), "
    "e = 0.00001; summed and divided by R (Yilmaz & Aslam, 'Estimating Average Precision "
    "with Incomplete and Imperfect Judgments', CIKM 2006).",
    "gm_bpref": "Geometric mean of bpref over queries, each floored at 0.00001 (summary only).",
    "Rprec_mult": "Precision after (long)(x*R + 0.9) documents, x in [0.2,0.4,...,2.0].",
    "utility": "p1*a + p2*(ret-a) + p3*(R-a) + p4*(N+a-ret-R), a relevant retrieved, N the "
    "collection size (-N); coefficients [1,-1,0,0].",
    "11pt_avg": "Mean interpolated precision over recall levels [0,.1,...,1] (parameters: "
    "the levels).",
    "binG": "Binary G: (1/R) sum over relevant retrieved documents of 1 / log2(2 + "
    "non-relevant above it) (trec_eval's experimental measure).",
    "G": "Gain-weighted measure: sum of g_i / log2(2 + C_i - S_i) over the ideal gains' "
    "sum, S_i the running sum of gains, C_i of max(ideal gain, 1); parameters grade=gain.",
    "dcg": "Discounted cumulative gain over the whole ranking, sum g_i / log2(i+2) "
    "(0-based i; gains: the grades, or grade=gain parameters).",
    "ideal_dcg": "DCG of the ideal ranking of the judged documents (same gains).",
    "ndcg": "Normalised DCG: dcg / ideal_dcg over all judged documents; parameters "
    "grade=gain, e.g. ndcg.1=3,2=9 (Jarvelin & Kekalainen, 'Cumulated Gain-Based Evaluation "
    "of IR Techniques', TOIS 2002).",
    "ndcg_rel": "Mean over the documents of positive ideal gain of the ndcg at each "
    "retrieved document of positive gain (missing ones count the final ndcg).",
    "Rndcg": "Mean of ndcg at each position where the ideal gain changes (trec_eval's loop).",
    "ndcg_cut": f"ndcg at {_CUT}: DCG(k) / IDCG(k), the grades as gains.",
    "map_cut": f"Average precision at {_CUT}: the sum over the top k only, divided by R.",
    "relative_P": f"Relative precision at {_CUT}: relevant in the top k / min(k, R).",
    "success": "Success at cutoffs [1,5,10]: 1 if a relevant document is in the top k.",
    "set_P": "Set precision: relevant retrieved / retrieved.",
    "set_relative_P": "Relative set precision: relevant retrieved / min(ret, R).",
    "set_recall": "Set recall: relevant retrieved / R.",
    "set_map": "Unranked average precision: set_P * set_recall.",
    "set_F": "Set F-measure (x+1) P R' / (x P + R'), P = set_P, R' = set_recall, x [1.0] "
    "(van Rijsbergen, 1979).",
    "num_nonrel_judged_ret": "Number of judged non-relevant documents retrieved; summary: the sum.",
    "prefs_num_prefs_poss": "Preferences (-R prefs): number of preferences possible, over "
    "judgment groups; summary: the sum.",
    "prefs_num_prefs_ful": "Number of preferences fulfilled (the preferred document ranked "
    "higher, a retrieved document above an unretrieved one); summary: the sum.",
    "prefs_num_prefs_ful_ret": "Number of preferences fulfilled between two retrieved "
    "documents; summary: the sum.",
    "prefs_simp": "Fraction of the preferences fulfilled (a pair with neither document "
    "retrieved counts as failed).",
    "prefs_pair": "Mean over document pairs with a preference either way of the fraction of "
    "the groups' preferences the ranking fulfils.",
    "prefs_avgjg": "Mean over judgment groups of each group's prefs_simp.",
    "prefs_avgjg_Rnonrel": "prefs_avgjg with each group's non-relevant documents (rel_level "
    "0) cut or padded to its number of relevant ones.",
    "prefs_simp_ret": "prefs_simp over preferences between two retrieved documents.",
    "prefs_pair_ret": "prefs_pair over pairs of two retrieved documents.",
    "prefs_avgjg_ret": "prefs_avgjg over preferences between two retrieved documents.",
    "prefs_avgjg_Rnonrel_ret": "prefs_avgjg_Rnonrel over retrieved documents.",
    "prefs_simp_imp": "prefs_simp over preferences with at least one document retrieved.",
    "prefs_pair_imp": "prefs_pair over pairs with at least one document retrieved.",
    "prefs_avgjg_imp": "prefs_avgjg over preferences with at least one document retrieved.",
    "map_avgjg": "map averaged over judgment groups (-R qrels_jg).",
    "P_avgjg": f"P at {_CUT} averaged over judgment groups (-R qrels_jg).",
    "Rprec_mult_avgjg": "Rprec_mult averaged over judgment groups (-R qrels_jg).",
    "yaap": "Yet another average precision: log((1 + s) / (1 + R - s)), s the sum of the "
    "precisions at the relevant ranks (Robertson, 'On Smoothing Average Precision', ECIR "
    "2012).",
    "rbp": "Rank-biased precision (1 - p) sum g_i p^i, gains in [0, 1], p [0.9] (rbp.p=0.8) "
    "(Moffat & Zobel, 'Rank-Biased Precision for Measurement of Retrieval Effectiveness', "
    "TOIS 2008).",
    "rbp_resid": "RBP's residual: p^ret + (1 - p) sum over unjudged i of p^i (0 when every "
    "retrieved document is judged).",
    "unj": "Fraction of unjudged documents in the top k, cutoffs [5,10,20].",
}


def _wanted(measure_args: Sequence[str]) -> list[Measure]:
    """The measures ``-m`` names (nicknames expanded) in trec_eval's order, or every one."""
    if not measure_args:
        return list(MEASURES)
    names: set[str] = set()
    for arg in measure_args:
        name = arg.partition(".")[0]
        if name in NICKNAMES:
            names.update(NICKNAMES[name])
        elif any(m.name == name for m in MEASURES):
            names.add(name)
        else:
            raise TrecEvalError(f"trec_eval: illegal measure '{arg}'", 1)
    return [m for m in MEASURES if m.name in names]


def _wrapped(text: str, indent: str) -> list[str]:
    return textwrap.wrap(
        text, width=92, initial_indent=indent, subsequent_indent=indent, break_on_hyphens=False
    )


def help_text(measure_args: Sequence[str] = ()) -> str:
    """The help: usage, options, procedure, input formats, the nicknames and the measures
    ``-m`` names (every measure without ``-m``), each with its description."""
    lines = [USAGE + OPTIONS + PROCEDURE, "Input formats:"]
    for text in FORMATS.values():
        lines += _wrapped(text, " ")
    lines += ["", "Nicknames (-m):"]
    for nick, names in NICKNAMES.items():
        lines += _wrapped(f"{nick}: {' '.join(names)}", " ")
    lines += ["", "Measures (in output order; defaults in brackets):"]
    for measure in _wanted(measure_args):
        lines.append(f" {measure.name}")
        lines += _wrapped(MEASURE_HELP[measure.name], "     ")
    return "\n".join(lines) + "\n"
