"""`loopguard config` (effective rules with provenance, text and JSON) and
`loopguard detectors --rules` (which detectors are on, and why)."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Any

import pytest

from loopguard.cli import main
from loopguard.cli.config_cmd import dotted, flow
from loopguard.cli.detectors_status import explain_active
from loopguard.config.layers import load
from loopguard.config.source import effective_config, load_yaml
from loopguard.detection.detector import ALWAYS, ROLLING, UNLESS_DISABLED
from loopguard.policy.compile import is_active

BASE = "version: 1\nloop_detection:\n  warning_threshold: 12\n"
RULES = """version: 1
extends: [builtin:portfolio, base.yaml]
loop_detection:
  enabled: true
  critical_threshold: 22
detectors:
  ping_pong: {enabled: false}
agents:
  careful:
    loop_detection: {warning_threshold: 25}
    detectors:
      generic_repeat: {enabled: false}
"""
OPENCLAW = """{
  tools: {
    loopDetection: {
      enabled: false, // master
      warningThreshold: 10,
      detectors: { pingPong: true, },
    },
  },
}
{ agents: { list: [ { id: "safe-runner", tools: { loopDetection: { enabled: true } } } ] } }
"""


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def rules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "base.yaml").write_text(BASE, encoding="utf-8")
    (tmp_path / "rules.yaml").write_text(RULES, encoding="utf-8")
    (tmp_path / "oc.json5").write_text(OPENCLAW, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def comments(out: str) -> dict[str, str]:
    """`key: value  # from X` lines of the text output -> {line before the comment: X}."""
    found = {}
    for line in out.splitlines():
        match = re.match(r"^(\s*\S.*?)\s+# (from (\S+)|repaired \(.*\))$", line)
        if match:
            found[match.group(1)] = match.group(3) or match.group(2)
    return found


# -- loopguard config: text ------------------------------------------------------


def test_default_text_reads_back_as_the_effective_rules(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "config")
    assert (code, err) == (0, "")
    assert out.splitlines()[0] == "# effective rules of builtin:default"
    expected, _ = effective_config(load("builtin:default").data)
    assert load_yaml(out, "out").data == expected
    default = (Path(__file__).parents[1] / "rules" / "default.yaml").read_text("utf-8").splitlines()
    leaves = [line for line in out.splitlines() if "# from " in line]
    assert len(leaves) > 50
    schema_defaults = 0
    for line in leaves:  # each leaf points at the line of builtin:default that wrote it, or
        source = line.rsplit("# from ", 1)[1]  # at the options schemas (detector options)
        if source == "options schema":
            schema_defaults += 1
            continue
        name, _, number = source.rpartition(":")
        key = line.strip().lstrip("- ").split(":", 1)[0].strip('"')
        assert name == "builtin:default" and key in default[int(number) - 1], line
    assert schema_defaults > 20


def test_layers_agent_and_repair_are_credited_in_text(
    rules: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "config", "--rules", "rules.yaml", "--agent", "careful")
    assert code == 0
    assert out.splitlines()[0] == "# effective rules of rules.yaml for agent careful"
    shown = comments(out)
    default = (Path(__file__).parents[1] / "rules" / "default.yaml").read_text("utf-8").splitlines()
    written = 1 + next(i for i, line in enumerate(default) if line.startswith("  history_size:"))
    assert shown["  history_size: 30"] == f"builtin:default:{written}"
    assert shown["  warning_threshold: 25"] == "rules.yaml:10"  # the agent's block
    assert shown["  critical_threshold: 26"] == "repaired (was 22 from rules.yaml:5)"
    assert shown["  enabled: true"] == "rules.yaml:4"
    assert "  ping_pong:\n    enabled: false" in out
    assert re.search(r"- id: \S+ +# from builtin:portfolio:\d+", out)
    data = load_yaml(out, "out").data
    assert data["detectors"]["generic_repeat"] == {"enabled": False}
    assert "agents" not in data


def test_without_an_agent_the_global_blocks_are_shown(
    rules: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "config", "--rules", "rules.yaml")
    assert code == 0
    shown = comments(out)
    assert shown["  warning_threshold: 12"] == "base.yaml:3"
    assert shown["  critical_threshold: 22"] == "rules.yaml:5"
    assert "repaired" not in out


def test_openclaw_values_point_into_the_json5_text(
    rules: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(
        capsys, "config", "--rules", "oc.json5", "--format", "json", "--agent", "safe-runner"
    )
    assert code == 0
    sources = json.loads(out)["sources"]
    assert sources["loop_detection.warning_threshold"] == "oc.json5:5"
    assert sources["loop_detection.enabled"] == "oc.json5:10"
    assert sources["detectors.ping_pong.enabled"] == "oc.json5:6"


# -- loopguard config: JSON ------------------------------------------------------


def test_json_has_the_config_and_a_parallel_sources_map(
    rules: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(
        capsys, "config", "--rules", "rules.yaml", "--agent", "careful", "--format", "json"
    )
    assert code == 0
    result = json.loads(out)
    assert (result["rules"], result["agent"]) == ("rules.yaml", "careful")
    expected, _ = effective_config(load(rules / "rules.yaml").data, "careful")
    assert result["config"] == expected
    sources = result["sources"]
    assert sources["loop_detection.critical_threshold"] == "repaired"
    assert sources["loop_detection.warning_threshold"] == "rules.yaml:10"
    assert sources["detectors.generic_repeat.enabled"] == "rules.yaml:12"
    assert sources["detectors.ping_pong.enabled"] == "rules.yaml:7"
    assert sources["detectors.doom_loop_exact.exempt"] == "options schema"
    assert sources["intents[0].id"].startswith("builtin:portfolio:")
    assert result["repairs"] == [
        {"path": "loop_detection.critical_threshold", "old": 22, "new": 26, "from": "rules.yaml:5"}
    ]


def test_json_sources_name_exactly_the_leaves(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "config", "--format", "json", "--rules", "builtin:portfolio-en")
    assert code == 0
    result = json.loads(out)
    assert all(
        re.fullmatch(r"builtin:portfolio(-en)?:\d+|builtin:default:\d+|options schema", s)
        for s in result["sources"].values()
    )

    def resolve(data: Any, path: str) -> Any:
        for step in re.findall(r"\[(\d+)\]|([^.\[\]]+)", path):
            data = data[int(step[0])] if step[0] else data[step[1]]
        return data

    for path in result["sources"]:
        assert (
            not isinstance(resolve(result["config"], path), dict)
            or resolve(result["config"], path) == {}
        )


# -- loopguard config: bad input -------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--rules", "missing.yaml"), "loopguard config: missing.yaml: file not found"),
        (("--rules", "."), "loopguard config: .: is a directory, not a rules file"),
        (("--rules", "builtin:nope"), "loopguard config: builtin:nope: unknown bundled pack"),
        (
            ("--rules", "bad.yaml"),
            "loopguard config: bad.yaml: invalid rules (1 error; see `loopguard lint bad.yaml`)",
        ),
        (
            ("--rules", "rules.yaml", "--agent", "nobody"),
            "loopguard config: rules.yaml: no agent 'nobody' (agents with a block: careful)",
        ),
        (
            ("--agent", "nobody"),
            "loopguard config: builtin:default: no agent 'nobody' (agents with a block: none)",
        ),
    ],
)
def test_bad_input_is_a_clear_error_and_exit_2(
    rules: Path, capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], message: str
) -> None:
    (rules / "bad.yaml").write_text("version: 1\nloop_detection: {warning_treshold: 3}\n", "utf-8")
    code, out, err = run(capsys, "config", *argv)
    assert (code, out) == (2, "")
    assert message in err and "Traceback" not in err
    if "invalid" in message:
        assert "bad.yaml:2:18: error: unknown key 'warning_treshold'" in err


# -- loopguard detectors --rules -------------------------------------------------


def status_lines(out: str) -> dict[str, str]:
    return {line.split()[0]: line.split(None, 1)[1] for line in out.splitlines()[1:-1]}


def test_detectors_of_the_default_rules(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "detectors", "--rules", "builtin:default")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "detectors of builtin:default; loop_detection.enabled: unset"
    status = status_lines(out)
    assert status["generic_repeat"] == "off (loop_detection.enabled is unset; rolling)"
    assert re.fullmatch(
        r"on \(own switch; always\)  # switch from builtin:default:\d+", status["doom_loop_exact"]
    )
    assert status["post_compaction_guard"].startswith("on (own switch; unless_disabled)")
    assert lines[-1] == "4 of 9 detectors on"


def test_detectors_with_the_master_off_and_an_agent_turning_it_on(
    rules: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "detectors", "--rules", "oc.json5")
    assert code == 0
    assert (
        out.splitlines()[0]
        == "detectors of oc.json5; loop_detection.enabled: false (from oc.json5:4)"
    )
    status = status_lines(out)
    assert status["ping_pong"] == (
        "off (loop_detection.enabled is false, over its own switch; "
        "rolling)  # switch from oc.json5:6"
    )
    assert status["generic_repeat"] == "off (loop_detection.enabled is false; rolling)"
    assert status["post_compaction_guard"].startswith(
        "off (loop_detection.enabled is false, over its own switch; unless_disabled)"
    )
    code, out, _ = run(
        capsys, "detectors", "--rules", "oc.json5", "--agent", "safe-runner", "--format", "json"
    )
    assert code == 0
    result = json.loads(out)
    assert result["master"] == {
        "path": "loop_detection.enabled",
        "value": True,
        "from": "oc.json5:10",
    }
    by_id = {item["id"]: item for item in result["detectors"]}
    assert by_id["generic_repeat"]["status"] == "on (loop_detection.enabled is true; rolling)"
    assert (
        by_id["ping_pong"]["on"],
        by_id["ping_pong"]["why"],
        by_id["ping_pong"]["switch_from"],
    ) == (True, "own switch", "oc.json5:6")


def test_detectors_agent_block_switches_one_off(
    rules: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "detectors", "--rules", "rules.yaml", "--agent", "careful")
    assert code == 0
    status = status_lines(out)
    assert status["generic_repeat"] == "off (own switch; rolling)  # switch from rules.yaml:12"
    assert status["known_poll_no_progress"] == "on (loop_detection.enabled is true; rolling)"


@pytest.mark.parametrize(
    "argv",
    [("--rules", "missing.yaml"), ("--rules", "rules.yaml", "--agent", "x"), ("--agent", "x")],
)
def test_detectors_bad_rules_exit_2(
    rules: Path, capsys: pytest.CaptureFixture[str], argv: tuple[str, ...]
) -> None:
    code, out, err = run(capsys, "detectors", *argv)
    assert (code, out) == (2, "")
    assert err.startswith("loopguard detectors: ") and "Traceback" not in err


@pytest.mark.parametrize(
    ("gating", "own", "master"),
    list(
        itertools.product(
            (ROLLING, UNLESS_DISABLED, ALWAYS), (None, True, False, "yes"), (None, True, False)
        )
    ),
)
def test_explain_active_agrees_with_the_engine(gating: str, own: Any, master: Any) -> None:
    class Fake:
        pass

    detector: Any = Fake()
    detector.gating = gating
    options = {} if own is None else {"enabled": own}
    assert explain_active(gating, options, master)[0] == is_active(detector, options, master)


# -- text helpers ----------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        "plain",
        "yes",
        "No",
        "1",
        "0x1f",
        "",
        " pad",
        "a: b",
        "# x",
        "退款",
        "line\nbreak",
        r"\s+(?P<n>x)",
        "it's",
        1.5,
        float("inf"),
        None,
        True,
        [],
        {},
        ["a", "b c", 3],
    ],
)
def test_flow_reads_back_as_the_same_value(value: Any) -> None:
    assert load_yaml(f"k: {flow(value)}\n", "t").data == {"k": value}


def test_dotted_paths_quote_keys_that_are_not_names() -> None:
    assert dotted(("outcomes", "tools", "a.b", "drop")) == 'outcomes.tools["a.b"].drop'
    assert dotted(("intents", 0, "when", "all", 1)) == "intents[0].when.all[1]"
