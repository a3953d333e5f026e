"""What a call can do to the world: could it have changed the outcome of a later repeat?

A repeated call is a loop only when nothing between its occurrences could have changed
what it returns. Look-ups cannot (reads, searches, listings, `get_`/`find_`/`list_`-style
tools, `think`, read-only shell commands); edits, writes, installs, configuration changes,
state-changing tools and a user who reports a change can. `Effects` classifies one call
from its tool name and arguments, in time proportional to the call:

1. the rules' own lists (`read_only_tools`, `changing_tools`: exact tool names) decide first;
2. a shell tool (`bash`, `run_shell_command`, `execute_command`, …) is classified by its
   command line: read-only when every command of it is a look-up (`ls`, `cat`, `grep`,
   `git status`, `pip show`, SWE-agent's `open`/`search_dir`/`find_file`, …) and nothing is
   written by redirection; anything else (running code, `cd`, `export`, installs) changes;
3. an editor tool whose `command`/`action` argument is one word (`str_replace_editor`
   `view` vs `str_replace`) is classified by that word;
4. otherwise the first verb in the tool's name (`get_order`, `searchFlights`, `Read`,
   `mcp__github__list_issues`; `book_…`, `cancel_…`, `Edit`, `Write`, `transfer_…`).

A tool nothing is known about counts as changing: a guard that stops healthy runs is
worse than none. Free-text fields that only describe a call (`description`, `reason`, …)
are left out of its identity (`core_digest`), so a reworded description does not make a
call new; amounts and dates written another way count as one value, and so does the free
text of a call that acts (a reworded summary).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping
from typing import Any

import ahocorasick_rs

from loopguard.state.fingerprint import args_digest, canonical_text
from loopguard.state.history import UNREAD  # a first occurrence the engine has not read

__all__ = [
    "FILE",
    "MISSING",
    "MOVE",
    "NAVIGATE",
    "QUIET",
    "UNREAD",
    "VIEWED",
    "Effects",
    "FailureReader",
    "missing_program",
    "named_verbs",
    "old_text_missing",
    "replaced_text_key",
    "reports_change",
]

QUIET = 1  # the call cannot have changed anything another call observes
MOVE = 2  # a relative move (`cd ..`): its repeats go somewhere new each time
FILE = 4  # it changes files or records, never the environment (programs, PATH, variables)
MISSING = 16  # (a failure) the program it runs is missing: `javac: command not found`
NAVIGATE = 32  # it only moves an editor's view (SWE-agent's `open`, `goto`, `scroll_down`)
VIEWED = 64  # what it sees depends on the editor's view (`scroll_down`, `search_file term`)
_DECLARED = 8  # (cache) the rules declared the tool: no argument overrides it

# Verbs of tools that look things up. A name's first verb decides (`get_status`, `listFiles`).
READ_VERBS = frozenset(
    """get read view show list ls search find grep glob lookup look query fetch retrieve
    check inspect describe count calculate compute think cat head tail open goto browse
    visit scroll peek preview explain summarize recall lookup stat info diff
    validate verify estimate locate tree""".split()
)
# Verbs of tools that change something. `set`, `run` and `execute` run or change things.
CHANGE_VERBS = frozenset(
    """create update modify edit write delete remove rm set put post patch add insert
    replace append book cancel send transfer move mv rename copy cp install uninstall
    apply commit push deploy save upload submit reset restart start stop kill mkdir touch
    chmod pay refund exchange return toggle enable disable reboot clear undo redo run
    execute exec make build login logout sign register assign merge approve reject close
    schedule reserve purchase order upgrade downgrade import export sync""".split()
)
# Changes of the environment a program runs in (they can make a missing program appear).
ENVIRONMENT_VERBS = frozenset(
    """install uninstall upgrade downgrade run execute exec make build set export
    register login logout sign""".split()
)
HTTP_READ = frozenset({"get", "head", "options"})
SHELL_NAMES = frozenset({"bash", "sh", "zsh", "shell", "terminal", "cmd", "powershell", "pwsh"})
SHELL_TOOLS = frozenset(
    {"run_shell_command", "execute_command", "exec_command", "run_terminal_cmd", "run_command"}
)
COMMAND_KEYS = ("command", "cmd", "script", "code_to_run")
SUBCOMMAND_KEYS = ("command", "action", "operation", "op", "mode", "method")
SUBCOMMAND_SET = frozenset(SUBCOMMAND_KEYS)

# Shell commands that only look (their first word). `git`, package managers and version
# queries are looked at more closely below.
SHELL_READS = frozenset(
    """ls ll la dir cat head tail less more grep egrep fgrep rg ag ack find fd locate pwd
    echo printf wc sort uniq diff cmp comm file stat which whereis type tree nl od xxd
    hexdump strings du df free env printenv id whoami hostname uname date ps pgrep lsof
    netstat ss basename dirname realpath readlink test [ true false cut tr column jq yq
    awk sed history man help cal getent nproc lscpu sleep wait
    search_file search_dir find_file filemap""".split()
)
# SWE-agent's windowed editor keeps a current file and line: `open`, `goto` and the
# scrolls move it, and `goto`, the scrolls and `search_file` without a file then see
# another place. They look, and change only what those editor-relative look-ups see:
# a `search_dir` or `cat` repeated with only moves between is still the same call.
NAVIGATION = frozenset({"open", "goto", "scroll_up", "scroll_down"})
VIEW_RELATIVE = frozenset({"goto", "scroll_up", "scroll_down"})
GIT_READS = frozenset(
    """status log diff show blame grep ls-files ls-tree rev-parse describe shortlog
    cat-file reflog""".split()
)
PACKAGE_TOOLS = frozenset(
    {"pip", "pip3", "npm", "yarn", "pnpm", "apt", "apt-get", "apt-cache", "dpkg", "conda",
     "brew", "gem", "cargo", "go", "mvn", "gradle", "poetry", "uv"}
)  # fmt: skip
PACKAGE_READS = frozenset(
    """show list freeze ls view info search outdated policy -l -s -L --list --version
    version -v -V -version help --help -h config why explain""".split()
)
FILE_COMMANDS = frozenset({"edit", "create", "insert", "append"})  # SWE-agent's editor
CURL_WRITES = frozenset({"-o", "-O", "--output", "-T", "--upload-file", "-F", "--form"})
INSPECT_SUBCOMMANDS = frozenset(
    """get describe logs ps inspect images top status view list ls show version
    is-active""".split()
)
VERSION_FLAGS = frozenset({"--version", "-version", "-v", "-V", "--help", "-h", "help"})
WRAPPERS = frozenset({"sudo", "time", "nohup", "command", "builtin", "exec", "nice"})
FIND_ACTIONS = frozenset({"-delete", "-exec", "-execdir", "-ok", "-fprint", "-fls"})

# Commentary fields: text that only describes the call (Claude Code's Bash `description`).
COMMENTARY = ("description", "reason", "explanation", "justification", "thought")
# A replacing edit's fields: the text looked for and the text put in its place (OpenHands'
# and SWE-agent's `str_replace_editor`, Claude Code's `Edit`, Gemini CLI's `replace`).
OLD_TEXT_KEYS = frozenset({"old_str", "old_string", "old_text"})
NEW_TEXT_KEYS = frozenset({"new_str", "new_string", "new_text"})

_WORD_SPLIT = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])")
_SEGMENTS = re.compile(r"&&|\|\||[;|\n&]")
_REDIRECT = re.compile(r"(?<![0-9&<>])>{1,2}(?!&)\s*(?!/dev/null\b)\S|\btee\b|<<")
_MAX_COMMAND = 4096  # longer command lines are scripts: changing
_MAX_NAMES = 1024  # tool names whose class is remembered per rules
_MAX_CALLS = 4096  # calls (by digest) whose class, read from their arguments, is remembered


def name_words(tool: str) -> list[str]:
    """The lower-case words of a tool name (`mcp__github__get_issue`, `readFile`)."""
    return [w.lower() for w in _WORD_SPLIT.split(tool) if w]


class Effects:
    """Classifies calls as quiet (a look-up) or changing; compiled once per policy."""

    def __init__(
        self,
        read_only: Iterable[str] = (),
        changing: Iterable[str] = (),
        commentary: Iterable[str] = COMMENTARY,
    ) -> None:
        self.read_only = frozenset(read_only)
        self.changing = frozenset(changing)
        self.commentary = tuple(commentary)
        self.commentary_set = frozenset(self.commentary)
        self._names: dict[str, int | None] = {}  # tool -> flags by name, None: look at args
        self._calls: dict[bytes, tuple[int, bytes | None]] = {}  # digest -> what `classify` said
        # Argument keys that can change a call's class or identity: without any of them
        # (the usual case) the name's verdict is the call's (one set test).
        self._telling = SUBCOMMAND_SET | self.commentary_set

    def classify(
        self, tool: str, args: Any, digest: bytes, seen: bool = True
    ) -> tuple[int, bytes | None]:
        """`flags` and `core_digest` of one call at once; the core is None when it is the
        call's own digest. The usual call costs three dict look-ups and one set test; what
        the arguments say is remembered by digest, of a plain call only when it was `seen`
        lately (a repeat: a loop, a poll, a retried command comes round again)."""
        known = self._calls.get(digest)
        if known is not None:
            return known
        by_name = self._names.get(tool, -1)
        if (
            by_name is not None
            and by_name != -1
            and type(args) is dict
            and self._telling.isdisjoint(args)
            and not _loosens(args, not by_name & QUIET)
        ):
            known = by_name & ~_DECLARED, None  # (what the walk below finds for it)
            if seen:
                self._remember(digest, known)
            return known
        flags = self.flags(tool, args)
        # (the name's verdict as `flags` found it: on a tool's first call it was not known yet)
        prose = self._names.get(tool) is not None and not flags & QUIET
        core = self.core_digest(tool, args, digest, prose=prose)
        known = flags, None if core == digest else core
        self._remember(digest, known)
        return known

    def _remember(self, digest: bytes, known: tuple[int, bytes | None]) -> None:
        if len(self._calls) >= _MAX_CALLS:
            self._calls.clear()
        self._calls[digest] = known

    def flags(self, tool: str, args: Any) -> int:
        """QUIET, MOVE or 0 (changing) for one call."""
        by_name = self._names.get(tool, -1)
        if by_name == -1:
            by_name = self._by_name(tool)
            if len(self._names) >= _MAX_NAMES:
                self._names.clear()
            self._names[tool] = by_name
        if by_name is None:  # a shell tool: its command line decides
            return shell_flags(command_line(args))
        if by_name & _DECLARED:
            return by_name & ~_DECLARED
        sub = subcommand_flags(args)
        return by_name if sub is None else sub

    def _by_name(self, tool: str) -> int | None:
        """Flags from the name alone, or None when the arguments decide (shell tools)."""
        if tool in self.read_only:
            return QUIET | _DECLARED
        if tool in self.changing:
            return _DECLARED
        words = name_words(tool)
        if tool in SHELL_TOOLS or any(w in SHELL_NAMES for w in words):
            return None
        return name_flags(words)

    def program(self, tool: str, args: Any) -> str | None:
        """The program a shell tool's call runs (its command line's first word, SWE-agent's
        `edit` included); None for other tools. After `flags()` has seen the tool."""
        if self._names.get(tool, -1) is not None:
            return None
        words = command_line(args).split(None, 1)
        return words[0][:64] if words else ""

    def verb(self, tool: str) -> str | None:
        """The first verb in a tool's name (`read` for `Read`), if it has one."""
        for word in name_words(tool):
            if word in READ_VERBS or word in CHANGE_VERBS:
                return word
        return None

    def core_digest(self, tool: str, args: Any, digest: bytes, prose: bool = False) -> bytes:
        """The call's identity without commentary fields and with values written one way
        (its own digest when nothing changes). `prose`: free text counts as one value.

        A field is commentary only beside other arguments: `think(thought=…)` is its text.
        """
        if not isinstance(args, Mapping):
            return digest
        kept: Mapping[str, Any] = args
        if not self.commentary_set.isdisjoint(args):
            kept = {k: v for k, v in args.items() if k not in self.commentary} or args
        if _loosens(kept, prose):
            kept = {k: _loose(v, prose) for k, v in kept.items()}
        return digest if kept is args else args_digest(tool, canonical_text(kept))


