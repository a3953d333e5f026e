"""doom_loop_fuzzy under builtin:portfolio (arguments alone, outcomes ignored): near-identical long
arguments `threshold` (3) times in the last `window` (6) calls of the turn — by Jaccard
similarity of character 3-grams — is a breaker. doom_loop_exact is off in most tests so
that only this detector can vote.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest
from helpers import UNSET, actions, call, guard_from, repeat, vote_of

from loopguard.detectors.support.grams import grams, jaccard

ID = "doom_loop_fuzzy"
REPORT = "Write the quarterly sales report for the northern region, including every figure"
CHARS = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def draft(i: int) -> dict[str, str]:
    """Long arguments that differ only in their last character."""
    return {"text": f"{REPORT} (draft {i})"}


def raw_text(length: int, i: int) -> str:
    """A raw (non-JSON) argument text of exactly `length` characters, varied at the end."""
    return CHARS[: length - 1] + "!?#"[i]


def session_with(exact: bool = False, **fuzzy: Any):  # type: ignore[no-untyped-def]
    """A session under builtin:portfolio, whose doom-loop rules ignore outcomes."""
    detectors: dict[str, Any] = {"doom_loop_exact": {"enabled": exact}, ID: fuzzy}
    session = guard_from(extends=["builtin:portfolio"], detectors=detectors).session("s")
    session.begin_turn([{"role": "user", "content": "go"}])
    return session


def test_three_near_identical_long_texts_trip_the_breaker() -> None:
    session = session_with()
    decisions = [call(session, "write", draft(i)) for i in range(3)]
    assert actions(decisions) == ["allow", "allow", "breaker"]
    vote = vote_of(decisions[-1], ID)
    assert vote is not None and (vote.level, vote.count, vote.evidence) == ("breaker", 3, (1, 2, 3))


def test_texts_under_min_chars_are_ignored() -> None:
    session = session_with()
    short = [call(session, "write", raw_text(49, i)) for i in range(3)]
    assert actions(short) == ["allow"] * 3
    session.begin_turn([])
    at_limit = [call(session, "write", raw_text(50, i)) for i in range(3)]
    assert actions(at_limit) == ["allow", "allow", "breaker"]


def test_min_chars_comes_from_the_rules() -> None:
    session = session_with(min_chars=200)
    assert actions([call(session, "write", draft(i)) for i in range(4)]) == ["allow"] * 4


def test_unrelated_long_texts_are_not_flagged() -> None:
    session = session_with()
    texts = [REPORT, REPORT[::-1], CHARS * 2, "lorem ipsum dolor sit amet " * 3]
    assert actions([call(session, "write", {"text": t}) for t in texts]) == ["allow"] * 4


def test_similarity_threshold_comes_from_the_rules() -> None:
    session = session_with(similarity=1.0)
    assert actions([call(session, "write", draft(i)) for i in range(3)]) == ["allow"] * 3
    assert call(session, "write", draft(0)).action == "allow"  # two identical: 1 and 4
    assert call(session, "write", draft(0)).action == "breaker"


def test_threshold_comes_from_the_rules() -> None:
    session = session_with(threshold=4)
    decisions = [call(session, "write", draft(i)) for i in range(4)]
    assert actions(decisions) == ["allow"] * 3 + ["breaker"]


def test_only_calls_of_the_same_tool_compare() -> None:
    session = session_with()
    decisions = [call(session, tool, draft(i)) for i, tool in enumerate(["write", "save", "write"])]
    assert actions(decisions) == ["allow"] * 3


def test_calls_outside_the_window_do_not_count() -> None:
    session = session_with()
    call(session, "write", draft(0))
    for i in range(4):
        call(session, "read", {"path": str(i)})
    assert call(session, "write", draft(1)).action == "allow"  # window: calls 1-6
    assert call(session, "write", draft(2)).action == "allow"  # call 1 has left it
    assert call(session, "write", draft(3)).action == "breaker"


def test_a_new_turn_hides_the_previous_turn() -> None:
    session = session_with()
    call(session, "write", draft(0))
    call(session, "write", draft(1))
    session.begin_turn([])
    assert call(session, "write", draft(2)).action == "allow"


def test_exempt_tools_are_never_checked() -> None:
    session = session_with()
    decisions = [call(session, "check_background_tasks", draft(i)) for i in range(5)]
    assert actions(decisions) == ["allow"] * 5


def test_exempt_tools_are_not_recorded() -> None:
    session = session_with()
    call(session, "write", draft(0))
    for i in range(5):
        call(session, "check_background_tasks", {"id": i})
    call(session, "write", draft(1))
    assert call(session, "write", draft(2)).action == "breaker"


def test_detector_switch_turns_it_off() -> None:
    session = session_with(enabled=False)
    assert actions(repeat(session, 4, "write", draft(0))) == ["allow"] * 4


@pytest.mark.parametrize("enabled", [UNSET, False, True])
def test_on_whatever_loop_detection_enabled_says(enabled: object) -> None:
    loop = {} if enabled is UNSET else {"enabled": enabled}
    guard = guard_from(
        extends=["builtin:portfolio"],
        loop_detection=loop,
        detectors={"doom_loop_exact": {"enabled": False}},
    )
    session = guard.session("s")
    session.begin_turn([])
    assert [call(session, "write", draft(i)).action for i in range(3)][-1] == "breaker"


def test_arguments_differing_only_in_key_order_are_identical() -> None:
    session = session_with(similarity=1.0)
    forms = [
        {"text": REPORT, "path": "r.md"},
        f'{{"path": "r.md", "text": "{REPORT}"}}',
        {"path": "r.md", "text": REPORT},
    ]
    assert actions([call(session, "write", f) for f in forms]) == ["allow", "allow", "breaker"]


def test_a_blocked_call_stays_blocked() -> None:
    session = session_with()
    decisions = [call(session, "write", draft(i)) for i in range(5)]
    assert actions(decisions) == ["allow", "allow", "breaker", "breaker", "breaker"]


def test_identical_long_calls_are_flagged_by_both_doom_detectors() -> None:
    session = session_with(exact=True)
    decision = repeat(session, 3, "write", draft(0))[-1]
    assert decision.action == "breaker"
    assert {v.detector for v in decision.votes} == {"doom_loop_exact", ID}


def test_gram_sets_and_jaccard_follow_the_spec() -> None:
    assert len(grams("ab")) == 1  # a text shorter than 3 is one gram
    assert len(grams("")) == 0
    assert len(grams("abcd")) == 2 and len(grams("abcabc")) == 3  # abc, bca, cab
    assert jaccard(grams("ab"), grams("ab")) == 1.0
    assert jaccard(grams("ab"), grams("abc")) == 0.0
    assert jaccard(grams(""), grams("")) == 0.0
    assert jaccard(grams(""), grams("abc")) == 0.0
    assert jaccard(grams("abcd"), grams("abcd")) == 1.0
    assert jaccard(grams("abcd"), grams("abce")) == pytest.approx(1 / 3)


def page(i: int, size: int = 4000) -> dict[str, str]:
    """A long text (beyond the array representation's threshold) with a small edit per i."""
    body = "".join(CHARS[(k * 7 + k // 13) % len(CHARS)] for k in range(size))
    return {"path": "notes.md", "content": body[:100] + f"edit {i}" + body[100:]}


def test_long_near_identical_texts_trip_the_breaker_without_faults() -> None:
    session = session_with()
    decisions = [call(session, "write", page(i)) for i in range(3)]
    assert all(d.faults == () for d in decisions)
    assert actions(decisions) == ["allow", "allow", "breaker"]


def test_long_unrelated_texts_do_not_trip_it() -> None:
    session = session_with()
    texts = [
        {
            "content": "".join(
                CHARS[(k * (i + 3)) % len(CHARS)] + str(k % (i + 5)) for k in range(1500)
            )
        }
        for i in range(3)
    ]
    decisions = [call(session, "write", t) for t in texts]
    assert all(d.faults == () for d in decisions)
    assert actions(decisions) == ["allow"] * 3


def test_a_short_and_a_long_text_near_the_boundary_compare_exactly() -> None:
    """Grams of texts on both sides of the representation boundary compare like Python sets."""
    base = "".join(CHARS[(k * 5) % len(CHARS)] + CHARS[k % 7] for k in range(140))
    short, long = base[:250], base[:258]
    expected_a = {short[i : i + 3] for i in range(len(short) - 2)}
    expected_b = {long[i : i + 3] for i in range(len(long) - 2)}
    expected = len(expected_a & expected_b) / len(expected_a | expected_b)
    assert jaccard(grams(short), grams(long)) == pytest.approx(expected)


# -- builtin:default: a write that worked, aimed at another target, is new -----------------
BODY = "\n".join(f"line {i}: value = {i * 7}" for i in range(80))


def default_session():  # type: ignore[no-untyped-def]
    session = guard_from().session("s")
    session.begin_turn([{"role": "user", "content": "go"}])
    return session


def test_similar_successful_writes_to_other_files_are_new() -> None:
    session = default_session()
    decisions = [
        call(session, "bash", {"command": f"cat > fix{i}.patch << 'EOF'\n{BODY}{i}\nEOF"}, "")
        for i in range(4)
    ]
    assert actions(decisions) == ["allow"] * 4


def test_similar_successful_rewrites_of_one_file_still_count() -> None:
    session = default_session()
    decisions = [
        call(session, "write_file", {"path": "notes.md", "content": BODY + " " * i}, "ok")
        for i in range(3)
    ]
    assert actions(decisions) == ["allow", "allow", "critical"]
    assert vote_of(decisions[-1], ID) is not None


def test_similar_failing_writes_to_other_files_still_count() -> None:
    session = default_session()
    decisions = [
        call(
            session,
            "bash",
            {"command": f"cat > fix{i}.patch << 'EOF'\n{BODY}{i}\nEOF"},
            "bash: fix.patch: Permission denied",
        )
        for i in range(3)
    ]
    assert actions(decisions) == ["allow", "allow", "critical"]


def test_a_window_stored_before_targets_were_kept_still_loads() -> None:
    from loopguard.detectors.doom_loop_fuzzy import DoomLoopFuzzy

    window = DoomLoopFuzzy().decode_scratch([0, 5, [["write_file", "short text", 3, 2]]])
    ((tool, _grams, seq, round_, target),) = window.items
    assert (tool, seq, round_, target) == ("write_file", 3, 2, None)


def test_a_window_stored_with_code_point_arrays_still_loads() -> None:
    """States saved while the detector kept NumPy arrays of gram codes (form "a": each gram's
    three code points, 1-4 bytes each) load as the same gram sets."""
    from binascii import b2a_base64

    from loopguard.detectors.doom_loop_fuzzy import DoomLoopFuzzy

    forms = []
    for text, width in (("abcd", 1), ("ab中c", 2), ("a🙂bc", 4)):
        points = [ord(c) for g in zip(text, text[1:], text[2:], strict=False) for c in g]
        data = b"".join(p.to_bytes(width, sys.byteorder) for p in points)
        forms.append((text, ["a", width, b2a_base64(data, newline=False).decode()]))
    window = DoomLoopFuzzy().decode_scratch(
        [0, 5, [["write_file", form, i, 0, None] for i, (_, form) in enumerate(forms)]]
    )
    assert [item[1] for item in window.items] == [grams(text) for text, _ in forms]
    with pytest.raises(ValueError):
        DoomLoopFuzzy().decode_scratch([0, 5, [["write_file", ["a", 1, "AAE="], 0, 0, None]]])
