"""Default detection on small transcripts shaped like real agent traffic (issue 9).

One test per class of false stop and miss that the default rules had on real runs, each a
short script of rounds written for this test: a user message starts a turn, a list of calls
is one model response (one round), each call `(tool, args, result)` or `(tool, args,
Error("text"))` for a failure the host reports.
"""

from __future__ import annotations

from typing import Any

import pytest

import loopguard


class Error(str):
    """A failure reported by the host (`after_call(error=...)`)."""


def play(script: list[Any], rules: dict[str, Any] | None = None) -> list[loopguard.Decision]:
    """Feed a script through one session; the worse of before/after decision per call."""
    guard = loopguard.Guard.from_dict({"version": 1, **(rules or {})})
    session = guard.session("s")
    session.begin_turn([{"role": "user", "content": "start"}])
    decided: list[loopguard.Decision] = []
    for step in script:
        if isinstance(step, str):  # a user message
            session.begin_turn([{"role": "user", "content": step}])
            continue
        session.begin_round()
        for i, (tool, args, result) in enumerate(step):
            call_id = f"{len(decided)}-{i}"
            before = session.before_call(tool, args, call_id=call_id)
            if before.blocked:
                decided.append(before)
                continue
            if isinstance(result, Error):
                after = session.after_call(tool, args, error=str(result), call_id=call_id)
            else:
                after = session.after_call(tool, args, result=result, call_id=call_id)
            decided.append(after if after.action != "allow" else before)
    return decided


def stops(decided: list[loopguard.Decision]) -> list[int]:
    """0-based indexes of calls that were blocked (critical or breaker)."""
    return [i for i, d in enumerate(decided) if d.blocked]


def one(tool: str, args: Any, result: Any) -> list[tuple[str, Any, Any]]:
    return [(tool, args, result)]


# -- false stops: repeats that do bring new information ---------------------------------
def test_edit_then_rerun_tests_with_changing_output_is_never_stopped() -> None:
    script = []
    for i in range(6):
        script.append(one("edit", {"path": "a.py", "patch": f"fix {i}"}, "ok"))
        script.append(one("bash", {"command": "pytest -q"}, f"{5 - i} failed, {i} passed"))
    assert stops(play(script)) == []


def test_rerunning_a_test_after_a_different_edit_is_not_a_loop_even_when_it_still_fails() -> None:
    script = []
    for i in range(5):
        script.append(one("edit", {"path": "a.py", "patch": f"attempt {i}"}, ""))
        script.append(one("bash", {"command": "python repro.py"}, "AssertionError: 1 != 2"))
    assert stops(play(script)) == []


def test_a_deploy_poll_whose_progress_rises_is_never_stopped() -> None:
    script = [
        one("get_deployment", {"id": "d-1"}, {"state": "rolling out", "progress": p})
        for p in (7, 15, 30, 45, 60, 80, 95, 100)
    ]
    assert stops(play(script)) == []


def test_paging_through_one_file_is_not_a_loop() -> None:
    script = [
        one(
            "read_file",
            {"path": "/repo/src/loopguard/engine/session.py", "offset": o, "limit": 200},
            f"lines {o}..{o + 199}",
        )
        for o in range(0, 2000, 200)
    ]
    assert stops(play(script)) == []


def test_reading_neighbouring_files_is_not_a_loop() -> None:
    script = [
        one(
            "read_file",
            {"path": f"/home/dev/projects/shop/backend/src/orders/module_{c}.py"},
            f"contents of {c}",
        )
        for c in "abcdefghij"
    ]
    assert stops(play(script)) == []


def test_flight_searches_for_different_airports_are_not_a_loop() -> None:
    script = [
        one(
            "search_direct_flight",
            {"origin": "JFK", "destination": dest, "date": "2024-05-20"},
            [{"flight_number": f"HAT{n}", "destination": dest}],
        )
        for n, dest in enumerate(("SEA", "SFO", "LAX", "LAS", "ORD", "DFW"))
    ]
    assert stops(play(script)) == []


def test_ten_thousand_reads_of_paths_one_or_two_characters_apart_are_never_blocked() -> None:
    session = loopguard.Guard.default().session("many")
    session.begin_turn([])
    blocked = 0
    for i in range(10_000):
        path = f"/data/warehouse/events/2024/shards/part-{i:05d}.snappy.parquet"
        session.begin_round()
        blocked += session.before_call("read_file", {"path": path}, call_id=str(i)).blocked
        session.after_call("read_file", {"path": path}, result=f"rows: {i % 7}", call_id=str(i))
    assert blocked == 0


def test_identical_calls_with_other_work_between_are_not_a_loop() -> None:
    # cp backup between attempts: the same call, the same (empty) result, other work between
    script = []
    for i in range(4):
        script.append(one("bash", {"command": "cp a.py.bak a.py"}, ""))
        script.append(one("bash", {"command": f"sed -i 's/x/y{i}/' a.py"}, ""))
        script.append(one("bash", {"command": "python a.py"}, f"result {i}"))
    assert stops(play(script)) == []


