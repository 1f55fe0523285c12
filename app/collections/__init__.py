"""Collections: documents, queries, guidelines and imports."""
