"""What the starter says while it waits: is a worker there, and is the conversation moving?

A workflow started on a task queue no worker polls waits on the server, silently and for ever:
the starter would look hung. So before starting, the starter asks the server which workers poll
the queue (`DescribeTaskQueue`), says so on one line when none does, and gives up after a bounded
wait (`NoWorkerError`) without starting anything. While the conversation runs, it describes the
workflow every few seconds: a task no worker has picked up for a while (the worker stopped, or
points at another server or queue), or an activity that keeps failing (a broken store, a missing
API key), is said once on stderr, and said again when it clears. An activity that timed out on
its worker (a worker killed mid-request stops heartbeating, and Temporal gives the activity to
another worker once `HEARTBEAT_TIMEOUT` passes) is said with the worker that lost it. Once the
conversation moves on after any of these, the driver says how long it waited (`Watch.progress`).
Those waits are not failures: the workflow keeps its place, and a worker that comes (back)
carries on from there.
"""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from temporalio.api.enums.v1 import PendingActivityState, PendingWorkflowTaskState, TaskQueueType, TimeoutType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflow.v1 import PendingActivityInfo
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client, WorkflowHandle

from workflows.temporal import HEARTBEAT_TIMEOUT

WORKER_COMMAND = 'python -m workflows.temporal.worker'

RECENT_POLL = timedelta(seconds=90)
"""A poller seen this recently is a live worker: a worker's long poll lasts about a minute, and the
server lists a stopped worker's pollers for some minutes after it went."""


class NoWorkerError(RuntimeError):
    """No worker polled the task queue within the starter's wait: nothing was started."""


def say(message: str, label: str = '') -> None:
    """One status line on stderr (stdout carries the conversation); `label` names the conversation."""
    sys.stderr.write(f'starter: {f"[{label}] " if label else ""}{message}\n')
    sys.stderr.flush()


async def live_pollers(client: Client, task_queue: str) -> int:
    """How many workers have polled the queue's workflow tasks within `RECENT_POLL`."""
    response = await client.workflow_service.describe_task_queue(
        DescribeTaskQueueRequest(
            namespace=client.namespace,
            task_queue=TaskQueue(name=task_queue),
            task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
        )
    )
    now = datetime.now(UTC)
    return sum(now - poller.last_access_time.ToDatetime(UTC) <= RECENT_POLL for poller in response.pollers)


async def wait_for_worker(client: Client, task_queue: str, address: str, *, timeout: float) -> None:
    """Return once a worker polls the queue; say so while none does, and give up after `timeout` seconds.

    Raises:
        NoWorkerError: No worker polled within `timeout` seconds.
    """
    if await live_pollers(client, task_queue):
        return
    say(
        f'no worker is polling task queue {task_queue!r} on {address}; start one with `{WORKER_COMMAND}`'
        f' (same TEMPORAL_ADDRESS). Waiting up to {timeout:g}s for one.'
    )
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while (left := deadline - loop.time()) > 0:
        await asyncio.sleep(min(1.0, left))
        if await live_pollers(client, task_queue):
            say('a worker is polling now; starting the conversation')
            return
    raise NoWorkerError(
        f'no worker polled task queue {task_queue!r} on {address} within {timeout:g}s; start one with'
        f' `{WORKER_COMMAND}` (same TEMPORAL_ADDRESS), then run the starter again'
    )


