"""File formats of both cores: TREC runs and qrels (:mod:`ranking.io.trec`, and the columnar
reader for large files :mod:`ranking.io.trec_fast`), LETOR/SVMlight feature files
(:mod:`ranking.io.letor`) and top-k ground truth as JSON Lines with its κ-labels
(:mod:`ranking.io.topk`).
"""
