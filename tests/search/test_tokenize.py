"""The tokenizer: words, normalisation, unspaced scripts, and spans into the original text."""

from __future__ import annotations

import re
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from durable_recall.text import Token, iter_tokens, tokenize
from durable_recall.text._tokenize import _mark_class


class TestWords:
    """What the reference tokenizer does with plain words, which we keep."""

    @pytest.mark.parametrize(
        ('text', 'expected'),
        [
            ("don't", ['don', 't']),
            ('snake_case', ['snake_case']),
            ('file.py', ['file', 'py']),
            ('3.14', ['3', '14']),
            ('a-b_c', ['a', 'b_c']),
            ('read_file src/app/main.py', ['read_file', 'src', 'app', 'main', 'py']),
            ('Hello, WORLD!', ['hello', 'world']),
            ('', []),
            ('  ... !!! ', []),
        ],
    )
    def test_words(self, text: str, expected: list[str]) -> None:
        assert tokenize(text) == expected

    def test_stemmed_without_stopwords(self) -> None:
        # Snowball English: inflections meet their stem; no word is dropped.
        assert tokenize('the running runners ran') == ['the', 'run', 'runner', 'ran']
        assert tokenize('visited visits visiting') == ['visit'] * 3
        assert tokenize('birthdays cakes') == ['birthday', 'cake']
        assert tokenize('as is s') == ['as', 'is', 's']  # short words are kept

    @pytest.mark.parametrize(
        ('text', 'expected'),
        [
            ('ORCA-5521', ['orca', '5521']),
            ('v2.3.1', ['v2', '3', '1']),
            ('0xdeadbeef a1b2c3', ['0xdeadbeef', 'a1b2c3']),
            ('read_files', ['read_files']),
            ('settings_v2', ['settings_v2']),
        ],
    )
    def test_identifiers_stay_exact(self, text: str, expected: list[str]) -> None:
        # Words with digits or underscores are never stemmed or folded: ids and versions match as written.
        assert tokenize(text) == expected

    def test_repeats_are_kept(self) -> None:
        assert tokenize('alpha alpha ALPHA') == ['alpha', 'alpha', 'alpha']


class TestNormalisation:
    """Where we are better than the reference: NFKC and casefolding, so spellings of a word meet."""

    @pytest.mark.parametrize(
        ('text', 'expected'),
        [
            ('Grüße', ['gruss']),
            ('STRASSE', ['strass']),
            ('straße', ['strass']),
            ('İstanbul', ['istanbul']),
            ('ISTANBUL', ['istanbul']),
            ('e\u0301cole', ['ecol']),
            ('école', ['ecol']),
            ('ＡＢＣ １２３', ['abc', '123']),
            ('ﬁle', ['file']),
            ('x²', ['x2']),
            ('½', ['1', '2']),
            ('ｶﾞｷ', ['ガキ']),
            ('hy\u00adphen', ['hyphen']),
            ('ΣΊΣΥΦΟΣ', ['σίσυφοσ']),
        ],
    )
    def test_normalised(self, text: str, expected: list[str]) -> None:
        assert tokenize(text) == expected

    @pytest.mark.parametrize(
        ('query', 'document'),
        [
            ('STRASSE', 'Die Straße ist lang.'),
            ('istanbul', 'We flew to İstanbul.'),
            ('école', 'Une e\u0301cole.'),
            ('abc', 'ＡＢＣ'),
            ('σίσυφος', 'ΣΊΣΥΦΟΣ'),
        ],
    )
    def test_query_meets_document(self, query: str, document: str) -> None:
        assert set(tokenize(query)) <= set(tokenize(document))

    @pytest.mark.parametrize(('query', 'document'), [('cafe', 'café'), ('naive', 'naïve'), ('resume', 'RÉSUMÉ')])
    def test_latin_accents_fold(self, query: str, document: str) -> None:
        assert tokenize(query) == tokenize(document)

    def test_other_marks_are_kept(self) -> None:
        # Only marks on Latin letters fold: the vowel signs of Indic and Thai words are letters.
        assert tokenize('हिन्दी') == ['हिन्दी']
        assert tokenize('σίσυφος') != tokenize('σισυφος')

    def test_words_with_combining_vowel_signs_stay_whole(self) -> None:
        assert tokenize('हिन्दी भाषा') == ['हिन्दी', 'भाषा']
        assert tokenize('مَرْحَبًا') == ['مَرْحَبًا']


