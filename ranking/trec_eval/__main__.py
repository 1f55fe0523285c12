"""``python -m ranking.trec_eval``: the trec_eval drop-in (:mod:`ranking.trec_eval.cli`)."""

import os

# The drop-in does no linear algebra: one BLAS thread spares the process the start of a pool
# of them when numpy is imported (about 40 ms of CPU; docs/trec-eval.md#speed). A value the
# caller set is kept.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# imported after the variable, which numpy reads when it is imported
from ranking.trec_eval.cli import main

main()
