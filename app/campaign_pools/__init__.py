"""Pools from many runs: build, store and read them (docs/campaigns.md#pools-in-the-service)."""
