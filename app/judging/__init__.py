"""The judging loop: a task's questions and judgments, replayed from its log (REST endpoints,
use cases, SQL, on-loop document store, schemas), and the routing of questions to a second
assessor (``routing``, ``routing_repository``).
"""
