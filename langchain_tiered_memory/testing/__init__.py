"""Deterministic stand-ins for models and time: for tests, notebooks and the demo."""
