"""The aggregator (docs/detection.md): highest level wins, ties by rules order, escalation, warning
de-duplication, votes with evidence, and isolation of a detector that fails.

Fake detectors are added to a registry built by hand from the real one, so the rules (and
their validation) stay the bundled ones.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from helpers import actions, call, guard_from, repeat, rolling_guard, vote_of

import loopguard
from loopguard.detection.plugins import Registered, Registry, load_registry


class Fixed(loopguard.Detector):
    """Votes `level` on every call of `tool`; the count is the session's call number."""

    def __init__(self, ident: str, level: str, tool: str = "x", key: str = "k") -> None:
        self.id, self.level, self.tool, self.key = ident, level, tool, key

    def check(self, call: Any, state: Any, cfg: Any) -> loopguard.Vote | None:
        if call.tool != self.tool:
            return None
        return self.vote(
            self.level, call.seq, self.key, f"{self.id} says {self.level}", (call.seq,)
        )


class Boom(loopguard.Detector):
    """Raises in `check` (or returns something that is not a vote)."""

    id = "boom"

    def __init__(self, garbage: bool = False) -> None:
        self.garbage = garbage

    def check(self, call: Any, state: Any, cfg: Any) -> Any:
        if self.garbage:
            return "not a vote"
        raise RuntimeError("kaput")


def guard_with(*detectors: loopguard.Detector, **blocks: Any) -> loopguard.Guard:
    base = load_registry()
    extra = tuple(Registered(d, f"fake-dist[{d.id}]", False) for d in detectors)
    registry = Registry(base.entries + extra, (), base.plugin_manager)
    return loopguard.Guard.from_dict({"version": 1, **blocks}, registry=registry)


# -- levels and ties ---------------------------------------------------------------------
def test_highest_level_wins_and_votes_are_ordered_by_level() -> None:
    session = guard_with(Fixed("w", "warn"), Fixed("c", "critical"), Fixed("b", "breaker")).session(
        "s"
    )
    decision = session.before_call("x", {})
    assert (decision.action, decision.detector) == ("breaker", "b")
    assert [v.level for v in decision.votes] == ["breaker", "critical", "warn"]
    assert decision.top is not None and decision.top.detector == "b"


def test_critical_beats_warn() -> None:
    session = guard_with(Fixed("w", "warn"), Fixed("c", "critical")).session("s")
    decision = session.before_call("x", {})
    assert (decision.action, decision.detector, len(decision.votes)) == ("critical", "c", 2)
    assert decision.blocked and decision.message and "c says critical" in decision.message


def test_a_builtin_breaker_outranks_a_builtin_critical() -> None:
    session = rolling_guard(aggregator={"escalate_criticals": 0}).session("s")
    decisions = repeat(session, 9, "fetch", {"u": 1})
    assert actions(decisions[5:8]) == ["critical"] * 3  # generic_repeat, streak 5..7
    last = decisions[8]
    assert (last.action, last.detector) == ("breaker", "global_circuit_breaker")
    assert {(v.detector, v.level) for v in last.votes} >= {
        ("global_circuit_breaker", "breaker"),
        ("generic_repeat", "critical"),
    }


ORDER = [
    "unknown_tool_repeat",
    "global_circuit_breaker",
    "post_compaction_guard",
    "doom_loop_exact",
    "doom_loop_fuzzy",
    "known_poll_no_progress",
    "ping_pong",
    "generic_repeat",
]
LONG = {"text": "a long argument text that is well over fifty characters in total length"}


@pytest.mark.parametrize(
    ("order", "winner"),
    [
        (None, "doom_loop_exact"),
        ([*ORDER[:3], "doom_loop_fuzzy", "doom_loop_exact", *ORDER[5:]], "doom_loop_fuzzy"),
    ],
)
def test_ties_are_broken_by_the_rules_order(order: list[str] | None, winner: str) -> None:
    blocks: dict = {} if order is None else {"aggregator": {"order": order}}
    spec = {"outcome": "any", "level": "breaker"}
    blocks["detectors"] = {
        "doom_loop_exact": spec,
        "doom_loop_fuzzy": {"enabled": True, "min_chars": 50, "similarity": 0.8, **spec},
    }
    session = guard_from(**blocks).session("s")
    session.begin_turn([])
    decision = repeat(session, 3, "write", LONG)[-1]
    assert {v.detector for v in decision.votes} == {"doom_loop_exact", "doom_loop_fuzzy"}
    assert (decision.action, decision.detector, decision.votes[0].detector) == (
        "breaker",
        winner,
        winner,
    )


