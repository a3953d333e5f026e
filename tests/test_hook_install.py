"""`loopguard hook install|uninstall`: merged into existing agent settings, idempotent, backed up,
undone exactly, and never writing over a file it cannot read (issue 20, item 5)."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

from loopguard.hooks import install as ins
from loopguard.hooks.dialects import DIALECTS

CLAUDE = DIALECTS["claude"]
GEMINI = DIALECTS["gemini"]
CODEX = DIALECTS["codex"]
COPILOT = DIALECTS["copilot"]
CURSOR = DIALECTS["cursor"]

CLAUDE_SETTINGS = {
    "permissions": {"allow": ["Bash(ls:*)"], "deny": ["Read(.env)"]},
    "env": {"FOO": "1"},
    "hooks": {
        "PreToolUse": [
            {
                "matcher": "Bash",
                "hooks": [{"type": "command", "command": "./check.sh", "timeout": 5}],
            }
        ],
    },
    "model": "sonnet",
}


def other_settings(dialect_name: str) -> dict[str, Any]:
    """A settings file of the dialect's shape with a key and a hook of the user's own."""
    dialect = DIALECTS[dialect_name]
    spec = dialect.install
    event = spec.events[0][0]
    if spec.layout == "nested":
        hooks = {event: [{"matcher": "x", "hooks": [{"type": "command", "command": "mine.sh"}]}]}
    else:
        hooks = {event: [dict.fromkeys(spec.command_keys, "mine.sh")]}
    return {**dict(spec.file_extra), "someKey": {"kept": [1, 2.5, None, True]}, "hooks": hooks}


def write(path: Path, doc: Any, *, indent: int = 2) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=indent) + "\n", encoding="utf-8")
    return path.read_bytes()


def backups(path: Path) -> list[Path]:
    return sorted(path.parent.glob(path.name + ".loopguard-backup*"))


def loopguard_entries(doc: dict[str, Any], dialect_name: str) -> dict[str, list[tuple]]:
    """event -> [(matcher, entry)] for the loopguard entries of the dialect."""
    dialect = DIALECTS[dialect_name]
    out: dict[str, list[tuple]] = {}
    for event, groups in doc.get("hooks", {}).items():
        if not isinstance(groups, list):
            continue
        for group in groups:
            if not isinstance(group, dict):
                continue
            if dialect.install.layout == "nested":
                pairs = [(group.get("matcher"), e) for e in group["hooks"]]
            else:
                pairs = [(group.get("matcher"), group)]
            for matcher, entry in pairs:
                keys = dialect.install.command_keys
                if any(ins.runs_loopguard_hook(entry.get(k), dialect_name) for k in keys):
                    out.setdefault(event, []).append((matcher, entry))
    return out


def run_cli(action: str, *argv: str) -> int:
    """The command line as `loopguard hook install|uninstall ...` parses it."""
    parser = argparse.ArgumentParser(prog=f"loopguard hook {action}")
    if action == "install":
        ins.add_install_arguments(parser)
    else:
        ins.add_uninstall_arguments(parser)
    try:
        args = parser.parse_args(list(argv))
    except SystemExit as exc:
        return int(exc.code or 0)
    return args.run(args)


def do_install(dialect, tmp_path: Path, scope: str = "project", **kw) -> ins.InstallReport:
    kw.setdefault("command", "loopguard")
    return ins.install(dialect, scope, project_dir=tmp_path / "p", home=tmp_path / "h", **kw)


def do_uninstall(dialect, tmp_path: Path, scope: str = "project", **kw) -> ins.InstallReport:
    return ins.uninstall(dialect, scope, project_dir=tmp_path / "p", home=tmp_path / "h", **kw)


# ---- Claude Code, the whole cycle ----------------------------------------------------------


def test_claude_install_keeps_everything_else_and_is_idempotent(tmp_path: Path) -> None:
    path = tmp_path / "p" / ".claude" / "settings.json"
    original = write(path, CLAUDE_SETTINGS, indent=4)

    report = do_install(CLAUDE, tmp_path)
    assert report.changed and report.path == path and not report.created
    doc = json.loads(path.read_text())
    assert list(doc) == list(CLAUDE_SETTINGS)  # key order kept
    for key in ("permissions", "env", "model"):
        assert doc[key] == CLAUDE_SETTINGS[key]
    assert doc["hooks"]["PreToolUse"][0] == CLAUDE_SETTINGS["hooks"]["PreToolUse"][0]
    assert path.read_text().startswith('{\n    "permissions"')  # the file's indentation
    entries = loopguard_entries(doc, "claude")
    assert set(entries) == {event for event, _ in CLAUDE.install.events}
    for event, matcher in CLAUDE.install.events:
        [(found_matcher, entry)] = entries[event]
        assert found_matcher == matcher
        assert entry == {"type": "command", "command": "loopguard hook claude", "timeout": 30}
    assert entries["PreToolUse"][0][0] == "*"
    assert entries["Stop"][0][0] is None
    # the backup holds the old bytes
    assert report.backup == path.with_name("settings.json.loopguard-backup")
    assert report.backup.read_bytes() == original
    assert str(path) in "\n".join(report.lines()) and str(report.backup) in "\n".join(
        report.lines()
    )

    after_first = path.read_bytes()
    again = do_install(CLAUDE, tmp_path)
    assert not again.changed and again.backup is None
    assert path.read_bytes() == after_first
    assert backups(path) == [report.backup]
    assert "nothing changed" in again.lines()[0]

    removed = do_uninstall(CLAUDE, tmp_path)
    assert removed.changed and removed.backup is not None and removed.backup != report.backup
    assert removed.backup.read_bytes() == after_first  # the older backup is not overwritten
    assert report.backup.read_bytes() == original
    assert json.loads(path.read_text()) == CLAUDE_SETTINGS
    assert list(json.loads(path.read_text())["hooks"]) == ["PreToolUse"]

    restored = path.read_bytes()
    second = do_uninstall(CLAUDE, tmp_path)
    assert not second.changed and path.read_bytes() == restored
    assert len(backups(path)) == 2


def test_claude_user_scope_writes_under_home(tmp_path: Path) -> None:
    report = do_install(CLAUDE, tmp_path, scope="user")
    assert report.path == tmp_path / "h" / ".claude" / "settings.json"
    assert report.created and report.backup is None
    assert set(loopguard_entries(json.loads(report.path.read_text()), "claude")) == {
        e for e, _ in CLAUDE.install.events
    }
    assert not (tmp_path / "p").exists()


@pytest.mark.parametrize("name", list(DIALECTS))
def test_every_dialect_round_trips_to_the_original(tmp_path: Path, name: str) -> None:
    dialect = DIALECTS[name]
    path = ins.settings_path(dialect, "project", project_dir=tmp_path / "p", home=tmp_path)
    original = other_settings(name)
    write(path, original)

    do_install(dialect, tmp_path)
    doc = json.loads(path.read_text())
    assert doc["someKey"] == original["someKey"]
    first_event = dialect.install.events[0][0]
    assert doc["hooks"][first_event][0] == original["hooks"][first_event][0]
    entries = loopguard_entries(doc, name)
    spec = dialect.install
    assert set(entries) == {event for event, _ in spec.events}
    for event, matcher in spec.events:
        [(found_matcher, entry)] = entries[event]
        assert found_matcher == matcher
        for key, value in spec.entry_extra.items():
            assert entry[key] == value
        if spec.timeout:
            assert entry[spec.timeout[0]] == spec.timeout[1]
        for key in spec.command_keys:
            words = shlex.split(entry[key])
            assert words[:3] == ["loopguard", "hook", name]
            assert words[3:] == (["--event", event] if event in spec.named else [])

    do_uninstall(dialect, tmp_path)
    assert json.loads(path.read_text()) == original


@pytest.mark.parametrize("name", list(DIALECTS))
def test_a_new_file_is_created_and_uninstall_removes_it(tmp_path: Path, name: str) -> None:
    dialect = DIALECTS[name]
    report = do_install(dialect, tmp_path)
    assert report.created and report.path.is_file() and report.backup is None
    doc = json.loads(report.path.read_text())
    for key, value in dialect.install.file_extra.items():
        assert doc[key] == value
    assert list(doc)[-1] == "hooks"

    removed = do_uninstall(dialect, tmp_path)
    assert removed.deleted and not report.path.exists()
    assert removed.backup is not None and json.loads(removed.backup.read_text()) == doc
    assert "delete the file" in "\n".join(removed.lines())


# ---- the agents' own cases -----------------------------------------------------------------


def test_copilot_file_has_both_shells_and_the_named_event(tmp_path: Path) -> None:
    report = do_install(COPILOT, tmp_path)
    assert report.path == tmp_path / "p" / ".github" / "hooks" / "loopguard.json"
    doc = json.loads(report.path.read_text())
    assert doc["version"] == 1 and list(doc) == ["version", "hooks"]
    [entry] = doc["hooks"]["permissionRequest"]
    assert entry["bash"] == "loopguard hook copilot --event permissionRequest"
    assert entry["powershell"] == "loopguard hook copilot --event permissionRequest"
    assert entry["timeoutSec"] == 30 and entry["type"] == "command"
    assert doc["hooks"]["PreToolUse"] == [
        {
            "type": "command",
            "bash": "loopguard hook copilot",
            "powershell": "loopguard hook copilot",
            "timeoutSec": 30,
        }
    ]


def test_copilot_file_with_a_user_hook_is_kept_on_uninstall(tmp_path: Path) -> None:
    path = tmp_path / "p" / ".github" / "hooks" / "loopguard.json"
    original = {"version": 1, "hooks": {"Stop": [{"type": "command", "bash": "notify.sh"}]}}
    write(path, original)
    do_install(COPILOT, tmp_path)
    assert json.loads(path.read_text())["hooks"]["Stop"][0] == original["hooks"]["Stop"][0]
    removed = do_uninstall(COPILOT, tmp_path)
    assert not removed.deleted and json.loads(path.read_text()) == original


def test_codex_defaults_to_the_user_file_honours_codex_home_and_says_to_trust(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert CODEX.install.default_scope == "user"
    codex_home = tmp_path / "codexhome"
    path = codex_home / "hooks.json"
    original = {
        "hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "x"}]}]
        }
    }
    write(path, original)
    monkeypatch.setenv("CODEX_HOME", str(codex_home))
    monkeypatch.setenv("HOME", str(tmp_path / "h"))
    assert run_cli("install", "codex", "--command", "loopguard") == 0
    out = capsys.readouterr().out
    assert str(path) in out and "/hooks" in out and "trust" in out
    doc = json.loads(path.read_text())
    assert doc["hooks"]["PreToolUse"][0] == original["hooks"]["PreToolUse"][0]
    assert doc["hooks"]["PreToolUse"][1]["matcher"] == ".*"
    assert doc["hooks"]["PreToolUse"][1]["hooks"][0]["timeout"] == 30
    monkeypatch.delenv("CODEX_HOME")
    user = ins.settings_path(CODEX, "user", project_dir=tmp_path, home=tmp_path / "h")
    assert user == tmp_path / "h" / ".codex" / "hooks.json"


def test_cursor_hooks_file_with_another_hook(tmp_path: Path) -> None:
    path = tmp_path / "p" / ".cursor" / "hooks.json"
    original = {
        "version": 1,
        "hooks": {"afterFileEdit": [{"command": "./format.sh"}], "stop": [{"command": "./x"}]},
    }
    write(path, original)
    do_install(CURSOR, tmp_path)
    doc = json.loads(path.read_text())
    assert doc["hooks"]["afterFileEdit"] == original["hooks"]["afterFileEdit"]
    assert doc["hooks"]["stop"] == [{"command": "./x"}, {"command": "loopguard hook cursor"}]
    assert list(doc["hooks"])[:2] == ["afterFileEdit", "stop"]
    do_uninstall(CURSOR, tmp_path)
    assert json.loads(path.read_text()) == original


def test_a_flat_file_of_another_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "p" / ".cursor" / "hooks.json"
    before = write(path, {"version": 2, "hooks": {}})
    with pytest.raises(ins.InstallError, match=r'"version" is 2'):
        do_install(CURSOR, tmp_path)
    assert path.read_bytes() == before and not backups(path)


# ---- Gemini CLI: comments and its own loop detection --------------------------------------

GEMINI_SETTINGS = {
    "model": {"name": "gemini-2.5-pro"},
    "ui": {"theme": "GitHub"},
    "hooks": {"disabled": ["old-hook"]},
}


def test_gemini_disable_flag_sets_the_switch_and_keeps_model_keys(tmp_path: Path) -> None:
    path = tmp_path / "p" / ".gemini" / "settings.json"
    write(path, GEMINI_SETTINGS)
    report = do_install(GEMINI, tmp_path, disable_builtin_loop_detection=True)
    doc = json.loads(path.read_text())
    assert doc["model"] == {"name": "gemini-2.5-pro", "disableLoopDetection": True}
    assert doc["ui"] == GEMINI_SETTINGS["ui"] and doc["hooks"]["disabled"] == ["old-hook"]
    assert any("disableLoopDetection" in change for change in report.changes)
    entry = loopguard_entries(doc, "gemini")["BeforeTool"][0]
    assert entry == (
        ".*",
        {
            "type": "command",
            "name": "loopguard",
            "command": "loopguard hook gemini",
            "timeout": 30000,
        },
    )

    # uninstall leaves the switch unless asked, and says so
    kept = do_uninstall(GEMINI, tmp_path)
    assert json.loads(path.read_text())["model"]["disableLoopDetection"] is True
    assert any("--restore-builtin-loop-detection" in note for note in kept.notes)
    do_uninstall(GEMINI, tmp_path, restore_builtin_loop_detection=True)
    assert json.loads(path.read_text()) == GEMINI_SETTINGS


def test_gemini_switch_created_and_removed_whole(tmp_path: Path) -> None:
    path = tmp_path / "p" / ".gemini" / "settings.json"
    write(path, {"ui": {"theme": "x"}})
    do_install(GEMINI, tmp_path, disable_builtin_loop_detection=True)
    assert json.loads(path.read_text())["model"] == {"disableLoopDetection": True}
    do_uninstall(GEMINI, tmp_path, restore_builtin_loop_detection=True)
    assert json.loads(path.read_text()) == {"ui": {"theme": "x"}}


def test_gemini_keep_and_no_flag_off_a_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "p" / ".gemini" / "settings.json"
    write(path, GEMINI_SETTINGS)
    project = str(tmp_path / "p")
    assert (
        run_cli(
            "install",
            "gemini",
            "--project-dir",
            project,
            "--keep-builtin-loop-detection",
            "--command",
            "loopguard",
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "disableLoopDetection" not in json.loads(path.read_text())["model"]
    assert "--disable-builtin-loop-detection" not in out
    run_cli("uninstall", "gemini", "--project-dir", project)
    capsys.readouterr()
    # neither flag, not a terminal (pytest's stdin): left on, with a line saying how
    assert not sys.stdin.isatty()
    assert run_cli("install", "gemini", "--project-dir", project, "--command", "loopguard") == 0
    out = capsys.readouterr().out
    assert "disableLoopDetection" not in json.loads(path.read_text())["model"]
    assert "--disable-builtin-loop-detection" in out and "trusted folder" in out


def test_gemini_settings_with_comments_are_read_but_not_rewritten(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "p" / ".gemini" / "settings.json"
    path.parent.mkdir(parents=True)
    text = (
        '{\n  // my model\n  "model": {"name": "x /* not a comment */"},\n  /* ui */ "ui": {}\n}\n'
    )
    path.write_text(text)
    project = str(tmp_path / "p")
    assert run_cli("install", "gemini", "--project-dir", project, "--command", "loopguard") == 2
    err = capsys.readouterr().err
    assert f"{path} has comments (the first at 2:3)" in err and "\n" not in err.strip()
    assert path.read_text() == text and not backups(path)
    # a dry run shows what to add by hand
    assert (
        run_cli(
            "install", "gemini", "--project-dir", project, "--dry-run", "--command", "loopguard"
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "would refuse" in out and '"command": "loopguard hook gemini"' in out
    assert '"name": "x /* not a comment */"' in out
    assert path.read_text() == text


def test_comments_only_where_the_agent_allows_them(tmp_path: Path) -> None:
    path = tmp_path / "p" / ".claude" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text('{\n  // no\n  "a": 1\n}\n')
    with pytest.raises(ins.InstallError, match=r"settings\.json:2:3: not valid JSON"):
        do_install(CLAUDE, tmp_path)


def test_strip_comments_keeps_strings_and_positions() -> None:
    text = '{"a": "//x", /* c\n */ "b": "\\"/*"} // end'
    stripped, where = ins.strip_comments(text)
    assert json.loads(stripped) == {"a": "//x", "b": '"/*'}
    assert where == "1:14" and len(stripped) == len(text) and stripped.count("\n") == 1
    assert ins.strip_comments('{"a": 1}') == ('{"a": 1}', None)


# ---- refusals ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{\n  "hooks": {\n    "PreToolUse": [\n  }\n}', r"settings\.json:4:3: not valid JSON"),
        ("[1, 2]", "holds a JSON array, not an object"),
        ('{"hooks": []}', '"hooks" is a JSON array, not an object'),
        (
            '{"hooks": {"PreToolUse": {"matcher": "*"}}}',
            "hooks.PreToolUse is a JSON object, not an array",
        ),
        ('{"a": 1, "a": 2}', "duplicate key 'a'"),
        (b"\xff\xfe{}", "not UTF-8"),
    ],
)
def test_unreadable_settings_are_never_overwritten(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str | bytes, message: str
) -> None:
    path = tmp_path / "p" / ".claude" / "settings.json"
    path.parent.mkdir(parents=True)
    data = text if isinstance(text, bytes) else text.encode()
    path.write_bytes(data)
    project = str(tmp_path / "p")
    for action in ("install", "uninstall"):
        code = run_cli(action, "claude", "--project-dir", project)
        err = capsys.readouterr().err
        if action == "uninstall" and "hooks.PreToolUse" in message:
            assert code == 0  # uninstall does not judge event lists it would not touch
            continue
        assert code == 2
        assert str(path) in err and len(err.strip().splitlines()) == 1
        assert __import__("re").search(message, err), err
        assert "Traceback" not in err
    assert path.read_bytes() == data and not backups(path)


def test_dry_run_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = tmp_path / "p"
    assert run_cli("install", "copilot", "--project-dir", str(project), "--dry-run") == 0
    out = capsys.readouterr().out
    assert not project.exists()
    assert "dry run" in out and "+++ " in out and '"permissionRequest"' in out

    path = project / ".claude" / "settings.json"
    before = write(path, CLAUDE_SETTINGS)
    assert run_cli("install", "claude", "--project-dir", str(project), "--dry-run") == 0
    out = capsys.readouterr().out
    assert path.read_bytes() == before and not backups(path)
    assert "would back up the old file to" in out and '+    "UserPromptSubmit": [' in out


def test_scope_flags_are_exclusive_and_gemini_flags_only_for_gemini(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = str(tmp_path / "p")
    assert run_cli("install", "claude", "--project", "--user") == 2
    assert run_cli("install", "nope") == 2
    assert (
        run_cli("install", "claude", "--project-dir", project, "--disable-builtin-loop-detection")
        == 2
    )
    assert "Claude Code has no own loop detection" in capsys.readouterr().err
    assert (
        run_cli("uninstall", "cursor", "--project-dir", project, "--restore-builtin-loop-detection")
        == 2
    )
    assert not (tmp_path / "p").exists()


# ---- recognising and fixing loopguard's own entries ----------------------------------------


def test_recognised_by_the_program_name_wherever_it_lives() -> None:
    yes = [
        "loopguard hook claude",
        "/opt/tools/bin/loopguard hook claude --rules r.yaml",
        "'/Users/me/my venv/bin/loopguard' hook claude",
        "LOOPGUARD_RULES=x uvx --from loopguard-engine loopguard hook claude",
        r"C:\Tools\loopguard.exe hook claude",
        "& 'C:\\My Tools\\loopguard.exe' hook claude --event permissionRequest",
    ]
    no = [
        "loopguard hook cursor",
        "loopguard hook install claude",
        "notloopguard hook claude",
        "loopguard claude",
        "./check.sh",
        "'unterminated",
    ]
    for command in yes:
        assert ins.runs_loopguard_hook(command, "claude"), command
    for command in no:
        assert not ins.runs_loopguard_hook(command, "claude"), command
    assert not ins.runs_loopguard_hook(None, "claude")


def test_a_moved_binary_is_updated_in_place_and_duplicates_dropped(tmp_path: Path) -> None:
    path = tmp_path / "p" / ".claude" / "settings.json"
    old = "/old/venv/bin/loopguard hook claude"
    write(
        path,
        {
            "hooks": {
                "PreToolUse": [
                    {
                        "matcher": "Bash",
                        "hooks": [
                            {"type": "command", "command": "./check.sh"},
                            {"type": "command", "command": old, "statusMessage": "guard"},
                        ],
                    },
                    {"matcher": "*", "hooks": [{"type": "command", "command": old}]},
                ]
            }
        },
    )
    report = do_install(CLAUDE, tmp_path)
    assert any("updated PreToolUse: command, timeout" in c and old in c for c in report.changes)
    assert "removed a second loopguard entry of PreToolUse" in report.changes
    groups = json.loads(path.read_text())["hooks"]["PreToolUse"]
    assert groups == [  # the user's matcher and key stay; the emptied group goes
        {
            "matcher": "Bash",
            "hooks": [
                {"type": "command", "command": "./check.sh"},
                {
                    "type": "command",
                    "command": "loopguard hook claude",
                    "statusMessage": "guard",
                    "timeout": 30,
                },
            ],
        },
    ]


def test_command_must_name_loopguard(tmp_path: Path) -> None:
    with pytest.raises(ins.InstallError, match="give only the program"):
        do_install(CLAUDE, tmp_path, command="loopguard hook claude")
    with pytest.raises(ins.InstallError, match="called loopguard"):
        do_install(CLAUDE, tmp_path, command="python -m loopguard.cli")
    assert not (tmp_path / "p").exists()
    report = do_install(CLAUDE, tmp_path, command="uvx --from loopguard-engine loopguard")
    assert report.command == "uvx --from loopguard-engine loopguard hook claude"
    assert (
        do_install(CLAUDE, tmp_path, command="uvx --from loopguard-engine loopguard").changed
        is False
    )


# ---- which program the command names -------------------------------------------------------


def fake_venv(root: Path) -> Path:
    script = root / "bin" / "loopguard"
    script.parent.mkdir(parents=True)
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    return script


def test_plain_word_when_path_finds_the_running_one(tmp_path: Path) -> None:
    script = fake_venv(tmp_path / "venv")
    other = fake_venv(tmp_path / "elsewhere")
    program, why = ins.choose_program(argv0=str(script), path=str(script.parent))
    assert program == "loopguard" and str(script) in why
    # run as `python -m`: argv0 is not loopguard, the environment's bin/ is
    program, _ = ins.choose_program(
        argv0=str(tmp_path / "__main__.py"), prefix=str(tmp_path / "venv"), path=str(script.parent)
    )
    assert program == "loopguard"
    # a different loopguard on PATH, or none: this one's full path
    program, why = ins.choose_program(argv0=str(script), path=str(other.parent))
    assert program == str(script) and str(other) in why and "not this one" in why
    program, why = ins.choose_program(argv0=str(script), path=str(tmp_path / "empty"))
    assert program == str(script) and "no `loopguard` on PATH" in why
    program, why = ins.choose_program(
        argv0=str(tmp_path / "x.py"), prefix=str(tmp_path / "none"), path=str(tmp_path / "empty")
    )
    assert program == "loopguard" and "needs `loopguard` on its PATH" in why


def test_paths_with_spaces_are_quoted_for_each_shell() -> None:
    path = "/Users/me/my venv/bin/loopguard"
    command = ins.hook_command(path, COPILOT, "permissionRequest", key="bash")
    assert shlex.split(command) == [path, "hook", "copilot", "--event", "permissionRequest"]
    powershell = ins.hook_command(
        "C:\\My Tools\\it's\\loopguard.exe", COPILOT, "PreToolUse", key="powershell"
    )
    assert powershell == "& 'C:\\My Tools\\it''s\\loopguard.exe' hook copilot"
    assert ins.hook_command("C:\\Tools\\loopguard.exe", COPILOT, "Stop", key="powershell") == (
        "C:\\Tools\\loopguard.exe hook copilot"
    )
    assert ins.runs_loopguard_hook(command, "copilot") and ins.runs_loopguard_hook(
        powershell, "copilot"
    )


def test_default_command_is_the_running_venv_when_path_lacks_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = fake_venv(tmp_path / "my venv")
    monkeypatch.setattr(sys, "argv", [str(script), "hook", "install"])
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    report = do_install(CLAUDE, tmp_path, command=None)
    entry = loopguard_entries(json.loads(report.path.read_text()), "claude")["Stop"][0][1]
    assert shlex.split(entry["command"]) == [str(script), "hook", "claude"]
    assert "'" in entry["command"]  # the space is quoted
    text = "\n".join(report.lines())
    assert "no `loopguard` on PATH" in text and "--command loopguard" in text
    # on PATH now: a second install rewrites the command to the plain word
    monkeypatch.setenv("PATH", str(script.parent))
    again = do_install(CLAUDE, tmp_path, command=None)
    assert again.command == "loopguard hook claude"
    assert all("updated" in change for change in again.changes)


# ---- the file itself -----------------------------------------------------------------------


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_permissions_are_kept_and_the_backup_is_as_private(tmp_path: Path) -> None:
    path = tmp_path / "p" / ".claude" / "settings.json"
    write(path, {"env": {"API_KEY": "secret"}})
    path.chmod(0o600)
    report = do_install(CLAUDE, tmp_path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert report.backup is not None and stat.S_IMODE(report.backup.stat().st_mode) == 0o600
    assert not list(path.parent.glob("*.loopguard-tmp"))


@pytest.mark.skipif(os.name != "posix", reason="symlinks")
def test_a_symlinked_settings_file_is_written_through_the_link(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "settings.json"
    write(real, {"env": {}})
    link = tmp_path / "h" / ".claude" / "settings.json"
    link.parent.mkdir(parents=True)
    link.symlink_to(real)
    report = do_install(CLAUDE, tmp_path, scope="user")
    assert link.is_symlink() and "hooks" in json.loads(real.read_text())
    assert report.backup is not None and report.backup.parent == real.parent


def test_an_empty_file_counts_as_empty_settings(tmp_path: Path) -> None:
    path = tmp_path / "p" / ".claude" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text("\n")
    report = do_install(CLAUDE, tmp_path)
    assert report.changed and report.backup is not None and report.backup.read_text() == "\n"


class _Terminal:
    """Stands for a terminal on stdin/stdout (the question is asked only on one)."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def isatty(self) -> bool:
        return True

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


@pytest.mark.parametrize(("answer", "switched"), [("y", True), ("", False), ("no", False)])
def test_gemini_asks_on_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answer: str, switched: bool
) -> None:
    asked: list[str] = []
    monkeypatch.setattr(sys, "stdin", _Terminal(sys.stdin))
    monkeypatch.setattr(sys, "stdout", _Terminal(sys.stdout))
    monkeypatch.setattr("builtins.input", lambda prompt: asked.append(prompt) or answer)
    project = str(tmp_path / "p")
    assert run_cli("install", "gemini", "--project-dir", project, "--command", "loopguard") == 0
    assert len(asked) == 1 and "[y/N]" in asked[0] and "model.disableLoopDetection" in asked[0]
    doc = json.loads((tmp_path / "p" / ".gemini" / "settings.json").read_text())
    assert doc.get("model", {}).get("disableLoopDetection", False) is switched
    # asked once: a switch already off is not asked about again, nor with a flag
    run_cli("install", "gemini", "--project-dir", project, "--keep-builtin-loop-detection")
    if switched:
        run_cli("install", "gemini", "--project-dir", project, "--command", "loopguard")
    assert len(asked) == 1
