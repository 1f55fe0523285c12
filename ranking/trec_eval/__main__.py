"""``python -m ranking.trec_eval``: the trec_eval drop-in (:mod:`ranking.trec_eval.cli`)."""

from ranking.trec_eval.cli import main

main()
