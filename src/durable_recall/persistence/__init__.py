"""Persistence: the agent-step end of the data path (agent step -> durable operation -> store)."""

from __future__ import annotations

from ..base import warm_codec
from ._capability import StepPersistence
from ._settled import snapshot_state

# Messages are encoded and decoded from this layer's first call on: build pydantic-ai's message
# adapter now, with the rest of a worker's startup, not in its first search or save.
warm_codec()

__all__ = ('StepPersistence', 'snapshot_state')
