"""`durable-recall ui`: a read-only web inspector of a step store, rendered on the server.

Starlette routes and Jinja2 templates (in `_ui_templates/`, autoescaped: every stored text is
escaped, so a message holding markup shows as text). No JavaScript and no build step. Pages:

* `/`: the conversations in scope, with run counts and times;
* `/conversation?id=C&offset=N`: C's timeline, a page at a time (see `_serve_timeline`);
* `/run?id=R&offset=N`: one run's record, positions as search results number them;
* `/search?q=...`: the tool's search (bm25 or hybrid; roles, since/until, run), hits highlighted;
* `/check`: the `durable-recall check` report (with `--all` only: it names runs of every conversation).

Every route is GET (HEAD too); anything else is 405. An id out of scope is answered exactly as an id
that does not exist (404), so a scoped inspector reveals nothing of other conversations.
"""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route

from .._vocabulary import RANKINGS, ROLES
from ..stores import StepStore
from ._serve_scope import ServeScope, conversation_rows, run_in_scope
from ._serve_search import Query, Searcher, highlight, not_in_scope, time_text
from ._serve_timeline import read_timeline
from ._store import OpenedStore

__all__ = ('PAGE_SIZE', 'build_ui_app')

PAGE_SIZE = 100
"""Messages on one timeline page."""

_TEMPLATES = Path(__file__).parent / '_ui_templates'

_HEADERS = {
    # Nothing but our own stylesheet runs or loads: stored text that slipped past escaping still could not act.
    'content-security-policy': "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'",
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'cache-control': 'no-store',
}


class _Inspector:
    def __init__(self, store: StepStore, scope: ServeScope, label: str) -> None:
        self.store = store
        self.scope = scope
        self.label = label
        self.searcher = Searcher(store, scope)
        self.env = Environment(
            loader=FileSystemLoader(_TEMPLATES),
            autoescape=select_autoescape(['html'], default=True),
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.env.filters['time'] = time_text

    def render(self, name: str, status: int = 200, **values: Any) -> HTMLResponse:
        page = self.env.get_template(name).render(store=self.label, scope=self.scope.describe(), **values)
        return HTMLResponse(page, status_code=status, headers=_HEADERS)

    def not_found(self, message: str) -> HTMLResponse:
        return self.render('missing.html', status=404, title='Not found', message=message)

    async def conversations(self, request: Request) -> Response:
        rows = await conversation_rows(self.store, self.scope)
        return self.render('conversations.html', title='Conversations', rows=rows)

    async def conversation(self, request: Request) -> Response:
        conversation_id = request.query_params.get('id', '')
        offset = _offset(request)
        runs = await self.store.list_runs(conversation_id=conversation_id) if self.scope.allows(conversation_id) else []
        if not conversation_id or not runs:
            return self.not_found(not_in_scope('conversation', conversation_id))
        timeline = await read_timeline(self.store, runs, offset=offset, limit=PAGE_SIZE)
        return self.render(
            'timeline.html',
            title=f'Conversation {conversation_id}',
            timeline=timeline,
            run=None,
            base=f'/conversation?{_query(id=conversation_id)}',
            conversation_id=conversation_id,
        )

    async def run(self, request: Request) -> Response:
        run_id = request.query_params.get('id', '')
        run = await run_in_scope(self.store, self.scope, run_id)
        if run is None:
            return self.not_found(not_in_scope('run', run_id))
        timeline = await read_timeline(self.store, [run], offset=_offset(request), limit=PAGE_SIZE, own_only=False)
        return self.render(
            'timeline.html',
            title=f'Run {run.run_id}',
            timeline=timeline,
            run=run,
            base=f'/run?{_query(id=run.run_id)}',
            conversation_id=run.conversation_id,
        )

    async def search(self, request: Request) -> Response:
        params = request.query_params
        query = Query(
            params.get('q', ''),
            conversation_id=params.get('conversation', '') or self.scope.only(),
            run_id=params.get('run') or None,
            roles=[role for role in params.getlist('role') if role] or None,
            since=params.get('since') or None,
            until=params.get('until') or None,
            ranking=params.get('ranking', 'bm25'),
        )
        values: dict[str, Any] = {'form': query, 'roles': ROLES, 'rankings': RANKINGS, 'hits': [], 'answer': None}
        values['conversations'] = [row.conversation_id for row in await conversation_rows(self.store, self.scope)]
        if query.query.strip():
            answer, outcome = await self.searcher.search(query)
            values['answer'] = answer
            if outcome is not None:
                values['hits'] = [_hit_view(hit, outcome.terms) for hit in outcome.hits]
        return self.render('search.html', title='Search', **values)

    async def check(self, request: Request) -> Response:
        if not self.scope.everything:
            return self.render(
                'missing.html',
                status=403,
                title='Check',
                message='The check reads the whole store and names runs of every conversation: start the '
                'inspector with --all to see it.',
            )
        from ._check import check_store

        out, err = io.StringIO(), io.StringIO()
        args = argparse.Namespace(rebuild_index=False, json=True, progress=False)
        status = await check_store(OpenedStore(self.store, self.label), args, out, err)
        return self.render('check.html', title='Check', report=json.loads(out.getvalue()), clean=status == 0)

    async def stylesheet(self, request: Request) -> Response:
        css = (_TEMPLATES / 'style.css').read_text(encoding='utf-8')
        return Response(css, media_type='text/css', headers={'cache-control': 'max-age=300'})

    async def robots(self, request: Request) -> Response:
        return PlainTextResponse('User-agent: *\nDisallow: /\n')


def build_ui_app(store: StepStore, scope: ServeScope, label: str) -> Starlette:
    """The inspector's ASGI app: GET routes only, over `store`, showing what `scope` allows."""
    inspector = _Inspector(store, scope, label)
    routes = [
        Route('/', inspector.conversations, methods=['GET']),
        Route('/conversation', inspector.conversation, methods=['GET']),
        Route('/run', inspector.run, methods=['GET']),
        Route('/search', inspector.search, methods=['GET']),
        Route('/check', inspector.check, methods=['GET']),
        Route('/style.css', inspector.stylesheet, methods=['GET']),
        Route('/robots.txt', inspector.robots, methods=['GET']),
    ]
    return Starlette(routes=routes)


def _offset(request: Request) -> int:
    try:
        return max(0, int(request.query_params.get('offset', '0')))
    except ValueError:
        return 0


def _query(**values: str) -> str:
    from urllib.parse import urlencode

    return urlencode(values)


def _hit_view(hit: Any, terms: list[str]) -> dict[str, Any]:
    """One hit for the search page: where it is, and the lines of its block with the matched words marked."""
    from ..text import DEFAULT_SKIP_TOOLS, display_lines, message_role

    lines: list[dict[str, Any]] = []
    for line in hit.lines:
        message = line.message
        text = '\n'.join(display_lines(message, terms, skip_tools=DEFAULT_SKIP_TOOLS))
        lines.append(
            {
                'position': line.position,
                'role': message_role(message),
                'own': line.position == hit.position,
                'pieces': highlight(text, terms),
            }
        )
    run = hit.run
    return {
        'run_id': run.run_id,
        'conversation_id': run.conversation_id,
        'position': hit.position,
        'score': round(hit.score, 3),
        'lines': lines,
    }