# -- escalation --------------------------------------------------------------------------
def test_the_second_critical_in_a_run_becomes_a_breaker() -> None:
    session = guard_with(Fixed("c", "critical")).session("s")
    first, second = session.before_call("x", {"n": 1}), session.before_call("x", {"n": 2})
    assert (first.action, first.escalated) == ("critical", False)
    assert (second.action, second.escalated, second.detector) == ("breaker", True, "c")
    assert second.votes[0].level == "critical"  # the vote itself is unchanged
    assert second.message is not None and session.tools_closed


def test_escalate_criticals_zero_turns_escalation_off() -> None:
    session = guard_with(Fixed("c", "critical"), aggregator={"escalate_criticals": 0}).session("s")
    decisions = [session.before_call("x", {"n": i}) for i in range(5)]
    assert actions(decisions) == ["critical"] * 5 and not any(d.escalated for d in decisions)


def test_escalate_criticals_counts_from_the_rules() -> None:
    session = guard_with(Fixed("c", "critical"), aggregator={"escalate_criticals": 3}).session("s")
    assert actions([session.before_call("x", {"n": i}) for i in range(3)]) == [
        "critical",
        "critical",
        "breaker",
    ]


def test_escalation_counts_per_run_and_per_session() -> None:
    guard = guard_with(Fixed("c", "critical"))
    session = guard.session("s")
    assert session.before_call("x", {}, run_id="r1").action == "critical"
    assert session.before_call("x", {}, run_id="r2").action == "critical"
    assert guard.session("other").before_call("x", {}, run_id="r1").action == "critical"
    assert session.before_call("x", {}, run_id="r1").action == "breaker"


# -- warnings ----------------------------------------------------------------------------
def test_warnings_notify_once_per_warn_every_bucket() -> None:
    session = rolling_guard(aggregator={"warn_every": 5}).session("s")
    decisions = [call(session, "read", {"p": 1}, result=i) for i in range(14)]
    warned = [(d.votes[0].count, d.notify) for d in decisions if d.action == "warn"]
    assert [c for c, _ in warned] == list(range(3, 14))
    assert [c for c, notify in warned if notify] == [3, 5, 10]
    for decision in decisions[3:]:
        assert (decision.message is not None) is decision.notify


def test_default_warn_every_is_ten() -> None:
    session = rolling_guard().session("s")
    decisions = [call(session, "read", {"p": 1}, result=i) for i in range(22)]
    assert [d.votes[0].count for d in decisions if d.notify] == [3, 10, 20]


def test_each_warning_key_notifies_on_its_own() -> None:
    guard = guard_with(Fixed("w1", "warn", "x", "one"), Fixed("w2", "warn", "y", "two"))
    session = guard.session("s")
    notes = [
        (tool, session.before_call(tool, {"n": i}).notify)
        for i, tool in enumerate(["x", "x", "y", "y"])
    ]
    assert notes == [("x", True), ("x", False), ("y", True), ("y", False)]


# -- votes and evidence ------------------------------------------------------------------
def test_every_vote_carries_evidence_from_the_history() -> None:
    session = rolling_guard(aggregator={"escalate_criticals": 0}).session("s")
    decision = repeat(session, 9, "fetch", {"u": 1})[-1]
    history = {entry.seq: entry for entry in session.history()}
    current = history[decision.seq]
    assert len(decision.votes) >= 2
    for vote in decision.votes:
        assert vote.evidence and vote.key.startswith(vote.detector + ":")
        assert all(history[seq].digest == current.digest for seq in vote.evidence)
        assert decision.seq not in vote.evidence  # rolling detectors: earlier entries only
    data = json.loads(json.dumps(decision.to_dict()))
    assert [v["evidence"] for v in data["votes"]] == [list(v.evidence) for v in decision.votes]


def test_an_allowed_call_has_no_votes_and_no_message() -> None:
    decision = guard_from().session("s").before_call("read", {"p": 1})
    assert (decision.action, decision.votes, decision.message, decision.blocked) == (
        "allow",
        (),
        None,
        False,
    )
    assert decision.seq == 1 and decision.phase == "before"


# -- faulty detectors --------------------------------------------------------------------
@pytest.mark.parametrize("garbage", [False, True])
def test_fail_open_isolates_a_failing_detector(garbage: bool) -> None:
    session = guard_with(Boom(garbage)).session("s")
    session.begin_turn([])
    decisions = [call(session, "search", {"q": 1}) for _ in range(3)]
    assert actions(decisions) == ["allow", "allow", "critical"]  # doom_loop_exact still votes
    for decision in decisions:
        assert vote_of(decision, "boom") is None
        assert len(decision.faults) == 1 and "fake-dist[boom]" in decision.faults[0]
    assert "kaput" in decisions[0].faults[0] or garbage


