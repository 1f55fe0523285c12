"""Text and retrieval: one analyser for the project (``text``), BM25 over a collection
(``bm25``), query-term highlighting of judged documents (``highlight``) and paragraph reflow of
plain text (``reflow``).
"""