# -- batches ---------------------------------------------------------------------------
def test_a_batch_of_reads_asked_for_at_once_is_never_a_repeat() -> None:
    batch = [
        ("read_file", {"path": f"/home/dev/projects/book/manuscript/chapter_{i}.md"}, "text")
        for i in range(3)
    ]
    assert stops(play([batch])) == []


def test_identical_calls_in_one_batch_are_at_most_a_warning() -> None:
    batch = [("read_file", {"path": "/repo/README.md"}, "same text")] * 3
    decided = play([batch])
    assert [d.action for d in decided] == ["allow", "warn", "warn"]
    assert decided[2].detector == "doom_loop_exact" and decided[2].votes[0].count == 3


def test_the_same_batch_repeated_in_later_rounds_is_a_loop() -> None:
    batch = [("read_file", {"path": "a"}, "A"), ("list_dir", {"path": "."}, "a b c")]
    assert stops(play([batch, batch, batch])) == [4, 5]


def test_without_begin_round_every_call_is_a_round_of_its_own() -> None:
    session = loopguard.Guard.default().session("s")
    session.begin_turn([])
    actions = []
    for i in range(3):
        actions.append(session.before_call("read", {"p": 1}, call_id=str(i)).action)
        session.after_call("read", {"p": 1}, result="x", call_id=str(i))
    assert actions == ["allow", "allow", "critical"]


def test_end_round_and_a_new_turn_close_the_batch() -> None:
    session = loopguard.Guard.default().session("s")
    session.begin_turn([])
    first = session.begin_round()
    session.before_call("read", {"p": 1}, call_id="a")
    session.end_round()
    session.before_call("read", {"p": 2}, call_id="b")
    session.begin_round()
    session.begin_turn([])
    session.before_call("read", {"p": 3}, call_id="c")
    rounds = [e.round for e in session.history()]
    assert rounds[0] == first and len(set(rounds)) == 3


# -- misses: loops that bring nothing new ----------------------------------------------
def test_the_same_call_with_the_same_result_three_rounds_in_a_row_is_blocked() -> None:
    assert stops(play([one("ls", {"path": "/srv"}, "a b c")] * 3)) == [2]


def test_a_cycle_of_several_calls_with_unchanged_results_is_caught() -> None:
    cycle = [
        one("open", {"path": "A.java"}, "class A"),
        one("search_file", {"q": "skipNulls"}, "no match"),
        one("goto", {"line": 120}, "line 120"),
        one("scroll_down", {}, "lines 121-220"),
    ]
    decided = play(cycle * 3)
    assert stops(decided)[0] == 8  # the start of the third round
    assert decided[8].detector == "cycle"


def test_a_cycle_is_not_caught_when_one_position_learns_something_new() -> None:
    rounds = []
    for i in range(3):
        rounds += [
            one("bash", {"command": "python repro.py"}, "AssertionError"),
            one("bash", {"command": "pytest -q"}, f"{i} failed"),
        ]
    assert stops(play(rounds)) == []


def test_a_failing_call_retried_with_think_between_is_caught() -> None:
    book = (
        "book_reservation",
        {"flight": "HAT023", "payment": 4875},
        "Error: payment amount does not add up, total price is 4875",
    )
    script = []
    for i in range(3):
        script.append([book])
        script.append(one("think", {"thought": f"maybe the price is wrong ({i})"}, ""))
    assert stops(play(script)) == [4]


def test_the_same_failing_call_across_user_turns_is_caught() -> None:
    update = (
        "update_reservation",
        {"id": "XEWRD9", "flight": "HAT030"},
        Error("flight HAT030 not available on 2024-05-13"),
    )
    script = [[update], "please try again", [update], "there must be some confusion", [update]]
    assert stops(play(script)) == [2]


def test_the_same_failure_with_another_line_number_is_the_same_failure() -> None:
    script = []
    for line in (36191, 36254, 36323, 36400):
        script.append(
            one(
                "bash",
                {"command": "javac Repro.java"},
                f"/bin/bash: line {line}: javac: command not found",
            )
        )
        script.append(one("edit", {"path": "Repro.java", "patch": f"v{line}"}, "ok"))
    # a first occurrence is read only when its call comes round, and then only an equal
    # result catches it up: with the digits changing from the first attempt on, the chain
    # is the second, third and fourth attempt
    assert stops(play(script))[0] == 6


def test_the_same_failure_reported_by_the_host_is_blocked_on_the_third_attempt() -> None:
    script = []
    for line in (36191, 36254, 36323):
        script.append(one("build", {"target": "all"}, Error(f"line {line}: missing header")))
        script.append(one("read_file", {"path": f"{line}.h"}, "#pragma once"))
    assert stops(play(script)) == [4]  # host-reported errors are read at once


