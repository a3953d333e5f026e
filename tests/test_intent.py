"""KeywordIndex: one automaton for all keyword sets, normalisation, condition trees."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopguard.errors import RulesError
from loopguard.policy.turns import KeywordIndex, Probe
from loopguard.text.normalize import Normalizer

SETS = {
    "followup": ["做一下体检", "体检", "健康吗", "健康"],
    "marker": ["持仓", "Portfolio", "代码 | 名称 | 持股"],
    "affirmative": ["好的", "行", "  "],
    "both": ["持仓", "体检"],
}


def sets_in(index: KeywordIndex, text: str) -> frozenset[str]:
    """Names of the sets with a keyword in `text`."""
    return frozenset(name for hit in index.find(text) for name in hit.sets)


def test_one_pass_finds_every_set_including_overlapping_keywords() -> None:
    index = KeywordIndex(SETS)
    assert sets_in(index, "帮我做一下体检") == {"followup", "both"}
    assert sets_in(index, "看看 PORTFOLIO") == {"marker"}
    assert sets_in(index, "今天天气") == frozenset()


def test_duplicate_and_blank_keywords_are_compiled_once() -> None:
    index = KeywordIndex(SETS)
    # 持仓 and 体检 appear in two sets each; "  " normalises to nothing and is skipped.
    assert len(index) == 9


def test_positions_are_character_offsets_in_chinese_text() -> None:
    index = KeywordIndex(SETS)
    text = "请帮我做一下体检，看看持仓"
    hits = {(h.keyword, h.start, h.end) for h in index.find(text)}
    assert ("做一下体检", 3, 8) in hits
    assert ("体检", 6, 8) in hits
    assert ("持仓", 11, 13) in hits
    for hit in index.find(text):
        assert text[hit.start : hit.end] == hit.keyword


def test_contains_and_equals_conditions() -> None:
    index = KeywordIndex(SETS)
    cond = index.compile({"all": [{"text_equals": "affirmative"}, {"context_contains": "marker"}]})
    assert cond(Probe(index, " 好的 "), Probe(index, "你的持仓如下"))
    assert not cond(Probe(index, "好的呀"), Probe(index, "你的持仓如下"))
    assert not cond(Probe(index, "好的"), Probe(index, "今天天气"))


def test_any_not_and_lists_of_set_names() -> None:
    index = KeywordIndex(SETS)
    cond = index.compile(
        {
            "any": [
                {"not": {"text_contains": ["followup", "marker"]}},
                {"text_equals": "affirmative"},
            ]
        }
    )
    assert cond(Probe(index, "你好"), Probe(index, ""))
    assert not cond(Probe(index, "持仓"), Probe(index, ""))
    assert not cond(Probe(index, "体检"), Probe(index, ""))


def test_lower_applies_to_keywords_and_text_alike() -> None:
    index = KeywordIndex({"m": ["PortFolio"]}, ["lower"])
    assert sets_in(index, "my PORTFOLIO") == {"m"}
    assert sets_in(KeywordIndex({"m": ["PortFolio"]}, []), "my portfolio") == frozenset()


def test_nfkc_and_punctuation_folding_are_opt_in() -> None:
    plain = KeywordIndex({"a": ["好的"], "abc": ["ABC,"]})
    assert plain.equals_mask(plain.normalize("好的。")) == 0
    folded = KeywordIndex(
        {"a": ["好的"], "abc": ["ABC,"]}, ["strip", "lower", "nfkc", "fold_punctuation"]
    )
    assert folded.equals_mask(folded.normalize("好的。")) != 0
    assert sets_in(folded, "ＡＢＣ，x") == {"abc"}  # full-width letters and comma
    assert Normalizer(["fold_punctuation", "strip"])("「你好」、 ") == '"你好",'


@pytest.mark.parametrize(
    ("node", "path"),
    [
        ({"text_contains": "nope"}, "when.text_contains"),
        ({"all": []}, "when.all"),
        ({"all": [{"maybe": "marker"}]}, "when.all[0]"),
        ({"text_contains": "marker", "text_equals": "marker"}, "when"),
        ({"not": "marker"}, "when.not"),
    ],
)
def test_bad_conditions_name_the_place(node: object, path: str) -> None:
    with pytest.raises(RulesError) as caught:
        KeywordIndex(SETS).compile(node)
    assert caught.value.findings[0].path == path


def test_bad_keyword_sets_and_steps_are_rules_errors() -> None:
    with pytest.raises(RulesError, match="not a string"):
        KeywordIndex({"steps": ["1、", 1.0]})
    with pytest.raises(RulesError, match="must be a list"):
        KeywordIndex({"steps": "1."})
    with pytest.raises(RulesError, match="unknown normalisation step 'upper'"):
        KeywordIndex(SETS, ["upper"])


def test_an_empty_index_matches_nothing() -> None:
    index = KeywordIndex({"empty": []})
    assert sets_in(index, "anything") == frozenset()
    assert index.find("anything") == []


ALPHABET = "持仓体检健康好的abAB |"
words = st.text(alphabet=ALPHABET, min_size=1, max_size=4)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(
    sets=st.dictionaries(st.sampled_from("pqrst"), st.lists(words, max_size=5), max_size=5),
    text=st.text(alphabet=ALPHABET, max_size=30),
)
def test_automaton_agrees_with_a_naive_scan(sets: dict[str, list[str]], text: str) -> None:
    index = KeywordIndex(sets)
    norm = index.normalize
    expected = {
        name for name, kws in sets.items() if any(norm(k) and norm(k) in norm(text) for k in kws)
    }
    assert sets_in(index, text) == expected
