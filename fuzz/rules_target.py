"""atheris harness for the rules parsers and loader (issue #10).

    python fuzz/rules_target.py yaml  fuzz/corpus-yaml  -max_total_time=600
    python fuzz/rules_target.py json5 fuzz/corpus-json5 -max_total_time=600
    python fuzz/rules_target.py mapping fuzz/corpus-yaml -max_total_time=600

Each input is a rules file's bytes (`yaml`, `json5`: read, decoded, parsed, validated,
layered and checked as `loopguard lint` does) or, for `mapping`, the value a YAML
parse of it gives handed to `Guard.from_dict`. The property: loading either succeeds
or reports findings that carry a position and print as UTF-8; anything raised other
than `RulesError` (from the `load_*` functions) is a crash. Seeds: the bundled packs
and the lint golden cases (`fuzz/seed.py` writes them into the corpus folder).
"""

from __future__ import annotations

import sys
from pathlib import Path

try:
    import atheris
except ImportError:  # fuzz/mutate.py (the suite's short run) needs no atheris
    atheris = None

if atheris is not None:
    with atheris.instrument_imports(include=["loopguard"]):
        import loopguard
        from loopguard.config.layers import analyze, load
        from loopguard.errors import RulesError
else:
    import loopguard
    from loopguard.config.layers import analyze, load
    from loopguard.errors import RulesError

import yaml

NAMES = {"yaml": "fuzz.yaml", "json5": "fuzz.json5", "mapping": "fuzz.yaml"}


def _check(findings: list) -> None:
    for finding in findings:
        assert finding.line >= 0 and finding.col >= 0, finding
        finding.format_text().encode("utf-8")


def target(kind: str, data: bytes) -> None:
    if kind == "mapping":
        try:
            value = yaml.safe_load(data.decode("utf-8", "replace"))
        except (yaml.YAMLError, ValueError, RecursionError):
            return
        if not isinstance(value, dict):
            return
        value.setdefault("version", 1)
        try:
            load(value, "mapping")
        except RulesError as exc:
            _check(exc.findings)
        return
    result = analyze(data, "bytes", NAMES[kind], "/nonexistent-fuzz-dir")
    _check(result.findings)
    if not result.errors:
        assert result.data is not None
        # The `store:` block opens a Redis/SQLite store: not a parser's business (and the
        # fuzzer must not create files or connect anywhere), so it is left out here.
        data = {k: v for k, v in result.data.items() if k != "store"}
        loopguard.Guard(data).session("s").before_call("t", {"a": 1})


KINDS = tuple(NAMES)


def one(data: bytes) -> None:
    """`target` for fuzz/mutate.py: the first byte picks the kind, the rest is the file."""
    if data:
        target(KINDS[data[0] % len(KINDS)], data[1:])


def seeds() -> list[bytes]:
    """The bundled packs and the lint golden cases (what fuzz/seed.py writes), each kind."""
    root = Path(__file__).resolve().parent.parent
    sources = [
        *sorted(root.glob("rules/*.yaml")),
        *sorted(root.glob("tests/lint_cases/**/*.yaml")),
        *sorted(root.glob("tests/lint_cases/**/*.json5")),
    ]
    out = []
    for path in sources:
        kind = KINDS.index("json5") if path.suffix == ".json5" else KINDS.index("yaml")
        out.append(bytes([kind]) + path.read_bytes())
        if path.suffix == ".yaml":
            out.append(bytes([KINDS.index("mapping")]) + path.read_bytes())
    return out


def main() -> None:
    if atheris is None:
        raise SystemExit("pip install atheris first (or run: python fuzz/mutate.py rules)")
    kind = sys.argv.pop(1) if len(sys.argv) > 1 and sys.argv[1] in NAMES else "yaml"
    atheris.Setup(sys.argv, lambda data: target(kind, data))
    atheris.Fuzz()


if __name__ == "__main__":
    main()