def test_a_failure_retried_after_an_edit_that_could_fix_it_is_not_a_loop() -> None:
    script = []
    for line in (36191, 36254, 36323, 36400):
        script.append(one("build", {"target": "all"}, Error(f"line {line}: missing header")))
        script.append(one("edit", {"path": "a.h", "patch": f"v{line}"}, "ok"))
    assert stops(play(script)) == []


def test_the_same_edit_reapplied_with_a_growing_result_is_caught() -> None:
    block = "public class A {\n  void f() {}\n}\n"
    script = [
        one(
            "edit",
            {"command": "edit 1:1\n" + block},
            f"[File: A.java ({4 * k} lines total)]\n" + block * k,
        )
        for k in range(1, 5)
    ]
    assert stops(play(script))[0] == 2


def test_a_long_payload_resent_with_trivial_changes_and_the_same_error_is_caught() -> None:
    body = "\n".join(f"line {i}: some configuration value = {i * 7}" for i in range(60))
    script = [
        one("write_config", {"text": body + " " * k}, Error("validation failed: key 'x' missing"))
        for k in range(3)
    ]
    decided = play(script)
    assert stops(decided) == [2] and decided[2].detector == "doom_loop_fuzzy"


def test_a_healthy_stretch_before_a_loop_is_not_stopped_early() -> None:
    script = [one("read_file", {"path": f"f{i}.py"}, f"body {i}") for i in range(6)]
    script += [
        one("bash", {"command": "make"}, Error("make: *** No rule to make target 'all'"))
    ] * 3
    assert stops(play(script)) == [8]


# -- polls -----------------------------------------------------------------------------
def test_waiting_on_an_unchanged_job_is_normal_for_a_while_then_stopped() -> None:
    poll = one("get_job", {"id": 7}, {"state": "running", "step": "compiling"})
    decided = play([poll] * 8)
    assert stops(decided)[0] == 5  # five unchanged results seen, the sixth poll is blocked
    assert "polled" in (decided[5].votes[0].message)


def test_a_poll_recognised_by_its_name_waits_longer_too() -> None:
    poll = one("check_build_status", {"id": 7}, {"ok": True})
    assert stops(play([poll] * 7))[0] == 5


# -- levels ----------------------------------------------------------------------------
def test_the_first_detection_blocks_and_persisting_stops() -> None:
    decided = play([one("ls", {"path": "/"}, "bin etc")] * 5)
    assert [d.action for d in decided] == ["allow", "allow", "critical", "breaker", "breaker"]
    assert decided[3].escalated


# -- outcome: any (the Chinese seed as written) -------------------------------------------------
def test_outcome_any_counts_arguments_only() -> None:
    script = [one("bash", {"command": "pytest -q"}, f"FAILED {name}") for name in ("a", "b", "c")]
    assert stops(play(script)) == []
    rules = {"detectors": {"doom_loop_exact": {"outcome": "any", "level": "breaker"}}}
    assert [d.action for d in play(script, rules)] == ["allow", "allow", "breaker"]


@pytest.mark.parametrize("pack", ["builtin:portfolio", "builtin:portfolio-en"])
def test_the_portfolio_packs_keep_the_seed_rules(pack: str) -> None:
    script = [one("portfolio", {"mode": "view"}, f"holdings at {i}") for i in range(3)]
    assert [d.action for d in play(script, {"extends": [pack]})] == ["allow", "allow", "breaker"]


# -- replay feeds a round's calls as one batch -------------------------------------------
def test_replay_feeds_the_calls_of_one_message_as_one_batch(tmp_path: Any) -> None:
    import json

    from loopguard.replay.replayer import DecisionRecord, Replayer

    def message(ids: list[str]) -> list[dict[str, Any]]:
        calls = [{"id": i, "name": "read_file", "arguments": {"path": "README.md"}} for i in ids]
        rows: list[dict[str, Any]] = [
            {"event": "assistant_message", "session_id": "s", "text": "", "tool_calls": calls}
        ]
        return rows + [
            {"event": "tool_result", "session_id": "s", "call_id": i, "content": "same"}
            for i in ids
        ]

    rows = [{"event": "user_message", "session_id": "s", "text": "go"}]
    rows += message(["a", "b", "c"]) + message(["d"]) + message(["e"])
    path = tmp_path / "batch.eventlog.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    records = Replayer(loopguard.Guard.default()).run([str(path)])
    actions = [
        r.decision.action
        for r in records
        if isinstance(r, DecisionRecord) and r.decision.phase == "before"
    ]
    # three identical reads in one message: warnings only; the same read in the next
    # two messages repeats the batch's outcome back to back: blocked
    assert actions == ["allow", "warn", "warn", "allow", "critical"]
