"""Machine judges in the service: a task's machine judge by source, its scores and pair
opinions prepared ahead, the study calibration frozen per task (docs/machine-judges.md#the-service),
and the LLM judge's HTTP client, its response cache and its spending per study
(docs/machine-judges.md#the-llm-client)."""
