"""Persistence: the agent-step end of the data path (agent step -> durable operation -> store)."""

from __future__ import annotations

from ._capability import StepPersistence
from ._settled import snapshot_state

__all__ = ('StepPersistence', 'snapshot_state')
