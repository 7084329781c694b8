"""Runnable samples: support chats under Temporal (a workflow per conversation) and DBOS (a workflow per turn).

Both samples hold the conversation in `conversation.py` one message at a time: a detail given in
the first turn is pushed out of the model's context by `SlidingWindowCompaction`, and the last
turn asks for it back, which the agent answers through `search_conversation_history` over what
`StepPersistence` stored.
"""
