"""Codes of the loading stages: reading, syntax, `version`, the schema, `extends:`, references.

These findings come from the loader itself (`rulestext`, `yamlsource`,
`json5source`, `openclaw`, `layers`, `validate`, `lintchecks.load_checks`), not
from a separate check function. An error here means the file does not load,
so it cannot be disabled; the warnings (`openclaw-ignored`) can.
"""

from __future__ import annotations

from loopguard.lint.checks.record import LintCheck


def _code(code: str, level: str, stage: str, doc: str) -> LintCheck:
    return LintCheck(code, level, doc, None, True, stage)


STAGE_CODES = (
    _code(
        "unreadable",
        "error",
        "read",
        "The file cannot be read (missing, a directory, no "
        "permission) or `builtin:NAME` names no bundled pack.\n\nFails: "
        "`loopguard lint missing.yaml`.",
    ),
    _code(
        "too-large",
        "error",
        "read",
        "The file is larger than a rules file can be (1 MiB).\n\n"
        "Fails: a 5 MiB log passed by mistake.",
    ),
    _code(
        "encoding",
        "error",
        "read",
        "The file is not UTF-8 (UTF-16, or invalid bytes).\n\n"
        "Fails: a file saved as UTF-16 by an editor.",
    ),
    _code(
        "binary",
        "error",
        "read",
        "The file holds a NUL byte: binary data, not text.\n\nFails: a gzipped file.",
    ),
    _code("yaml-syntax", "error", "syntax", "The YAML does not parse.\n\nFails: `turn: {a: 1`."),
    _code(
        "json5-syntax",
        "error",
        "syntax",
        "The JSON5 (OpenClaw) file does not parse.\n\n"
        "Fails: `{tools: {loopDetection: {enabled: true,}`.",
    ),
    _code(
        "multiple-documents",
        "error",
        "syntax",
        "More than one YAML document (`---`) or "
        "top-level JSON5 value.\n\nFails: `version: 1\\n---\\nversion: 1`.",
    ),
    _code(
        "duplicate-key",
        "error",
        "syntax",
        "A key written twice in one mapping (YAML would "
        "silently keep the last one).\n\nFails: "
        "`turn: {max_tool_rounds: 3, max_tool_rounds: 4}`.",
    ),
    _code(
        "key-type",
        "error",
        "syntax",
        "A mapping key that is not a string.\n\nFails: `agents: {1: {}}` (quote it: `'1'`).",
    ),
    _code(
        "yaml-tag",
        "error",
        "syntax",
        "An explicit YAML tag (`!!python/...`, `!custom`).\n\nFails: `version: !!int 1`.",
    ),
    _code(
        "yaml-alias",
        "error",
        "syntax",
        "An undefined, recursive or key alias.\n\nFails: `turn: *missing`.",
    ),
    _code(
        "yaml-merge",
        "error",
        "syntax",
        "A merge key (`<<`) whose value is not a mapping.\n\nFails: `turn: {<<: 3}`.",
    ),
    _code(
        "alias-bomb",
        "error",
        "syntax",
        "Aliases expand to too many values (a billion-laughs "
        "file).\n\nFails: nine levels of `[*a, *a, *a, ...]`.",
    ),
    _code(
        "too-deep",
        "error",
        "syntax",
        "Nesting deeper than a rules file ever needs.\n\nFails: `[[[[[[...]]]]]]` 200 levels deep.",
    ),
    _code(
        "empty",
        "error",
        "root",
        "An empty file, list or string where something is needed.\n\n"
        "Fails: a file with only comments; `exempt: []` where a list must not be empty.",
    ),
    _code(
        "not-a-mapping",
        "error",
        "root",
        "The document is not a mapping of keys to values.\n\nFails: `- version: 1`.",
    ),
    _code(
        "version",
        "error",
        "root",
        "`version` is missing, not 1, or newer than this loopguard.\n\nFails: `version: 2`.",
    ),
    _code(
        "unknown-key",
        "error",
        "schema",
        "A key the schema does not know (with a did-you-mean)."
        "\n\nFails: `loop_detection: {warning_treshold: 5}`.",
    ),
    _code(
        "unknown-detector",
        "error",
        "schema",
        "A detector id no installed plugin provides, "
        "under `detectors:` or in `aggregator.order`.\n\nFails: `detectors: {ping_pang: {}}`.",
    ),
    _code(
        "required",
        "error",
        "schema",
        "A required key is missing.\n\nFails: an intent without `require: {tool: ...}`.",
    ),
    _code(
        "type",
        "error",
        "schema",
        "A value of the wrong type (integers are strict: `10.0` and "
        "`true` are not thresholds).\n\nFails: `loop_detection: {history_size: '30'}`.",
    ),
    _code(
        "range",
        "error",
        "schema",
        "A number outside its allowed range.\n\nFails: `loop_detection: {warning_threshold: -3}`.",
    ),
    _code(
        "enum",
        "error",
        "schema",
        "A value that is not one of the allowed words.\n\nFails: `turn: {normalize: [lowercase]}`.",
    ),
    _code(
        "condition",
        "error",
        "schema",
        "A condition mapping without exactly one operator.\n\nFails: `when: {}`.",
    ),
    _code(
        "too-long",
        "error",
        "schema",
        "A string longer than its limit.\n\nFails: a 600-character regex.",
    ),
    _code(
        "pattern",
        "error",
        "schema",
        "A string that does not have the required shape.\n\n"
        "Fails: a language code `EN-us` under `messages`.",
    ),
    _code(
        "schema",
        "error",
        "schema",
        "Any other schema violation (the schema words the message)."
        "\n\nFails: `store: {path: a.db, url: redis://x}` (exactly one of path/url).",
    ),
    _code(
        "bad-regex",
        "error",
        "references",
        "A regular expression that does not compile with "
        "the `regex` package, or is longer than 500 characters.\n\nFails: "
        "`unknown_tool_repeat: {patterns: ['(unclosed']}`.",
    ),
    _code(
        "regex-too-complex",
        "error",
        "schema",
        "A regular expression whose compiled size "
        "would exceed the budget (nested counted repeats; docs/limits.md), refused before "
        "compiling.\n\nFails: `patterns: ['(?:(?:(?:a{1000}){1000}){1000})']`.",
    ),
    _code(
        "template",
        "error",
        "references",
        "A message template with an unknown field, a "
        "format spec, a conversion, attribute access or a lone brace (templates are plain "
        "`{name}` substitution).\n\nFails: `blocked: '{message:>2000000000}'`.",
    ),
    _code(
        "cycle",
        "error",
        "syntax",
        "A mapping given to `Guard.from_dict` that contains "
        "itself.\n\nFails: `d = {'version': 1}; d['x'] = d`.",
    ),
    _code(
        "undefined-set",
        "error",
        "references",
        "A condition names a keyword set that is not "
        "defined.\n\nFails: `when: {text_contains: portfolio_veiw}` (did you mean "
        "'portfolio_view'?).",
    ),
    _code(
        "extends",
        "error",
        "extends",
        "An `extends:` entry that cannot be loaded (unknown "
        "pack, missing file, too deep).\n\nFails: `extends: [builtin:nope]`.",
    ),
    _code(
        "extends-cycle",
        "error",
        "extends",
        "`extends:` entries that include each other.\n\n"
        "Fails: a.yaml extends b.yaml, which extends a.yaml.",
    ),
    _code(
        "store-path",
        "error",
        "extends",
        "`store.path` outside the rules file's folder tree (absolute, `~`, `../`, or a "
        "symbolic link out), confined like `extends:` (`--allow-extends-outside` allows both)."
        "\n\nFails: `store: {path: ../../elsewhere/state.db}`.",
    ),
    _code(
        "openclaw-agent",
        "error",
        "schema",
        "An OpenClaw `agents.list` entry without an `id`."
        "\n\nFails: `agents: {list: [{tools: {}}]}`.",
    ),
    _code(
        "duplicate-agent",
        "error",
        "schema",
        "An OpenClaw agent listed twice.\n\nFails: two entries with `id: ops`.",
    ),
    _code(
        "openclaw-ignored",
        "warning",
        "schema",
        "An OpenClaw key loopguard does not read "
        "(only loop-detection settings are).\n\nWarns: `tools: {exec: {...}}`.",
    ),
    _code(
        "openclaw-conflict",
        "warning",
        "schema",
        "An OpenClaw block inside a native rules file sets a value its native keys "
        "set differently; the native key wins.\n\nWarns: `loop_detection: "
        "{warning_threshold: 8}` and `tools: {loopDetection: {warningThreshold: 10}}`.",
    ),
)

LINT_CODES = (
    _code(
        "bad-directive",
        "warning",
        "directives",
        "An ignore comment "
        "(`# loopguard: disable=...`) "
        "naming an unknown code, a load error, or nothing, a file-wide `disable=` after "
        "content, or a `# loopguard:` comment that is not understood (`disable-next-line=`, "
        "`disabel=`, no `=`).\n\nWarns: `# loopguard: disable=unused-sets` (did you mean "
        "unused-set?), `# loopguard: disable-line CODE` (it silences nothing).",
    ),
    _code(
        "check-failed",
        "warning",
        "meaning",
        "A lint check (usually a plugin's) raised an "
        "exception; the others still ran.\n\nWarns: a plugin check with a bug.",
    ),
)
