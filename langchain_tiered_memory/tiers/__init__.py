"""Memory tiers: policy written against LangGraph's ``BaseStore`` only."""
