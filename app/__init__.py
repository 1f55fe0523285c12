"""heapjudge service: thin adapters (REST API, web pages, CLI) around the pure cores."""
