"""ANSI colour of `lint`, `replay` and `explain` text: a terminal only, `NO_COLOR`, `--color`."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from loopguard.cli import main
from loopguard.cli.colour import Painter, paint_config, paint_detectors, paint_finding, wanted

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "transcripts"
POLL = str(EXAMPLES / "stuck-poll.anthropic.json")
RULES = str(EXAMPLES / "loop-detection.yaml")
BAD = str(Path(__file__).resolve().parent / "lint_cases" / "invalid" / "threshold_order.yaml")
REPAIR = str(Path(__file__).resolve().parent / "lint_cases" / "invalid" / "agent_repair.yaml")
ANSI = re.compile(r"\033\[[0-9;]*m")

COMMANDS = [
    ["lint", BAD],
    ["replay", "--rules", RULES, POLL],
    ["explain", "--rules", RULES, POLL, "-d", "4"],
    ["config", "--rules", REPAIR, "--agent", "careful"],
    ["detectors"],
    ["detectors", "--rules", RULES],
]


class Terminal(io.StringIO):
    """A stdout that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def output(monkeypatch: pytest.MonkeyPatch, argv: list[str], tty: bool) -> str:
    out = Terminal() if tty else io.StringIO()
    monkeypatch.setattr("sys.stdout", out)
    monkeypatch.setattr("sys.stderr", io.StringIO())
    main(argv)
    return out.getvalue()


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda a: "-".join(a[:2]))
def test_colour_on_a_terminal_only(monkeypatch: pytest.MonkeyPatch, argv: list[str]) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    plain = output(monkeypatch, argv, tty=False)
    coloured = output(monkeypatch, argv, tty=True)
    assert not ANSI.search(plain) and ANSI.search(coloured)
    assert ANSI.sub("", coloured) == plain  # colour never changes the text


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda a: "-".join(a[:2]))
def test_no_color_and_color_never_turn_it_off(
    monkeypatch: pytest.MonkeyPatch, argv: list[str]
) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    assert not ANSI.search(output(monkeypatch, argv, tty=True))
    monkeypatch.delenv("NO_COLOR")
    assert not ANSI.search(output(monkeypatch, [*argv, "--color", "never"], tty=True))


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda a: "-".join(a[:2]))
def test_color_always_wins_over_a_pipe_and_no_color(
    monkeypatch: pytest.MonkeyPatch, argv: list[str]
) -> None:
    monkeypatch.setenv("NO_COLOR", "yes")
    assert ANSI.search(output(monkeypatch, [*argv, "--color", "always"], tty=False))


def test_empty_no_color_does_not_count(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "")
    assert wanted("auto", Terminal()) and not wanted("auto", io.StringIO())


def test_machine_formats_are_never_coloured(monkeypatch: pytest.MonkeyPatch) -> None:
    for argv in (
        ["lint", BAD, "--format", "json"],
        ["replay", "--rules", RULES, POLL, "--format", "json"],
        ["explain", "--rules", RULES, POLL, "-d", "4", "--format", "json"],
        ["config", "--rules", REPAIR, "--format", "json"],
        ["detectors", "--format", "json"],
        ["detectors", "--rules", RULES, "--format", "json"],
    ):
        assert not ANSI.search(output(monkeypatch, [*argv, "--color", "always"], tty=True))


def test_lint_colours_level_position_and_hint() -> None:
    line = paint_finding("a.yaml:4:23: error: bad [x.y]")
    assert line == "\033[1ma.yaml:4:23\033[0m: \033[1m\033[31merror\033[0m: bad [x.y]"
    assert paint_finding("    hint: fix it") == "    \033[36mhint:\033[0m fix it"


def test_lint_code_is_dim_after_the_level() -> None:
    line = paint_finding("a.yaml:1:2: warning[unused-set]: x")
    assert line == (
        "\033[1ma.yaml:1:2\033[0m: \033[1m\033[33mwarning\033[0m\033[2m[unused-set]\033[0m: x"
    )


def test_config_colours_header_keys_and_provenance() -> None:
    assert (
        paint_config("# effective rules of r.yaml") == "\033[1m# effective rules of r.yaml\033[0m"
    )
    assert (
        paint_config("  window: 8   # from r.yaml:3")
        == "  \033[36mwindow:\033[0m 8\033[2m   # from r.yaml:3\033[0m"
    )
    assert (
        paint_config("  critical_threshold: 26  # repaired (was 20)")
        == "  \033[36mcritical_threshold:\033[0m 26\033[33m  # repaired (was 20)\033[0m"
    )
    assert paint_config("loop_detection:") == "\033[36mloop_detection:\033[0m"


def test_detectors_colours_on_off_ids_and_faults() -> None:
    assert paint_detectors("  ping_pong  off (own switch; rolling)  # switch from r.yaml:3") == (
        "  ping_pong  \033[31moff\033[0m (own switch; rolling)"
        "\033[2m  # switch from r.yaml:3\033[0m"
    )
    assert (
        paint_detectors("  cycle  on (own switch; always)")
        == "  cycle  \033[32mon\033[0m (own switch; always)"
    )
    assert (
        paint_detectors("cycle  (built-in: loopguard-engine[cycle])")
        == "\033[1mcycle\033[0m\033[2m  (built-in: loopguard-engine[cycle])\033[0m"
    )
    assert paint_detectors("faults:") == "\033[1m\033[31mfaults:\033[0m"
    assert paint_detectors("  options: none") == "  options: none"


def test_painter_paints_whole_lines_across_writes() -> None:
    out = io.StringIO()
    painter = Painter(out, str.upper)
    painter.write("ab")
    painter.write("c\nd")
    assert out.getvalue() == "ABC\n"
    painter.flush()
    assert out.getvalue() == "ABC\nD"


def test_bad_color_value_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lint", BAD, "--color", "rainbow"]) == 2
    assert "Traceback" not in capsys.readouterr().err
