"""Semantic memory: entity-centric facts with confidence, provenance and time."""