# Values written another way: an amount with a currency sign,
# thousands separators or trailing zeros; a date with a month name or in y/m/d order;
# for calls that act (not look-ups, not shell lines), free text (a summary reworded).
_AMOUNT = re.compile(
    r"\s*(?:[$€£]\s*)?-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?\s*(?:usd|eur|gbp|dollars?)?\s*",
    re.IGNORECASE,
)
_MONTHS = "jan feb mar apr may jun jul aug sep oct nov dec".split()
_MONTH = r"(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_DATES = (
    (re.compile(rf"\s*{_MONTH}\s+{_DAY},?\s+(\d{{4}})\s*", re.IGNORECASE), (3, 1, 2)),
    (re.compile(rf"\s*{_DAY}\s+(?:of\s+)?{_MONTH},?\s+(\d{{4}})\s*", re.IGNORECASE), (3, 2, 1)),
    (re.compile(r"\s*(\d{4})[/.](\d{1,2})[/.](\d{1,2})\s*"), (1, 2, 3)),
)
_CODE = frozenset("{}()[];=<>`|\\")
_PROSE_WORDS = 6  # a text of this many words or more, without code symbols, is prose
_LOOSE_CHARS = 2000  # a longer value is never rewritten (a file's content is not a summary)
_PROSE = "\x00text"


