"""Episodic memory: task episodes (trajectory, outcome, reflection), conversations."""