@dataclass
class Watch:
    """Tells, on stderr, when the running conversation waits on a missing or lost worker, or a failing activity.

    Attributes:
        handle: The workflow (no run id: it follows continues-as-new).
        task_queue: Its task queue, to name in the message.
        stalled_after: Seconds a task may wait unclaimed before the starter says so.
        label: The conversation, named on each line (empty for a single conversation).
        every: Seconds between two looks.
        heartbeat_timeout: The activities' heartbeat timeout. While a running activity's last
            heartbeat is older than most of it (its worker may be gone), the watch looks five
            times a second, so it sees the timeout and the retry even when the next worker
            finishes the retried activity at once.
    """

    handle: WorkflowHandle[object, object]
    task_queue: str
    stalled_after: float
    label: str = ''
    every: float = 1.0
    heartbeat_timeout: timedelta = HEARTBEAT_TIMEOUT
    _first_seen: dict[tuple[object, ...], float] = field(default_factory=dict[tuple[object, ...], float])
    _stalled: bool = False
    _failures: set[tuple[str, int]] = field(default_factory=set[tuple[str, int]])
    _trouble_since: float | None = None

    async def run(self) -> None:
        """Look every `every` seconds until cancelled (when the conversation ends)."""
        loop = asyncio.get_running_loop()
        pause = self.every
        while True:
            await asyncio.sleep(pause)
            pause = self.every
            try:
                description = (await self.handle.describe()).raw_description
            except Exception:  # a look that fails tells nothing; the update call reports real errors
                continue
            waiting: list[tuple[object, ...]] = []
            task = description.pending_workflow_task
            if description.HasField('pending_workflow_task') and (
                task.state == PendingWorkflowTaskState.PENDING_WORKFLOW_TASK_STATE_SCHEDULED
            ):
                waiting.append(('workflow task', task.scheduled_time.ToNanoseconds(), task.attempt))
            for activity in description.pending_activities:
                if activity.state == PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED and not (
                    activity.HasField('next_attempt_schedule_time')
                ):
                    waiting.append(('activity', activity.activity_id, activity.attempt))
                if activity.attempt > 1 and activity.HasField('last_failure'):
                    self._failed(activity)
                if self._silent(activity):
                    pause = min(pause, 0.2)
            now = loop.time()
            self._first_seen = {key: self._first_seen.get(key, now) for key in waiting}
            stalled = any(now - seen >= self.stalled_after for seen in self._first_seen.values())
            if stalled and not self._stalled:
                self._trouble()
                say(
                    f"no worker has picked up the conversation's next task for {self.stalled_after:g}s: is a worker"
                    f' running on task queue {self.task_queue!r} (`{WORKER_COMMAND}`)? Still waiting: the'
                    ' conversation keeps its place, and a worker carries on from there (Ctrl-C stops waiting).',
                    self.label,
                )
            elif self._stalled and not stalled:
                say('a worker picked the conversation up; continuing', self.label)
            self._stalled = stalled

    def progress(self) -> None:
        """The conversation moved on (a reply came): say how long it was held up, if it was."""
        if self._trouble_since is None:
            return
        waited = asyncio.get_running_loop().time() - self._trouble_since
        self._trouble_since = None
        say(f'recovered: the conversation moved on {waited:.1f}s after the first sign of trouble', self.label)

    def _silent(self, activity: PendingActivityInfo) -> bool:
        """A running activity whose last heartbeat (or start) is older than 70% of the heartbeat timeout."""
        if activity.state != PendingActivityState.PENDING_ACTIVITY_STATE_STARTED:
            return False
        stamp = 'last_heartbeat_time' if activity.HasField('last_heartbeat_time') else 'last_started_time'
        last = getattr(activity, stamp).ToDatetime(UTC)
        return datetime.now(UTC) - last > self.heartbeat_timeout * 0.7

    def _trouble(self) -> None:
        if self._trouble_since is None:
            self._trouble_since = asyncio.get_running_loop().time()

    def _failed(self, activity: PendingActivityInfo) -> None:
        name, attempt = activity.activity_type.name, activity.attempt
        if (name, attempt) in self._failures:
            return
        self._failures.add((name, attempt))
        self._trouble()
        failure = activity.last_failure
        if failure.HasField('timeout_failure_info'):
            kind = TimeoutType.Name(failure.timeout_failure_info.timeout_type).removeprefix('TIMEOUT_TYPE_').lower()
            say(
                f'activity {name} timed out ({kind.replace("_", "-")} timeout): the worker running it was lost or'
                f' stuck, so Temporal gave it to another worker (attempt {attempt})',
                self.label,
            )
            return
        say(
            f'activity {name} failed (attempt {attempt - 1}), Temporal retries it: {" ".join(failure.message.split())}',
            self.label,
        )