def _loose(value: Any, prose: bool) -> Any:
    """`value` written one way (itself when there is nothing to rewrite)."""
    if type(value) is float:
        return int(value) if value.is_integer() else value
    if type(value) is not str or not value or len(value) > _LOOSE_CHARS:
        return value
    if prose and value.count(" ") >= _PROSE_WORDS - 1 and _CODE.isdisjoint(value):
        return _PROSE
    first = value.lstrip()[:1]
    if first.isdigit() or first in "$€£-":
        if _AMOUNT.fullmatch(value) and (any(c in value for c in "$€£,") or "." in value):
            number = float(re.sub(r"[^\d.\-]", "", value))  # an amount: a number
            return int(number) if number.is_integer() else number
        for pattern, order in _DATES[1:]:
            found = pattern.fullmatch(value)
            if found:
                return _iso(found, order)
    elif first.isalpha():
        for pattern, order in _DATES[:2]:
            found = pattern.fullmatch(value)
            if found:
                return _iso(found, order)
    return value


def _iso(found: re.Match[str], order: tuple[int, int, int]) -> str:
    year, month, day = (found.group(i) for i in order)
    if not month.isdigit():
        month = str(_MONTHS.index(month[:3].lower()) + 1)
    return f"{year}-{int(month):02d}-{int(day):02d}"


