"""Display lines clipped around the rarest query term: user text, shorter system text, shorter tool arguments."""

from __future__ import annotations

from pydantic_ai import messages as m

from durable_recall.text import display_lines, index_text

from ._render_parts import request, response


class TestDisplayClipping:
    def test_long_user_text(self) -> None:
        text = 'lorem ' * 100 + 'ZEBRA ' + 'lorem ' * 100
        (line,) = display_lines(request(m.UserPromptPart(text)), {'zebra'})
        assert line.startswith('User: ...')
        assert len(line) == len('User: ') + 506
        assert line.index('ZEBRA') == len('User: ') + 253
        assert index_text(request(m.UserPromptPart(text))) == text

    def test_system_text_is_clipped_shorter(self) -> None:
        text = 'lorem ' * 100
        (line,) = display_lines(request(m.SystemPromptPart(text)), set())
        assert line == 'System: ' + text[:200] + '...'

    def test_tool_call_arguments_are_clipped_shorter(self) -> None:
        args = {'body': 'lorem ' * 50 + 'ZEBRA ' + 'lorem ' * 50}
        message = response(m.ToolCallPart('write', args, 'c1'))
        (line,) = display_lines(message, {'zebra'})
        assert line.startswith('Tool call write(...') and line.endswith('...)')
        assert len(line) == len('Tool call write(') + 206 + 1
        assert 'ZEBRA' in line
        assert index_text(message) == 'write ' + args['body']

    def test_each_part_is_clipped_around_its_rarest_term(self) -> None:
        text = 'the ' + 'lorem ' * 100 + 'ZEBRA ' + 'lorem ' * 100
        message = request(m.UserPromptPart(text))
        assert 'ZEBRA' in display_lines(message, {'the', 'zebra'}, rarity={'the': 0.1, 'zebra': 2.0})[0]
        assert 'ZEBRA' not in display_lines(message, {'the', 'zebra'})[0]
