"""Runnable samples: a Temporal worker and starter, and a DBOS app, holding one long conversation.

Both samples run the conversation in `conversation.py`: a detail given in the first turn is pushed
out of the context window by `SlidingWindowCompaction`, and the last turn asks for it back, which
the agent answers through `search_conversation_history` over what `StepPersistence` stored.
"""
