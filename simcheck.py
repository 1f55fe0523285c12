import sys, time, numpy as np
from labeling.study.assisted import compare_assisted
from ranking.metrics import kappa_ndcg
strategy = sys.argv[1]; trials=int(sys.argv[2])
t=time.time()
runs = compare_assisted(strategy, "machine0.8", 50, 10, trials, seed=0)
labels = np.array([r.truth_labels for r in runs], float)
scores = np.array([[50 - p for p in r.produced_rank] for r in runs], float)
kn = kappa_ndcg(labels, scores, at=10)
h=[r.judgments for r in runs]; m=[r.machine_answers for r in runs]
print(sys.argv[3:], strategy, trials, "human", np.mean(h), "first20", np.mean(h[:20]), "machine", np.mean(m), "kndcg", round(kn.mean(),4), "min", round(kn.min(),3), f"{time.time()-t:.0f}s")
