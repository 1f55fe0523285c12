"""BM25 retrieval over a collection (runs, pools, prior orders)."""
