"""Display clipping: window geometry, and the focus on the rarest term."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from durable_recall.text import _clip, clip, tokenize
from durable_recall.text._tokenize import iter_tokens


def filler(words: int) -> str:
    return ' '.join(['lorem'] * words)


class TestGeometry:
    def test_short_text_is_unchanged(self) -> None:
        assert clip('short ZEBRA text', 500, {'zebra'}) == 'short ZEBRA text'
        assert clip('x' * 500, 500, set()) == 'x' * 500

    def test_middle_term_is_centred(self) -> None:
        text = filler(150) + ' ZEBRA ' + filler(150)
        clipped = clip(text, 500, {'zebra'})
        assert len(clipped) == 506
        assert clipped.startswith('...') and clipped.endswith('...')
        assert clipped.index('ZEBRA') == 253
        assert clipped[3:-3] in text

    def test_tail_term_has_no_trailing_ellipsis(self) -> None:
        text = filler(200) + ' ZEBRA'
        clipped = clip(text, 500, {'zebra'})
        assert clipped.startswith('...')
        assert clipped.endswith('ZEBRA')
        assert len(clipped) == 503
        assert clipped[3:] == text[-500:]

    def test_term_in_the_head_keeps_the_head(self) -> None:
        text = 'ZEBRA ' + filler(200)
        assert clip(text, 500, {'zebra'}) == text[:500] + '...'

    def test_no_term_keeps_the_head(self) -> None:
        text = filler(200)
        assert clip(text, 500, {'absent'}) == text[:500] + '...'
        assert clip(text, 500, set()) == text[:500] + '...'

    def test_boundary(self) -> None:
        # A term ending exactly at the limit is inside the head; one character later needs a window.
        at_limit = 'x' * 494 + ' ZEBRA ' + filler(100)
        past_limit = 'x' * 495 + ' ZEBRA ' + filler(100)
        assert at_limit.index('ZEBRA') + 5 == 500
        assert clip(at_limit, 500, {'zebra'}) == at_limit[:500] + '...'
        clipped = clip(past_limit, 500, {'zebra'})
        assert clipped.startswith('...')
        assert clipped.index('ZEBRA') == 253

    def test_term_longer_than_the_limit_shows_its_end(self) -> None:
        term = 'z' * 30
        text = filler(10) + ' ' + term + ' ' + filler(10)
        clipped = clip(text, 20, {term})
        assert clipped == '...' + 'z' * 20 + '...'

    def test_long_term_kept_whole_when_it_fits(self) -> None:
        term = 'z' * 15
        text = filler(20) + ' ' + term + ' ' + filler(20)
        assert term in clip(text, 20, {term})

    def test_limit_must_be_positive(self) -> None:
        with pytest.raises(ValueError, match='limit must be at least 1, got 0'):
            clip('text', 0, set())


class TestFocus:
    def test_rarest_term_wins(self) -> None:
        # The reference centred on the first query term found: `the` here, hiding ZEBRA.
        text = 'the ' + filler(150) + ' the ZEBRA ' + filler(150)
        rarity = {'the': 0.1, 'zebra': 2.3}
        clipped = clip(text, 500, tokenize('the ZEBRA'), rarity)
        assert 'ZEBRA' in clipped
        assert clipped.index('ZEBRA') == 253

    def test_without_rarity_the_first_term_wins(self) -> None:
        text = 'the ' + filler(150) + ' ZEBRA ' + filler(150)
        assert 'ZEBRA' not in clip(text, 500, {'the', 'zebra'})

    def test_ties_go_to_the_first_occurrence(self) -> None:
        text = filler(100) + ' ALPHA ' + filler(100) + ' BETA ' + filler(100)
        clipped = clip(text, 100, {'alpha', 'beta'}, {'alpha': 1.0, 'beta': 1.0})
        assert 'ALPHA' in clipped and 'BETA' not in clipped

    def test_first_occurrence_of_the_rarest(self) -> None:
        text = filler(100) + ' ZEBRA one ' + filler(100) + ' ZEBRA two ' + filler(100)
        clipped = clip(text, 100, {'zebra'}, {'zebra': 1.0})
        assert 'ZEBRA one' in clipped

    def test_terms_missing_from_rarity_rank_lowest(self) -> None:
        text = filler(100) + ' ALPHA ' + filler(100) + ' BETA ' + filler(100)
        assert 'BETA' in clip(text, 100, {'alpha', 'beta'}, {'beta': 0.5})

    def test_matching_is_normalisation_aware(self) -> None:
        text = filler(150) + ' Die STRAßE ' + filler(150)
        clipped = clip(text, 500, tokenize('strasse'))
        assert clipped.index('STRAßE') == 253

    def test_cjk_term(self) -> None:
        text = 'あ' * 600 + '東京タワー' + 'い' * 600
        clipped = clip(text, 500, tokenize('東京'))
        assert clipped.index('東京') == 253


@given(
    text=st.text(alphabet=st.sampled_from(list('ab ZEBRA東京ß')), max_size=300),
    limit=st.integers(min_value=1, max_value=120),
    terms=st.sets(st.sampled_from(['a', 'b', 'zebra', 'ss', '東京', 'ab'])),
)
def test_clip_properties(text: str, limit: int, terms: set[str]) -> None:
    clipped = clip(text, limit, terms)
    assert len(clipped) <= limit + 6
    if len(text) <= limit:
        assert clipped == text
    else:
        # The text holds no dots, so the ellipses are exactly what clipping added.
        kept = clipped.removeprefix('...').removesuffix('...')
        assert len(kept) == limit
        assert kept in text
        assert clipped.startswith('...') or kept == text[:limit]
        assert clipped.endswith('...') or kept == text[-limit:]


@settings(max_examples=300, deadline=None)
@given(
    words=st.lists(
        st.sampled_from(['alpha', 'Beta', 'beta_2', 'x', 'ALPHAbet', '42', 'a.b', 'path/to/x.py']), max_size=30
    ),
    separators=st.lists(st.sampled_from([' ', '.', '/', '', '\n', '-', '_']), min_size=30, max_size=30),
    terms=st.lists(st.sampled_from(['alpha', 'beta', 'beta_2', 'x', 'alphabet', '42', 'py', 'é']), max_size=4),
    ranked=st.booleans(),
)
def test_the_ascii_focus_is_the_token_walks(
    words: list[str], separators: list[str], terms: list[str], ranked: bool
) -> None:
    text = ''.join(word + separator for word, separator in zip(words, separators, strict=False))
    rarity = {term: float(len(term) % 3) for term in terms} if ranked else None
    fast = _clip._ascii_focus(text, terms, rarity)
    walked = None
    best = 0.0
    for token in iter_tokens(text):
        if token.term not in terms:
            continue
        if rarity is None:
            walked = token
            break
        if walked is None or rarity.get(token.term, 0.0) > best:
            walked, best = token, rarity.get(token.term, 0.0)
    assert fast == walked


class TestAdversarial:
    """Texts and queries built to make the focus search slow must still find the same focus."""

    def test_every_prefix_of_a_long_word_finds_the_whole_word_after_it(self) -> None:
        text = 'a' * 50_000 + ' ZEBRA'
        terms = ['zebra', *('a' * n for n in range(1, 64))]
        clipped = clip(text, 100, terms)
        assert clipped.endswith('ZEBRA')

    def test_a_term_recurring_everywhere_still_lets_the_rarest_win(self) -> None:
        text = 'the ' * 10_000 + 'ZEBRA ' + 'the ' * 10
        clipped = clip(text, 100, {'the', 'zebra'}, {'the': 0.1, 'zebra': 3.0})
        assert 'ZEBRA' in clipped

    def test_a_term_past_the_scan_keeps_the_head(self) -> None:
        text = 'x ' * (_clip.SCAN_CHARS // 2) + 'ZEBRA'
        assert clip(text, 100, {'zebra'}) == text[:100] + '...'

    def test_non_ascii_past_the_walk_is_found_by_the_scan(self) -> None:
        text = 'é ' * _clip.WALK_CHARS + 'Ärger ZEBRA 東京タワー ' + 'é ' * 100
        assert 'ZEBRA' in clip(text, 50, {'zebra'})
        assert '東京' in clip(text, 50, tokenize('東京'))

    def test_a_word_cut_by_the_walk_is_not_taken_for_a_term(self) -> None:
        text = 'é' * (_clip.WALK_CHARS - 3) + ' ab' + 'cdef ' + 'x ' * 200 + 'ab zebra'
        clipped = clip(text, 40, {'ab'})
        assert clipped.endswith('ab zebra') or 'ab zebra' in clipped
