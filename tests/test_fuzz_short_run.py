"""A short, deterministic run of every fuzz target (issue 22): the stored state (codec and the
SQLite/Redis record reading), the hook event reader, the rules parsers and the transcript
readers. Each gets its seeds and a fixed number of inputs mutated from them by fuzz/mutate.py
with a fixed seed, so a run is the same everywhere; a failing input is written to
$LOOPGUARD_ARTIFACTS (else the test's temporary folder) and shown. Longer runs: see the
docstring of fuzz/mutate.py, or each target under atheris.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

FUZZ = Path(__file__).resolve().parents[1] / "fuzz"
sys.path.insert(0, str(FUZZ))
import mutate  # noqa: E402  (fuzz/mutate.py)

pytestmark = pytest.mark.slow  # a fuzz search (~4 s): the whole suite's, not the inner loop's

SEED = 20261202
# inputs per target beyond its seeds: about 2 s each on a busy 2-core machine
RUNS = {"state": 2500, "hooks": 4000, "rules": 150, "transcripts": 30}


@pytest.mark.parametrize("name", sorted(RUNS))
def test_a_short_fuzz_run_finds_nothing(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    seeds = mutate.load(name).seeds()
    try:
        count = mutate.run(name, RUNS[name], SEED)
    except mutate.Crash as crash:
        folder = Path(os.environ.get("LOOPGUARD_ARTIFACTS") or tmp_path)
        folder.mkdir(parents=True, exist_ok=True)
        kept = folder / f"fuzz-crash-{name}-{crash.index}"
        kept.write_bytes(crash.data)
        pytest.fail(
            f"{crash}\n  kept in {kept}\n  again: python fuzz/mutate.py {name} --seed {SEED}"
        )
    assert count == len(seeds) + RUNS[name]


def test_the_inputs_are_the_same_for_one_seed() -> None:
    seeds = [b'{"a": [1, "x", null]}', b"\x01LGS\x01\x00[]"]
    first = list(mutate.inputs(seeds, 200, 7))
    assert first != list(mutate.inputs(seeds, 2_000, 8))
    # ...whatever ran before: no input may change what later ones are made of (the shared
    # odd constants are copied into a document, never mutated where they are kept)
    assert first == list(mutate.inputs(seeds, 200, 7))
    assert len(set(first)) > 150  # they differ from one another


def test_a_failing_property_is_reported_with_its_input() -> None:
    def picky(data: bytes) -> None:
        if b"null" not in data:
            raise ValueError("no null")

    with pytest.raises(mutate.Crash) as caught:
        mutate.run("hooks", 50, 3, target=picky)
    assert caught.value.target == "hooks" and b"null" not in caught.value.data
    assert "ValueError: no null" in str(caught.value)
