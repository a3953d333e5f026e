"""doom_loop_exact under builtin:portfolio (`outcome: any`): the same call `threshold`
(3) times in the last `window` (6) calls of the current turn, the current call included, is
a breaker.

Arguments here are short (under the fuzzy detector's 50 characters), so only this detector
can vote.
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers import UNSET, actions, call, guard_from, repeat, vote_of

ID = "doom_loop_exact"
SEARCH = {"q": "x"}


def session_with(**detector: Any):  # type: ignore[no-untyped-def]
    """A session under builtin:portfolio, whose doom-loop rules ignore outcomes."""
    session = guard_from(extends=["builtin:portfolio"], detectors={ID: detector}).session("s")
    session.begin_turn([{"role": "user", "content": "go"}])
    return session


def test_breaker_on_the_third_identical_call_in_a_turn() -> None:
    session = session_with()
    decisions = repeat(session, 3, "search", SEARCH)
    assert actions(decisions) == ["allow", "allow", "breaker"]
    vote = vote_of(decisions[-1], ID)
    assert vote is not None and (vote.level, vote.count) == ("breaker", 3)
    assert vote.evidence == (1, 2, 3)  # the current call included
    assert session.tools_closed


def test_window_counts_the_last_six_calls_of_the_turn() -> None:
    session = session_with()
    call(session, "search", SEARCH)
    for i in range(4):
        call(session, "read", {"path": str(i)})
    # call 6: its window (calls 1-6) holds searches 1 and 6, count 2
    assert call(session, "search", SEARCH).action == "allow"
    assert call(session, "search", SEARCH).action == "allow"  # call 1 has left the window
    assert call(session, "search", SEARCH).action == "breaker"


def test_the_oldest_call_of_a_full_window_still_counts() -> None:
    session = session_with()
    call(session, "search", SEARCH)
    for i in range(3):
        call(session, "read", {"path": str(i)})
    call(session, "search", SEARCH)
    third = call(session, "search", SEARCH)  # window: calls 1-6
    assert third.action == "breaker" and vote_of(third, ID).evidence == (1, 5, 6)  # type: ignore[union-attr]


def test_same_arguments_under_another_tool_do_not_count() -> None:
    session = session_with()
    decisions = [call(session, tool, SEARCH) for tool in ("search", "lookup", "search", "find")]
    assert actions(decisions) == ["allow"] * 4


def test_other_arguments_do_not_count() -> None:
    session = session_with()
    decisions = [call(session, "search", {"q": q}) for q in "xyxzy"]
    assert actions(decisions) == ["allow"] * 5


def test_a_new_turn_hides_the_previous_turn() -> None:
    session = session_with()
    repeat(session, 2, "search", SEARCH)
    session.begin_turn([{"role": "user", "content": "again"}])
    assert actions(repeat(session, 2, "search", SEARCH)) == ["allow", "allow"]


def test_run_ids_do_not_matter_within_a_turn() -> None:
    session = session_with()
    decisions = [call(session, "search", SEARCH, run_id=r) for r in ("a", "b", None)]
    assert actions(decisions) == ["allow", "allow", "breaker"]


def test_exempt_tools_are_never_checked() -> None:
    session = session_with()
    assert actions(repeat(session, 6, "check_background_tasks", {})) == ["allow"] * 6


def test_exempt_tools_are_not_recorded() -> None:
    session = session_with()
    call(session, "search", SEARCH)
    repeat(session, 5, "check_background_tasks", {})
    call(session, "search", SEARCH)
    # if the exempt calls took window slots, call 1 would have left the window
    assert call(session, "search", SEARCH).action == "breaker"


def test_exempt_list_comes_from_the_rules() -> None:
    session = session_with(exempt=["wait"])
    assert actions(repeat(session, 4, "wait", {"s": 1})) == ["allow"] * 4
    assert repeat(session, 3, "check_background_tasks", {})[-1].action == "breaker"


def test_window_and_threshold_come_from_the_rules() -> None:
    session = session_with(window=3, threshold=2)
    assert actions(repeat(session, 2, "search", SEARCH)) == ["allow", "breaker"]
    session.begin_turn([])
    call(session, "search", SEARCH)
    call(session, "read", {"p": 1})
    call(session, "read", {"p": 2})
    assert call(session, "search", SEARCH).action == "allow"  # window 3: call 1 is out


def test_detector_switch_turns_it_off() -> None:
    session = session_with(enabled=False)
    assert actions(repeat(session, 5, "search", SEARCH)) == ["allow"] * 5


@pytest.mark.parametrize("enabled", [UNSET, False, True])
def test_on_whatever_loop_detection_enabled_says(enabled: object) -> None:
    loop = {} if enabled is UNSET else {"enabled": enabled}
    session = guard_from(loop_detection=loop).session("s")  # the default rules
    session.begin_turn([])
    assert actions(repeat(session, 3, "search", SEARCH)) == ["allow", "allow", "critical"]


def test_arguments_differing_only_in_key_order_are_identical() -> None:
    session = session_with()
    forms = [{"q": "x", "n": 5}, '{"n": 5, "q": "x"}', {"n": 5, "q": "x"}]
    assert actions([call(session, "search", f) for f in forms]) == ["allow", "allow", "breaker"]


def test_a_blocked_call_stays_blocked() -> None:
    session = session_with()
    decisions = repeat(session, 5, "search", SEARCH)
    assert actions(decisions) == ["allow", "allow", "breaker", "breaker", "breaker"]
    assert [e.outcome for e in session.history()[2:]] == [b"veto"] * 3


def test_outcomes_do_not_matter() -> None:
    session = session_with()
    decisions = [call(session, "search", SEARCH, result=f"r{i}") for i in range(3)]
    assert decisions[-1].action == "breaker"


# -- builtin:default: a repeat counts when nothing between could have changed its outcome --
class Failed(str):
    """A failure reported by the host (`after_call(error=...)`)."""


def play(script: list[Any], **rules: Any) -> list[int]:
    """Feed rounds (lists of (tool, args, result)) and user messages (str) through one
    session under builtin:default (plus `rules`); the 0-based indexes of blocked calls."""
    session = guard_from(**rules).session("s")
    session.begin_turn([{"role": "user", "content": "start"}])
    blocked, n = [], 0
    for step in script:
        if isinstance(step, str):
            session.begin_turn([{"role": "user", "content": step}])
            continue
        session.begin_round()
        for tool, args, result in step:
            cid = f"c{n}"
            if session.before_call(tool, args, call_id=cid).blocked:
                blocked.append(n)
            elif isinstance(result, Failed):
                session.after_call(tool, args, error=str(result), call_id=cid)
            else:
                session.after_call(tool, args, result=result, call_id=cid)
            n += 1
    return blocked


def once(tool: str, args: Any, result: Any) -> list[tuple[str, Any, Any]]:
    return [(tool, args, result)]


COMMIT = once("Bash", {"command": "git commit -m x"}, Failed("pre-commit hook failed: lint"))


def test_a_failing_call_retried_after_an_edit_is_not_a_loop() -> None:
    # pattern 1: the edit could change the outcome (the agent is fixing something)
    script = []
    for i in range(4):
        script += [COMMIT, once("Edit", {"file_path": "a.py", "new_string": f"v{i}"}, "ok")]
    assert play(script) == []
    install = once("bash", {"command": "apt-get install -y jq"}, "E: Unable to locate package jq")
    fixes = [
        once("bash", {"command": command}, "")
        for command in ("apt-get update", "add-apt-repository universe", "apt-get clean")
    ]
    assert play([install, fixes[0], install, fixes[1], install, fixes[2], install]) == []


def test_the_same_call_with_only_look_ups_between_is_a_loop() -> None:
    # pattern 2: successes need not be back to back when only look-ups ran between
    order = once("get_order_details", {"order_id": "#W1"}, {"status": "delivered"})
    script = []
    for q in ("shoes", "boots", "socks"):
        script += [order, once("search_products", {"q": q}, [q]), once("think", {"t": q}, "")]
    assert play(script) == [6]
    view = once("str_replace_editor", {"command": "view", "path": "a.py"}, "def f(): ...")
    grep = [once("bash", {"command": f"grep -n {w} a.py"}, w) for w in ("f", "g")]
    assert play([view, grep[0], view, grep[1], view]) == [4]


def test_how_calls_are_classified_and_declared() -> None:
    # pattern 3: an unknown tool between counts as a change; the rules can say otherwise
    order = once("get_order_details", {"order_id": "#W1"}, {"status": "delivered"})
    frob = [once("frobnicate", {"n": n}, "done") for n in range(2)]
    assert play([order, frob[0], order, frob[1], order]) == []
    declared = {"detectors": {"doom_loop_exact": {"read_only_tools": ["frobnicate"]}}}
    assert play([order, frob[0], order, frob[1], order], **declared) == [4]
    lookup = [once("lookup_thing", {"n": n}, "x") for n in range(2)]
    changing = {"detectors": {"doom_loop_exact": {"changing_tools": ["lookup_thing"]}}}
    assert play([order, lookup[0], order, lookup[1], order], **changing) == []
    assert play([order, lookup[0], order, lookup[1], order]) == [4]


def test_a_user_who_reports_a_change_makes_the_repeat_a_re_check() -> None:
    # pattern 4
    check = once("get_device_settings", {}, {"airplane_mode": True})
    told = [check, "I switched airplane mode off, check again", check, "I restarted it", check]
    assert play(told) == []
    confirm = [check, "please confirm", check, "ok, and?", check]
    assert play(confirm) == [2]


def test_a_poll_word_inside_a_word_does_not_make_a_poll() -> None:
    # pattern 6: `search_waiting_list` is a search, not a wait: three repeats, not six
    search = once("search_waiting_list", {"flight": "HAT1"}, [])
    assert play([search] * 3) == [2]
    status = once("get_job_status", {"id": 1}, {"done": False})
    assert play([status] * 6) == [5]  # a real status poll still waits longer
    between = [step for i in range(6) for step in (status, once("read_file", {"p": i}, i))]
    assert play(between) == []  # and checking it between other work is no loop


def test_repeats_spread_wider_than_eight_calls_with_only_look_ups_between() -> None:
    # pattern 7
    check = once("get_reservation_details", {"id": "XEWRD9"}, {"flights": ["HAT1"]})
    script = []
    for k in range(3):
        script.append(check)
        script += [once("search_direct_flight", {"to": f"{k}{i}"}, []) for i in range(9)]
    assert play(script) == [20]


def test_a_relative_cd_is_never_a_repeat() -> None:
    cd = once("bash", {"command": "cd .."}, "")
    assert play([cd] * 4) == []
    assert play([once("bash", {"command": "cd /repo"}, "")] * 3) == [2]


def test_failed_calls_between_repeats_changed_nothing() -> None:
    # a rejected edit did not do its work: the same failing edit around it still loops
    same = once("bash", {"command": "edit 1:1\nclass A {"}, "Error: syntax error, edit reverted")
    script = []
    for i in range(3):
        script += [same, once("bash", {"command": f"cat B{i}.java"}, Failed("No such file"))]
    assert play(script) == [4]
    # new variants of the same attempt failing the same way are the same loop …
    variants = []
    for i in range(3):
        variants += [same, once("bash", {"command": f"edit 1:1\nclass A{i} {{"}, same[0][2])]
    assert play(variants) == [4]
    # … but failing otherwise, they are the agent exploring: it learns from each
    explored = []
    for i in range(3):
        error = f"Error: syntax error at token {chr(97 + i)}, edit reverted"
        explored += [same, once("bash", {"command": f"edit 1:1\nclass A{i} {{"}, error)]
    assert play(explored) == []
    assert play([same, same, same]) == [2]  # back to back it is a loop all the same


def test_edits_cannot_make_a_missing_program_appear() -> None:
    # the labelling protocol: `javac: command not found` retried after edits is a loop …
    javac = once("bash", {"command": "javac A.java"}, "/bin/bash: line 7: javac: command not found")
    script = []
    for i in range(3):
        script += [javac, once("bash", {"command": f"edit 1:1\nclass A{i}"}, "[File: A.java]")]
    assert play(script) == [4]
    # … but an install or a PATH change between could fix it
    path = [once("bash", {"command": f"export PATH=$PATH:/opt/jdk{v}/bin"}, "") for v in (8, 11)]
    assert play([javac, path[0], javac, path[1], javac]) == []


def test_an_error_that_names_a_look_up_makes_it_the_remedy() -> None:
    # pattern 9: Edit fails twice with "read it first", Read, then the same Edit is allowed
    edit = once("Edit", {"file_path": "a.py", "old_string": "x", "new_string": "y"}, None)
    unread = Failed("File has not been read yet. Read it first before writing to it.")
    first = [(edit[0][0], edit[0][1], unread)]
    read = once("Read", {"file_path": "a.py"}, "x = 1")
    assert play([first, first, read, edit]) == []
    assert play([first, first, first]) == [2]


def test_a_reworded_description_does_not_make_a_call_new() -> None:
    # pattern 10
    script = [
        once("Bash", {"command": "npm run build", "description": d}, Failed("Error: build failed"))
        for d in ("Build", "Build the app", "Try the build again", "Build once more")
    ]
    assert play(script) == [2, 3]  # the model persisting: the second block is a breaker
    mine = {"detectors": {"doom_loop_exact": {"commentary_fields": []}}}
    assert play(script, **mine) == []
    think = [once("think", {"thought": f"idea {i}"}, "") for i in range(3)]
    assert play(think) == []  # a field alone is the call itself, not commentary


def test_moving_the_editor_changes_only_what_looks_through_it() -> None:
    # pattern 8: a cycle with a scroll inside; `search_dir` does not look through the editor
    search = once("bash", {"command": 'search_dir "AnySetter"'}, "Found 66 matches")
    script = []
    for name in ("A.java", "B.java", "C.java"):
        script += [
            search,
            once("bash", {"command": f"open {name}"}, f"[File: {name}]"),
            once("bash", {"command": "scroll_down"}, f"[File: {name}] 101:"),
        ]
    assert play(script) == [6]
    # what the editor shows does depend on them: a scroll or a file-less search_file
    # repeated after moves is a look at another place
    for look in ("scroll_down", 'search_file "AnySetter"'):
        same = once("bash", {"command": look}, "[File: A.java] 1:")
        moves = [once("bash", {"command": f"goto {n}"}, f"{n}:") for n in (50, 90)]
        assert play([same, moves[0], same, moves[1], same]) == []
    # an edit between still counts as a change for everything
    edit = [once("bash", {"command": f"edit 3:3\nint x = {i};\nend_of_edit"}, "ok") for i in (1, 2)]
    assert play([search, edit[0], search, edit[1], search]) == []


def test_the_same_edit_applied_again_straight_away_is_a_loop() -> None:
    # pattern 5: an identical edit re-applied back to back echoes a file that grows by the
    # same lines each time: a result that differs is no progress
    def edit(total: int) -> list[tuple[str, Any, Any]]:
        command = "edit 166:171\n  if (x) continue;\nend_of_edit"
        return once("bash", {"command": command}, f"[File: A.java ({total} lines total)] pending")

    assert play([edit(214), edit(215), edit(216)]) == [2]
    # with anything between, a repeated edit may be a deliberate redo: its results decide
    look = [once("bash", {"command": f"cat B{i}.java"}, f"{i}") for i in range(2)]
    assert play([edit(214), look[0], edit(215), look[1], edit(216)]) == []
    # a look-up repeated back to back still needs the same result
    status = [once("get_order", {"id": 1}, {"s": s}) for s in ("packed", "shipped", "delivered")]
    assert play(status) == []


def test_short_arguments_written_another_way_are_the_same_call() -> None:
    # pattern 5: a reworded summary passed to a transfer tool, an amount or a date written
    # another way — the same tool, the same outcome
    summaries = (
        "The user wants to cancel reservation XEWRD9 and get a refund",
        "User asks for a refund after cancelling the reservation XEWRD9 today",
        "Customer would like reservation XEWRD9 cancelled and the money back",
    )
    transfer = [
        once("transfer_to_human_agents", {"summary": s}, "Transfer successful") for s in summaries
    ]
    assert play(transfer) == [2]
    pay = [
        once("pay_invoice", {"id": "A1", "amount": a}, Failed("Error: card declined"))
        for a in ("$1,250.00", "1250.00", 1250.0)
    ]
    assert play(pay) == [2]
    flights = [
        once("search_direct_flight", {"from": "JFK", "date": d}, [])
        for d in ("May 1, 2024", "2024-05-01", "1st May 2024")
    ]
    assert play(flights) == [2]
    # other values are other calls: another date, another amount, another id
    dates = [once("search_direct_flight", {"date": f"2024-05-0{d}"}, []) for d in (1, 2, 3)]
    assert play(dates) == []
    ids = [once("get_order", {"id": i}, Failed("Error: not found")) for i in ("007", "7", "07")]
    assert play(ids) == []
    # a look-up's free text is what it looks for: a reworded query is a new search
    queries = [once("search_docs", {"q": s}, []) for s in summaries]
    assert play(queries) == []


def test_a_replacement_whose_old_text_is_not_there_is_the_same_call_whatever_its_new_text() -> None:
    # pattern 5: a `str_replace` whose new text differs by a few characters, failing because
    # the text it looks for is not in the file: no new text can change that
    def replace(new: str, error: str) -> list[tuple[str, Any, Any]]:
        args = {"command": "str_replace", "path": "/repo/a.py", "old_str": "x = 1", "new_str": new}
        return once("str_replace_editor", args, Failed(error))

    missing = "No replacement was performed, old_str `x = 1` did not appear verbatim in /repo/a.py."
    assert play([replace(n, missing) for n in ("x = 2", "x = 2 ", "x=2")]) == [2]
    claude = [
        once(
            "Edit",
            {"file_path": "a.py", "old_string": "def f():", "new_string": f"def f(){s}:"},
            Failed("<tool_use_error>String to replace not found in file.\nString: def f():"),
        )
        for s in (" -> int", "->int", " -> None")
    ]
    assert play(claude) == [2]
    # a failure about the new text (a syntax error it would introduce): each new text is a fix
    syntax = "Your proposed edit has introduced new syntax error(s): unmatched ')'"
    assert play([replace(n, syntax) for n in ("f(x))", "f(x)))", "f((x))")]) == []
    # another old text is another search of the file
    others = [
        once(
            "str_replace_editor",
            {"command": "str_replace", "path": "a.py", "old_str": old, "new_str": "y"},
            Failed(missing),
        )
        for old in ("x = 1", "x  = 1", "x =1")
    ]
    assert play(others) == []


def test_a_change_the_same_failure_outlived_is_crossed() -> None:
    # pattern 1's other side: `export PATH` between two identical `javac: command not found`
    # did not touch the failure, so the attempts on both sides of it count
    javac = once("bash", {"command": "javac A.java"}, "/bin/bash: line 7: javac: command not found")
    look = once("bash", {"command": "echo $PATH"}, "/usr/bin")
    path = once("bash", {"command": "export PATH=$PATH:/opt/jdk/bin"}, "")
    assert play([javac, path, javac, look, javac]) == [4]
    assert play([javac, look, javac, path, javac, look, javac]) == [6]
    # the retry right after a change is always allowed: that change may be the fix
    assert play([javac, look, javac, path, javac]) == []
    fixes = [
        once("bash", {"command": f"export PATH=$PATH:/opt/jdk{v}/bin"}, "") for v in (8, 11, 17)
    ]
    assert play([javac, fixes[0], javac, fixes[1], javac, fixes[2], javac]) == []
    # a success on the other side is no evidence: the change may have mattered
    fixed = once("bash", {"command": "javac A.java"}, "")
    assert play([fixed, path, javac, look, javac]) == []


def test_the_per_call_fast_path_classifies_like_the_full_one() -> None:
    # classify() answers most calls from the tool name: the same flags and identity as
    # flags() and core_digest(), for every kind of call
    from loopguard.detectors.support.effects import Effects

    effects = Effects(read_only=["frob"], changing=["get_secret"])
    calls = [
        ("read_file", {"path": "a"}),
        ("read_file", {"path": "a", "description": "why"}),
        ("str_replace_editor", {"command": "view", "path": "a"}),
        ("str_replace_editor", {"command": "str_replace", "path": "a"}),
        ("bash", {"command": "ls"}),
        ("bash", {"command": "open A.java"}),
        ("frob", {"action": "delete"}),
        ("get_secret", {"id": 1}),
        ("frobnicate", {"n": 1}),
        ("book_flight", ["not", "a", "mapping"]),
    ]
    from loopguard.state.fingerprint import args_digest, canonical_text

    # the second time round the names are known; a call seen lately is then remembered by
    # digest, and the third time answered from that
    for seen in (False, True, True):
        for tool, args in calls:
            digest = args_digest(tool, canonical_text(args))  # (the call's identity)
            core = effects.core_digest(tool, args, digest)
            expected = (effects.flags(tool, args), None if core == digest else core)
            assert effects.classify(tool, args, digest, seen) == expected, (tool, args)


def test_a_plain_call_is_remembered_by_digest_only_once_seen_lately() -> None:
    # Most calls are new ones answered from the tool's name: remembering each would fill the
    # bounded memory with calls that never come round again.
    from loopguard.detectors.support.effects import QUIET, Effects
    from loopguard.state.fingerprint import args_digest, canonical_text

    effects = Effects()
    effects.classify("read_file", {"path": "first"}, b"first")  # (the name becomes known)
    args = {"path": "a"}
    digest = args_digest("read_file", canonical_text(args))
    assert effects.classify("read_file", args, digest, seen=False) == (QUIET, None)
    assert digest not in effects._calls
    assert effects.classify("read_file", args, digest, seen=True) == (QUIET, None)
    assert effects._calls[digest] == (QUIET, None)


def test_a_call_has_one_identity_from_the_first_time_its_tool_is_seen() -> None:
    # The first call of a tool once took the name's verdict as not known yet: a shell line
    # with free text in it (a commit message) was "prose" then and only then, so its repeats
    # were not the same call as it. Classifications are remembered by digest, boundedly.
    from loopguard.detectors.support import effects as module
    from loopguard.state.fingerprint import args_digest, canonical_text

    calls = [
        ("bash", {"command": "git commit -m 'fix the bug in the parser now'"}),
        ("send_email", {"to": "a@b.c", "body": "thanks for the quick answer on the parser"}),
        ("process", {"action": "poll", "id": "build"}),
    ]
    for tool, args in calls:
        effects = module.Effects()
        digest = args_digest(tool, canonical_text(args))
        first = effects.classify(tool, args, digest)
        assert effects.classify(tool, args, digest) == first, tool
        assert module.Effects().classify(tool, args, digest) == first, tool
    effects = module.Effects()
    for i in range(module._MAX_CALLS + 10):
        args = {"action": "poll", "id": f"job{i}"}
        effects.classify("process", args, args_digest("process", canonical_text(args)))
    assert len(effects._calls) <= module._MAX_CALLS


def test_failure_reader_finds_markers_as_whole_words_only() -> None:
    from loopguard.detectors.support.effects import FailureReader

    reader = FailureReader(["error"], ["timed out", "command not found"])
    assert reader.failed("bash: javac: command not found")
    assert reader.failed("x" * 2000 + " request Timed Out")  # the end of a long text
    assert not reader.failed("the job was untimed outright")  # inside words
    assert not reader.failed("errors: 0")  # a prefix that is part of a longer word
    assert reader.failed("Error: boom")
    assert not FailureReader([], []).failed("command not found")


def test_the_trail_survives_a_session_store_round_trip() -> None:
    from loopguard.stores.codec import decode, encode

    guard = guard_from()
    session = guard.session("s")
    session.begin_turn([{"role": "user", "content": "I fixed it"}])
    call(session, "Bash", {"command": "ls", "description": "list"}, "a")
    call(session, "frobnicate", {}, error="Read it first")
    state = guard.store._sessions["s"]
    again = decode(encode(state), 30, False)
    old, new = state.scratch[ID], again.scratch[ID]
    assert (old.ring, old.newest, old.cores, old.told, old.turn, old.remedies) == (
        new.ring,
        new.newest,
        new.cores,
        new.told,
        new.turn,
        new.remedies,
    )
    assert new.remedies == frozenset({"read"}) and new.told == (1,)
    assert new.flags(old.newest) == old.flags(old.newest) != 0


def test_a_trail_forgets_calls_it_was_not_told_about_and_calls_too_old() -> None:
    from loopguard.detectors.doom_loop_exact import RECENT_MARKS, Trail

    trail = Trail()
    trail.note(0, 5, b"core-0")
    trail.note(1, 3, None)
    assert (trail.flags(0), trail.core(0), trail.flags(1)) == (5, b"core-0", 3)
    # seq 2 .. 64 never noted (an exempt tool, say); 65 shares seq 1's slot in the ring
    trail.note(RECENT_MARKS + 1, 0, None)
    assert trail.flags(1) == 0 and trail.flags(0) == 0 and trail.core(0) is None
    assert trail.cores == {}  # the old core digest is dropped, not only hidden
    for seq in range(RECENT_MARKS + 2, 2 * RECENT_MARKS + 2):
        trail.note(seq, 1, None)  # every slot of the ring holds something
    last = 2 * RECENT_MARKS + 1
    trail.note(last + 6, 2, None)  # five calls skipped: their slots (of older calls) cleared
    assert [trail.flags(s) for s in range(last + 1, last + 7)] == [0, 0, 0, 0, 0, 2]
    assert trail.flags(last) == 1
    trail.note(3, 7, None)  # older than anything kept: ignored
    assert trail.flags(3) == 0 and trail.flags(last + 6) == 2


def test_a_trail_stored_before_the_ring_still_decodes() -> None:
    from loopguard.detectors.doom_loop_exact import DoomLoopExact

    old_form = [4, [2], [[7, 1, None], [3, 9, "ab"], [9, 128, None]], ["read"]]
    trail = DoomLoopExact().decode_scratch(old_form)
    assert [trail.flags(s) for s in (3, 7, 9)] == [9, 1, 128] and trail.core(3) == b"\xab"
    assert (trail.turn, trail.told, trail.edits, trail.programs) == (4, (2,), None, None)
    assert DoomLoopExact().encode_scratch(trail)[2] == [[3, 9, "ab"], [7, 1, None], [9, 128, None]]