def _loosens(args: Mapping[str, Any], prose: bool) -> bool:
    """Whether any top-level value of `args` is written in a way `_loose` rewrites."""
    for value in args.values():
        kind = type(value)
        if kind is str:
            if not value or len(value) > _LOOSE_CHARS:
                continue  # (not rewritten: counting a 10 KB text's spaces would be wasted)
            first = value[0]
            if (
                first in _LEADS
                or (first in _MONTH_INITIALS and value[:3].lower() in _MONTH_SET)
                or (prose and value.count(" ") >= _PROSE_WORDS - 1)
            ) and _loose(value, prose) is not value:
                return True
        elif kind is float and value.is_integer():
            return True
    return False


# How the values `_loose` may rewrite begin: a digit, a sign, a space, a month's name.
_LEADS = frozenset("0123456789$€£- \t")
_MONTH_SET = frozenset(_MONTHS)
_MONTH_INITIALS = frozenset("jfmasondJFMASOND")


def name_flags(words: list[str]) -> int:
    """Flags from the words of a tool name (or an editor's sub-command)."""
    for word in words:
        if word in READ_VERBS:
            return QUIET
        if word in CHANGE_VERBS:
            return 0 if word in ENVIRONMENT_VERBS else FILE
    return 0


def subcommand_flags(args: Any) -> int | None:
    """An editor's one-word sub-command (`view`, `str_replace`), if it names a verb."""
    if not isinstance(args, Mapping) or SUBCOMMAND_SET.isdisjoint(args):
        return None
    for key in SUBCOMMAND_KEYS:
        value = args.get(key)
        if isinstance(value, str) and 0 < len(value) <= 40 and " " not in value.strip():
            words = name_words(value)
            if words and words[0] in HTTP_READ:
                return QUIET
            if any(w in READ_VERBS or w in CHANGE_VERBS for w in words):
                return name_flags(words)
    return None


