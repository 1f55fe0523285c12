"""Runs stored on a collection: upload, list, delete; the collection's label sets; leaderboards
with significance and the agreement of two label sets on system orderings
(docs/campaigns.md#runs-on-a-collection)."""
