"""What one demo turn returns, whichever engine ran it.

No `from __future__ import annotations` here: under Temporal this dataclass is an update's result,
and pydantic (the payload converter) resolves its field types through `sys.modules`, which the
workflow sandbox replaces, so the annotations must be real objects rather than strings.
"""

from dataclasses import dataclass
from typing import Any

from pydantic_ai.agent import AgentRunResult
from pydantic_ai.messages import ModelMessage

__all__ = ('TurnResult', 'turn_result')


@dataclass(frozen=True, kw_only=True)
class TurnResult:
    """One agent run of the conversation.

    Attributes:
        output: What the agent answered.
        run_id: The run's id, which is also its store run id.
        history: The run's whole history at its end, as the next turn continues it (compacted).
        new_messages: The messages this run added.
        engine_id: Where the engine recorded the run (a workflow id), if it did.
    """

    output: str
    run_id: str
    history: list[ModelMessage]
    new_messages: list[ModelMessage]
    engine_id: str | None = None


def turn_result(result: AgentRunResult[Any], engine_id: str | None = None) -> TurnResult:
    """The parts of an agent run the demo shows."""
    return TurnResult(
        output=str(result.output),
        run_id=result.run_id,
        history=result.all_messages(),
        new_messages=result.new_messages(),
        engine_id=engine_id,
    )