class TestUnspacedScripts:
    def test_word_inside_japanese_run(self) -> None:
        assert '東京' in tokenize('東京タワーに行った')

    def test_overlapping_bigrams(self) -> None:
        assert tokenize('东京タワー') == ['东京', '京タ', 'タワ', 'ワー']

    def test_single_character_run_is_kept(self) -> None:
        assert tokenize('東') == ['東']
        assert tokenize('I ♥ 猫 and 犬') == ['i', '猫', 'and', '犬']

    def test_latin_and_digits_split_at_the_script_boundary(self) -> None:
        assert tokenize('Python3の使い方') == ['python3', 'の使', '使い', 'い方']

    def test_katakana_middle_dot_separates(self) -> None:
        assert tokenize('ジョン・スミス') == ['ジョ', 'ョン', 'スミ', 'ミス']

    def test_korean_particle(self) -> None:
        assert '서울' in tokenize('서울에 갔다')

    def test_chinese(self) -> None:
        assert '北京' in tokenize('我住在北京市。')

    def test_thai(self) -> None:
        # Bigrams, not dictionary words: an approximation that still finds a word inside a run.
        greeting = tokenize('สวัสดี')
        assert greeting == ['สว', 'วั', 'ัส', 'สด', 'ดี']
        assert set(greeting) <= set(tokenize('สวัสดีครับ'))

    def test_query_found_inside_run(self) -> None:
        for query, document in [('タワー', '東京タワーに行った'), ('行った', '東京タワーに行った'), ('ครับ', 'สวัสดีครับ')]:
            assert set(tokenize(query)) <= set(tokenize(document))


class TestSpans:
    def test_ascii(self) -> None:
        assert list(iter_tokens('read file.py')) == [Token('read', 0, 4), Token('file', 5, 9), Token('py', 10, 12)]

    @pytest.mark.parametrize(
        ('text', 'expected'),
        [
            ('ﬁle x', [Token('file', 0, 3), Token('x', 4, 5)]),
            ('a straße b', [Token('a', 0, 1), Token('strass', 2, 8), Token('b', 9, 10)]),
            ('e\u0301cole!', [Token('ecol', 0, 6)]),
            ('İstanbul', [Token('istanbul', 0, 8)]),
            ('ＨＥＬＬＯ ｗｏｒｌｄ', [Token('hello', 0, 5), Token('world', 6, 11)]),
            ('ｶﾞｷ!', [Token('ガキ', 0, 3)]),
            ('hy\u00adphen', [Token('hyphen', 0, 7)]),
            ('½', [Token('1', 0, 1), Token('2', 0, 1)]),
            ('見て:東京タ', [Token('見て', 0, 2), Token('東京', 3, 5), Token('京タ', 4, 6)]),
        ],
    )
    def test_spans_point_into_the_original(self, text: str, expected: list[Token]) -> None:
        assert list(iter_tokens(text)) == expected

    def test_span_text(self) -> None:
        text = 'Wir fahren zur STRAßE in 東京タワー.'
        spans = {token.term: text[token.start : token.end] for token in iter_tokens(text)}
        assert spans['strass'] == 'STRAßE'
        assert spans['東京'] == '東京'


_INTERESTING = list("aZ_9 .-'ßİIıé\u0301東京タワに ｶﾞ½²ﬁสวัสดีहिन्दीＡ\u00ad\u200d\ufe0f한국어・\u3099") + ['\U00020000']


@st.composite
def texts(draw: st.DrawFn) -> str:
    return draw(st.one_of(st.text(), st.text(alphabet=st.sampled_from(_INTERESTING))))


class TestProperties:
    @given(texts())
    def test_tokenize_matches_iter_tokens(self, text: str) -> None:
        assert tokenize(text) == [token.term for token in iter_tokens(text)]

    @given(texts())
    def test_spans_are_ordered_and_in_bounds(self, text: str) -> None:
        previous = 0
        for token in iter_tokens(text):
            assert previous <= token.start < token.end <= len(text)
            previous = token.start

    @given(texts())
    def test_span_holds_its_term(self, text: str) -> None:
        for token in iter_tokens(text):
            assert token.term in tokenize(text[token.start : token.end])

    @given(texts())
    def test_terms_are_non_empty_and_folded(self, text: str) -> None:
        for term in tokenize(text):
            assert term
            assert term == term.casefold().replace('i\u0307', 'i')

    @given(st.text(alphabet=st.characters(codec='ascii')))
    def test_ascii_fast_path_agrees_with_the_general_path(self, text: str) -> None:
        # Appending a non-ASCII space forces the general path on the same words.
        assert tokenize(text) == tokenize(text + '\u3000')


def test_mark_table_covers_every_mark() -> None:
    # The table scans planes 0, 1 and 14 only; this checks that no mark lives anywhere else.
    scanned = sum(1 for code in range(0x110000) if unicodedata.category(chr(code))[0] == 'M')
    pairs = re.findall(r'\\U([0-9a-f]{8})-\\U([0-9a-f]{8})', _mark_class())
    assert sum(int(last, 16) - int(first, 16) + 1 for first, last in pairs) == scanned
