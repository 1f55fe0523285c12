"""Machine assessors in the service: the LLM judge's HTTP client, its response cache and its
spending per study (docs/machine-judges.md#the-llm-client)."""
