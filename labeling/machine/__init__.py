"""Machine assessors: text features, judges, calibration against people, LLM prompt pieces.

Pure: no FastAPI, no SQLAlchemy, no network. The formulas are in docs/features.md (features)
and in each module's docstring (judges, calibration, prompts).
"""
