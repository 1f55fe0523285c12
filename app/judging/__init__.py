"""The judging loop: a task's questions and judgments, replayed from its log (REST endpoints, use
cases, SQL, on-loop document store, schemas).
"""
