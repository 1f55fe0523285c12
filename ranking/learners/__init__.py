"""The learning machinery under the estimators: scoring models (:mod:`ranking.learners.models`),
gradient and Pegasos solvers (:mod:`ranking.learners.optim`) and the boosting algorithms
(:mod:`ranking.learners.boosting`).
"""
