"""``python -m ranking.trec_eval``: the trec_eval drop-in (:mod:`ranking.trec_eval.launch`)."""

from ranking.trec_eval.launch import main

main()