def command_line(args: Any) -> str:
    """The command line of a shell tool's arguments (raw text, `command`, Codex's argv)."""
    if isinstance(args, str):
        return args
    if not isinstance(args, Mapping):
        return ""
    for key in COMMAND_KEYS:
        value = args.get(key)
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            if len(value) >= 3 and value[0] in SHELL_NAMES and value[1].startswith("-"):
                return value[-1]  # ["bash", "-lc", "…"]
            return " ".join(value)
        if isinstance(value, str):
            return value
    return ""


def shell_flags(line: str) -> int:
    """QUIET when every command of a shell line only looks; MOVE for a lone relative `cd`."""
    if len(line) > _MAX_COMMAND:
        return 0
    text = line.strip()
    first = text.split(None, 1)[0] if text else ""
    if first in FILE_COMMANDS:
        return FILE  # SWE-agent's `edit 3:5` … `end_of_edit`: the rest is the new text
    if not text or _REDIRECT.search(text) or "$(" in text or "`" in text:
        return 0
    segments = [s.split() for s in _SEGMENTS.split(text)]
    segments = [s for s in segments if s]
    if len(segments) == 1 and segments[0][0] in NAVIGATION:
        return NAVIGATE | (VIEWED if segments[0][0] in VIEW_RELATIVE else 0)
    if len(segments) == 1 and segments[0][0] == "search_file" and _word_count(text) <= 2:
        return QUIET | VIEWED  # `search_file term`: in the file the editor shows
    if len(segments) == 1 and segments[0][0] in ("cd", "pushd", "popd"):
        words = segments[0]
        target = words[1] if len(words) > 1 else "~"
        relative = words[0] != "cd" or not target.startswith(("/", "~"))
        return MOVE if relative else 0
    if len(segments) == 1 and segments[0][0] == "sed" and "-i" in segments[0]:
        return FILE
    for words in segments:
        if not _reads(words):
            return 0
    return QUIET


def _word_count(text: str) -> int:
    """Shell words in a command line (quotes respected; unbalanced quotes: plain split)."""
    try:
        return len(shlex.split(text))
    except ValueError:
        return len(text.split())


def _reads(words: list[str]) -> bool:
    """Whether one simple command only looks."""
    i = 0
    while i < len(words) and ("=" in words[i] and not words[i].startswith("=")):
        i += 1  # VAR=value prefixes
    while i < len(words) and words[i] in WRAPPERS:
        i += 1
    if i >= len(words) or words[i].startswith("#"):
        return True  # only assignments, or a comment
    verb, rest = words[i], words[i + 1 :]
    if verb == "curl":  # a GET that writes nothing
        return not any(a in CURL_WRITES or a.startswith(("-X", "-d", "--data")) for a in rest)
    if verb in ("kubectl", "docker", "gh", "podman", "helm", "systemctl", "service"):
        return bool(rest) and rest[0] in INSPECT_SUBCOMMANDS
    if verb in ("sed", "perl") and any(a.startswith("-i") for a in rest):
        return False
    if verb == "find":
        return not any(a in FIND_ACTIONS for a in rest)
    if verb in SHELL_READS:
        return True
    if verb == "git":
        sub = next((a for a in rest if not a.startswith("-")), "")
        return sub in GIT_READS
    if verb in PACKAGE_TOOLS:
        sub = rest[0] if rest else ""
        return sub in PACKAGE_READS
    return len(rest) == 1 and rest[0] in VERSION_FLAGS  # `java -version`, `node --help`


