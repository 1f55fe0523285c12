"""Machine judges: text features, judges, calibration against people, LLM prompt pieces.

Pure: no FastAPI, no SQLAlchemy, no network. The formulas are in docs/features.md (features),
docs/machine-judges.md (judges, calibration, prompts) and each module's docstring.
"""
