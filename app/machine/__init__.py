"""Machine assessors in the service: a task's machine judge by source, its scores and pair
opinions prepared ahead, and the study calibration frozen per task
(docs/machine-judges.md#the-service)."""