# A user message that reports a change ("I switched the setting", "it is enabled now"):
# a repeat after it is a re-check. "Please confirm", "try again" report none.
_TOLD_CHANGE = re.compile(
    r"\b(?:changed|switched|updated|fixed|restarted|rebooted|installed|reinstalled|"
    r"enabled|disabled|toggled|turned (?:it )?(?:on|off)|reset|cleared|added|removed|deleted|"
    r"uploaded|refreshed|reconnected|modified|corrected|replaced|upgraded|renewed|"
    r"topped up|logged (?:in|out)|signed (?:in|out)|set up|moved|renamed|paid)\b"
)
_TOLD_CHARS = 2000  # characters of a user message looked at


def reports_change(text: str | None) -> bool:
    """Whether a user message says something was changed since the agent last looked."""
    if not text:
        return False
    return _TOLD_CHANGE.search(text[:_TOLD_CHARS].lower()) is not None


class FailureReader:
    """Whether a result reports a failure of the call itself, as the rules' `outcomes`
    block defines it (`failure_prefixes`, `failure_markers`), for results the engine has
    not read (a call's first occurrence). Ends of long texts only, like the engine."""

    def __init__(self, prefixes: Iterable[str], markers: Iterable[str]) -> None:
        self.prefixes = tuple(p.lower() for p in prefixes if isinstance(p, str) and p)
        words = [m.lower() for m in markers if isinstance(m, str) and m.strip()]
        self.words = tuple(words)
        # One pass for "any marker anywhere" (the usual answer is no), then the whole-word test.
        self.anywhere = ahocorasick_rs.AhoCorasick(words) if words else None
        self.markers = (
            re.compile("|".join(rf"(?<!\w){re.escape(w)}(?!\w)" for w in words)) if words else None
        )

    def failed(self, text: str) -> bool:
        if len(text) > 2 * _SCAN_CHARS:
            text = text[:_SCAN_CHARS] + "\n" + text[-_SCAN_CHARS:]
        low = text.lower()
        if self.prefixes:
            head = low[:64].lstrip(_LEAD)
            if head.startswith(self.prefixes):
                for prefix in self.prefixes:
                    if (
                        head.startswith(prefix)
                        and not head[len(prefix) : len(prefix) + 1].isalnum()
                    ):
                        return True
        if self.anywhere is None or not self.anywhere.find_matches_as_indexes(low):
            return False  # the usual case: no marker at all
        return self.markers is not None and self.markers.search(low) is not None


_SCAN_CHARS = 512
_LEAD = " \t\r\n\"'`{[(<>*#-:"
_WORD = re.compile(r"[a-z]+")
_MISSING = re.compile(
    r"command not found|is not recognized as (?:an internal or external command|the name)"
)


_NOT_FOUND = re.compile(
    r"not found|did not appear|does not appear|could not find|no match|no replacement|"
    r"0 occurrences|failed to find"
)


def replaced_text_key(tool: str, args: Any) -> bytes | None:
    """For a replacing edit (old and new text fields), the identity of what it looks for:
    the call without its new text. None for any other call."""
    if type(args) is not dict or NEW_TEXT_KEYS.isdisjoint(args) or OLD_TEXT_KEYS.isdisjoint(args):
        return None
    return args_digest(
        tool, canonical_text({k: v for k, v in args.items() if k not in NEW_TEXT_KEYS})
    )


def old_text_missing(text: str) -> bool:
    """Whether a replacing edit's failure says the text it looks for is not there
    (`String to replace not found in file.`, `old_str … did not appear verbatim`): no new
    text can change that, only the file or the old text can."""
    return _NOT_FOUND.search(text[:_SCAN_CHARS].lower()) is not None


def missing_program(text: str) -> bool:
    """Whether a failure says the program it ran does not exist (`javac: command not
    found`): edits of files cannot change that, only the environment can."""
    return _MISSING.search(text[:_SCAN_CHARS]) is not None


def named_verbs(text: str) -> frozenset[str]:
    """The look-up verbs a failure's text names (`Read it first`): a call of such a verb
    after the failure may be its remedy, so it counts as a change."""
    return frozenset(_WORD.findall(text[:400].lower())) & READ_VERBS
