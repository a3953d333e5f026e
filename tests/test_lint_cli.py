"""`loopguard lint` and `loopguard schema` through the CLI: formats, exit codes, stdin."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

from loopguard.cli import main
from loopguard.config.layers import builtin_names

CLEAN = "version: 1\n"
BROKEN = "version: 1\nturn:\n  max_tool_rouds: 3\n"
WARNS = "version: 1\nkeyword_sets:\n  spare: [a]\n"


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for name, text in (("clean.yaml", CLEAN), ("broken.yaml", BROKEN), ("warns.yaml", WARNS)):
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_clean_file_exits_0_with_a_summary_on_stderr(
    files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "lint", "clean.yaml")
    assert (code, out) == (0, "")
    assert "1 file, 0 errors, 0 warnings" in err


def test_errors_exit_1_with_text_format(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "lint", "broken.yaml")
    assert code == 1
    assert out == (
        "broken.yaml:3:3: error[unknown-key]: unknown key 'max_tool_rouds' (did you mean "
        "'max_tool_rounds'?) [turn.max_tool_rouds]\n"
        "    hint: allowed keys here: max_tool_rounds, max_incomplete_tool_retries, "
        "context_messages, normalize, recall, plan_condition\n"
    )


def test_warnings_pass_unless_strict(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "lint", "warns.yaml")
    assert code == 0 and ": warning[unused-set]: keyword set 'spare' is never used" in out
    assert run(capsys, "lint", "--strict", "warns.yaml")[0] == 1
    assert run(capsys, "lint", "--strict", "clean.yaml")[0] == 0


def test_several_files_in_one_call(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "lint", "clean.yaml", "warns.yaml", "broken.yaml")
    assert code == 1
    assert out.index("warns.yaml:") < out.index("broken.yaml:")
    assert "3 files, 1 error, 1 warning" in err


def test_unreadable_file_exits_2_even_with_other_errors(
    files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "lint", "broken.yaml", "missing.yaml")
    assert code == 2
    assert "missing.yaml:1:1: error[unreadable]: file not found" in out


def test_json_format_is_a_list_of_findings(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "lint", "--format", "json", "broken.yaml", "warns.yaml")
    assert code == 1 and err == ""
    findings = json.loads(out)
    assert isinstance(findings, list) and len(findings) == 2
    for finding in findings:
        assert {"file", "line", "col", "level", "message", "path", "hint"} <= set(finding)
    assert findings[0]["file"] == "broken.yaml" and findings[0]["line"] == 3
    assert findings[0]["path"] == "turn.max_tool_rouds"
    assert json.loads(run(capsys, "lint", "--format", "json", "clean.yaml")[1]) == []


def test_github_format(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "lint", "--format", "github", "broken.yaml", "warns.yaml")
    lines = out.splitlines()
    assert code == 1 and len(lines) == 2
    assert re.match(
        r"^::error file=broken\.yaml,line=3,col=3,title=unknown-key::unknown key 'max_tool_rouds' "
        r"\(did you mean 'max_tool_rounds'\?\) \[turn\.max_tool_rouds\]%0Ahint: ",
        lines[0],
    )
    assert lines[1].startswith("::warning file=warns.yaml,line=3,col=3,title=unused-set::")


def test_stdin_is_read_with_dash(
    files: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(BROKEN.encode())))
    code, out, _ = run(capsys, "lint", "-")
    assert code == 1 and out.startswith("<stdin>:3:3: error[unknown-key]: unknown key")


def test_dash_twice_is_a_usage_error(
    files: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(CLEAN.encode())))
    assert run(capsys, "lint", "-", "-")[0] == 2


@pytest.mark.parametrize(
    "argv", [["lint"], ["lint", "--format", "xml", "a.yaml"], ["lint", "--bogus", "a.yaml"]]
)
def test_usage_errors_exit_2(
    argv: list[str], files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, *argv)[0] == 2


def test_agent_option_selects_one_agent(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (files / "agents.yaml").write_text(
        "version: 1\nagents:\n  a: {loop_detection: {warning_threshold: 25}}\n"
        "  b: {loop_detection: {warning_threshold: 22}}\n",
        encoding="utf-8",
    )
    _, everyone, _ = run(capsys, "lint", "agents.yaml")
    assert "agent 'a'" in everyone and "agent 'b'" in everyone
    code, only_b, _ = run(capsys, "lint", "--agent", "b", "agents.yaml")
    assert code == 0 and "agent 'a'" not in only_b
    assert "raised to 23" in only_b
    _, nobody, _ = run(capsys, "lint", "--agent", "zed", "agents.yaml")
    assert "agent 'zed' has no block under agents" in nobody


def test_bad_input_never_shows_a_traceback(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (files / "bin.yaml").write_bytes(b"\x00\x01\x02\xff")
    (files / "latin.yaml").write_bytes(b"version: 1\n\xe9\n")
    (files / "deep.yaml").write_text("version: 1\nx: " + "{a: " * 3000 + "1" + "}" * 3000)
    code, out, err = run(capsys, "lint", "bin.yaml", "latin.yaml", "deep.yaml", "gone.yaml")
    assert code == 2
    assert "Traceback" not in out + err
    assert "bin.yaml:1:1: error[binary]: binary data" in out
    assert "latin.yaml:2:1: error[encoding]: not valid UTF-8" in out
    assert "deep.yaml:2:" in out and "nesting deeper than" in out
    assert "gone.yaml:1:1: error[unreadable]: file not found" in out


def test_every_bundled_pack_lints_clean(capsys: pytest.CaptureFixture[str]) -> None:
    names = builtin_names()
    assert len(names) >= 2
    code, out, _ = run(capsys, "lint", "--strict", *names)
    assert (code, out) == (0, "")
    folder = resources.files("loopguard.rules")
    paths = [str(p) for p in folder.iterdir() if p.name.endswith(".yaml")]
    assert run(capsys, "lint", "--strict", *paths)[:2] == (0, "")


def test_schema_command_prints_the_assembled_schema(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "schema")
    schema = json.loads(out)
    assert code == 0
    assert schema["$schema"].endswith("2020-12/schema")
    detectors = schema["properties"]["detectors"]
    assert detectors["additionalProperties"] is False
    assert "doom_loop_fuzzy" in detectors["properties"]


CLI = [sys.executable, "-c", "import sys; from loopguard.cli import main; sys.exit(main())"]


@pytest.mark.slow
def test_a_separate_process_lints_bundled_packs_and_reports_bad_input(tmp_path: Path) -> None:
    folder = resources.files("loopguard.rules")
    packs = [str(p) for p in folder.iterdir() if p.name.endswith(".yaml")]
    done = subprocess.run([*CLI, "lint", *packs], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout) == (0, "")
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\nloop_detection: {warning_threshold: 2.5}\n", encoding="utf-8")
    done = subprocess.run(
        [*CLI, "lint", "--format", "json", str(bad)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr
    [finding] = json.loads(done.stdout)
    assert (finding["line"], finding["col"], finding["level"]) == (2, 37, "error")


@pytest.mark.slow
def test_the_console_script_runs_when_installed(tmp_path: Path) -> None:
    script = Path(sys.executable).parent / "loopguard"
    if not script.exists():
        pytest.skip("the loopguard console script is not installed next to this interpreter")
    done = subprocess.run(
        [str(script), "lint", "builtin:default"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and done.stdout == ""


def test_skipped_detectors_are_named_on_stderr(
    files: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A detector registration refused (its options schema is invalid) is a registry fault,
    which the assembly reports: lint and schema name it on stderr."""
    import loopguard.cli.lint_cmd as lint_cmd
    import loopguard.cli.schema_cmd as schema_cmd
    from loopguard.config import schema
    from loopguard.detection.detector import Detector
    from loopguard.detection.plugins import PluginFault, detector_problem, load_registry

    real = load_registry()
    broken = type("Broken", (Detector,), {"id": "broken", "options_schema": {"type": "bogus"}})
    problem = detector_problem(broken(), set()) or ""
    fault = PluginFault("thirdparty[broken]", "schema", problem)
    registry = type("Registry", (), {"entries": real.entries, "faults": (*real.faults, fault)})
    monkeypatch.setattr(schema, "load_registry", lambda: registry)
    assembly = schema.assemble()
    monkeypatch.setattr(lint_cmd, "default_assembly", lambda: assembly)
    monkeypatch.setattr(schema_cmd, "default_assembly", lambda: assembly)
    code, out, err = run(capsys, "lint", "clean.yaml")
    assert (code, out) == (0, "")
    assert (
        "loopguard: warning: thirdparty[broken]: schema failed: detector 'broken': "
        "invalid options schema" in err
    )
    code, out, err = run(capsys, "schema")
    assert code == 0 and "broken" not in json.loads(out)["properties"]["detectors"]["properties"]
    assert "thirdparty[broken]" in err