def test_fail_closed_turns_a_failing_detector_into_a_critical() -> None:
    session = guard_with(Boom(), aggregator={"fail_mode": "closed"}).session("s")
    decision = session.before_call("search", {"q": 1})
    vote = vote_of(decision, "boom")
    assert (decision.action, decision.detector) == ("critical", "boom")
    assert vote is not None and vote.level == "critical"
    assert "fake-dist[boom]" in decision.faults[0]


class AfterBoom(loopguard.Detector):
    id = "after_boom"

    def after(self, call: Any, state: Any, cfg: Any) -> Any:
        raise ValueError("bad result handling")


def test_a_detector_failing_after_the_call_is_isolated_too() -> None:
    session = guard_with(AfterBoom()).session("s")
    assert session.before_call("t", {}, call_id="1").action == "allow"
    after = session.after_call("t", {}, result="ok", call_id="1")
    assert after.action == "allow" and "fake-dist[after_boom]" in after.faults[0]
    assert session.history()[0].outcome is not None


def test_a_failing_detector_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    session = guard_with(Boom()).session("s")
    with caplog.at_level("ERROR", logger="loopguard"):
        for i in range(3):
            session.before_call("search", {"q": i})
    logged = [r for r in caplog.records if "fake-dist[boom]" in r.getMessage()]
    assert len(logged) == 1 and "isolated" in logged[0].getMessage()


def test_a_malformed_message_template_never_breaks_a_call() -> None:
    rules = {
        "version": 1,
        "messages": {"language": "en", "en": {"breaker": "Stopped {message"}},
        "detectors": {"doom_loop_exact": {"outcome": "any", "level": "breaker"}},
    }
    with pytest.raises(
        loopguard.RulesError, match="never closed"
    ):  # loading refuses it (issue #10)
        loopguard.Guard.from_dict(rules)
    # A document that skipped validation still renders it as written, never raising.
    from loopguard.config.layers import load

    document = load({**rules, "messages": {"language": "en"}}, "mapping").data
    document["messages"]["en"] = {"breaker": "Stopped {message"}
    session = loopguard.Guard(document).session("s")
    session.begin_turn([])
    decisions = [session.before_call("search", {"q": 1}) for _ in range(3)]
    assert decisions[-1].action == "breaker"
    assert decisions[-1].message == "Stopped {message"


def test_decisions_are_logged_and_warn_notes_can_be_turned_off(
    caplog: pytest.LogCaptureFixture,
) -> None:
    rules = {
        "version": 1,
        "aggregator": {"warn_notes": False},
        "loop_detection": {"enabled": True, "warning_threshold": 2, "critical_threshold": 4},
        "detectors": {"doom_loop_exact": {"enabled": False}},
    }
    session = loopguard.Guard.from_dict(rules).session("s")
    with caplog.at_level("WARNING", logger="loopguard.decisions"):
        decisions = []
        for i in range(3):
            decisions.append(session.before_call("read", {"p": 1}, call_id=str(i)))
            session.after_call("read", {"p": 1}, result=f"r{i}", call_id=str(i))
    assert decisions[-1].action == "warn"
    assert (decisions[-1].notify, decisions[-1].message) == (False, None)
    warned = [r for r in caplog.records if r.name == "loopguard.decisions"]
    assert (
        len(warned) == 1 and warned[0].levelname == "WARNING" and "read" in warned[0].getMessage()
    )


def test_escalation_state_stays_bounded_over_many_runs() -> None:
    rules = {
        "version": 1,
        "loop_detection": {"enabled": True, "warning_threshold": 1, "critical_threshold": 2},
        "detectors": {"doom_loop_exact": {"enabled": False}},
    }
    session = loopguard.Guard.from_dict(rules).session("runs")
    for run in range(300):
        for i in range(3):
            session.before_call("read", {"p": 1}, call_id=f"{run}-{i}", run_id=f"r{run}")
            session.after_call(
                "read", {"p": 1}, result="same", call_id=f"{run}-{i}", run_id=f"r{run}"
            )
    assert len(session._state.criticals) <= 64


def test_template_fill_fast_path_means_the_same_as_plain_substitution() -> None:
    """`templates.fill` may use str.format_map once `parse` admitted the text: fields, escaped
    braces, missing fields (kept as written) and refused syntax (kept whole) read as before."""
    from loopguard.text.templates import fill

    assert fill("{tool} x{count} {{raw}}", {"tool": "read", "count": 3}) == "read x3 {raw}"
    assert fill("{tool} {missing}", {"tool": "read"}) == "read {missing}"
    assert fill("{tool.__class__}", {"tool": "read"}) == "{tool.__class__}"
    assert fill("{message:>2000000000}", {"message": "m"}) == "{message:>2000000000}"
