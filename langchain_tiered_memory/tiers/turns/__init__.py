"""The conversation-turn tier: every turn of a conversation, searchable."""
