"""`loopguard hook install|uninstall DIALECT`: write or remove loopguard's entries in an agent's
hook settings, merged with what is there.

What to write per agent comes from its dialect (`Dialect.install`). The rules here:

- loopguard's entries are recognised by their command: a program named `loopguard` (any folder,
  `.exe` too) followed by `hook DIALECT` (any options after). Everything else in the file, other
  keys and other hooks, stays as it was, in its order.
- Install adds one entry per registered event, fixes a loopguard entry whose command or timeout
  differs, and drops a second loopguard entry of the same event (it would count each call
  twice). A second install changes nothing and writes nothing.
- Uninstall removes every loopguard entry of the dialect, the matcher groups and event lists
  that become empty by that, and `hooks` when it becomes empty; a file left with nothing but the
  dialect's `file_extra` (e.g. Copilot's `{"version": 1}`) is deleted.
- Before any write the old file is copied beside it to `<name>.loopguard-backup` (then
  `.loopguard-backup.2`, `.3`, ...: an older backup is never overwritten), with its permissions.
  The write is atomic (temp file + os.replace), keeps the file's permissions, and goes through a
  symlink to its target.
- A file that is not UTF-8 JSON, holds duplicate keys, is not an object, or whose `hooks` or an
  event list has the wrong type is never touched: `InstallError`, one line naming the file.
  Comments are read where the agent allows them (Gemini CLI), but such a file is not rewritten
  (the comments would be lost): `--dry-run` shows the entries to add by hand.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import difflib
import json
import os
import re
import shlex
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loopguard.hooks.dialects import DIALECTS
from loopguard.hooks.dialects.base import Dialect

BACKUP_SUFFIX = ".loopguard-backup"
PLAIN = "loopguard"  # the program as a plain word, found on the agent's PATH


class InstallError(Exception):
    """A settings file loopguard will not change (or cannot); the message names the file."""


@dataclass
class InstallReport:
    """What `install` or `uninstall` did (or, in a dry run, would do) to one settings file."""

    dialect: Dialect
    action: str  # "install" or "uninstall"
    path: Path
    dry_run: bool
    changes: list[str] = field(default_factory=list)
    command: str | None = None  # the hook command written (install), as the posix shell reads it
    command_why: str = ""
    backup: Path | None = None
    created: bool = False
    deleted: bool = False
    notes: list[str] = field(default_factory=list)
    before: str | None = None  # the file's text before (None: there was no file)
    after: str | None = None  # its text after (None: no file)
    refused: str | None = None  # a dry run's reason the real run would not write

    @property
    def changed(self) -> bool:
        return bool(self.changes)

    def lines(self) -> list[str]:
        """The report as printed: what changed, where, the backup, then the notes."""
        title = self.dialect.title
        would = "would " if self.dry_run else ""
        if not self.changed:
            if self.action == "install":
                head = f"{title}: loopguard's hooks are already in {self.path}; nothing changed"
            else:
                head = f"{title}: no loopguard hooks in {self.path}; nothing changed"
            return [head, *self._command_lines(), *self.notes]
        verb = "install loopguard's hooks in" if self.action == "install" else "remove loopguard's"
        verb = verb if self.dry_run else _past(verb)
        where = f"{self.path}" if self.action == "install" else f"hooks from {self.path}"
        head = f"{title}: {would}{verb} {where}"
        if self.dry_run:
            head += " (dry run: nothing written)"
        out = [head]
        if self.created:
            out.append(f"  {would}create the file")
        out.extend(f"  {change}" for change in self.changes)
        if self.deleted:
            out.append(f"  {would}delete the file (nothing but loopguard's entries was left)")
        if self.backup is not None:
            out.append(f"  backup of the old file: {self.backup}")
        elif self.dry_run and self.before is not None:
            out.append(f"  {would}back up the old file to {_free_backup(self.path)}")
        out.extend(self._command_lines())
        if self.refused:
            out.append(f"  the real run would refuse: {self.refused}")
        out.extend(self.notes)
        return out

    def diff(self) -> str:
        """The change as a unified diff of the file's text (for --dry-run)."""
        before = (self.before or "").splitlines(keepends=True)
        after = (self.after or "").splitlines(keepends=True)
        old = str(self.path) if self.before is not None else "/dev/null"
        new = str(self.path) if self.after is not None else "/dev/null"
        return "".join(difflib.unified_diff(before, after, old, new))

    def _command_lines(self) -> list[str]:
        if self.command is None:
            return []
        return [f"  command: {self.command} ({self.command_why})"]


def _past(verb: str) -> str:
    return verb.replace("install ", "installed ", 1).replace("remove ", "removed ", 1)


# ---- which settings file -------------------------------------------------------------------


def settings_path(
    dialect: Dialect,
    scope: str,
    *,
    project_dir: Path,
    home: Path,
    environ: Mapping[str, str] | None = None,
) -> Path:
    """The settings file of `dialect` for `scope` ("project" or "user")."""
    spec = dialect.install
    if scope == "project":
        return Path(project_dir) / spec.project
    if scope != "user":
        raise ValueError(f"scope is 'project' or 'user', not {scope!r}")
    env = os.environ if environ is None else environ
    folder = env.get(spec.user_env) if spec.user_env else None
    if folder:
        return Path(folder).expanduser() / Path(spec.user).name
    return Path(home) / spec.user


# ---- the command ---------------------------------------------------------------------------


def runs_loopguard_hook(command: Any, dialect_name: str) -> bool:
    """Whether `command` runs `loopguard hook <dialect_name>` (a loopguard entry of the dialect)."""
    if not isinstance(command, str):
        return False
    for words in _word_lists(command):
        for i in range(len(words) - 2):
            if _is_loopguard(words[i]) and words[i + 1] == "hook" and words[i + 2] == dialect_name:
                return True
    return False


def _word_lists(command: str) -> list[list[str]]:
    """The command's words as a POSIX shell splits them, and split keeping backslashes (Windows
    paths), quotes stripped."""
    lists = []
    with contextlib.suppress(ValueError):
        lists.append(shlex.split(command, posix=True))
    with contextlib.suppress(ValueError):
        lists.append([word.strip("'\"") for word in shlex.split(command, posix=False)])
    return lists


def _is_loopguard(word: str) -> bool:
    name = re.split(r"[\\/]", word)[-1].lower()
    return name in ("loopguard", "loopguard.exe")


def running_executable(argv0: str | None = None, prefix: str | None = None) -> Path | None:
    """The loopguard executable running now: `argv0` when it is one, else the console script in
    the environment's bin/ (Scripts/ on Windows); None when neither is a file."""
    candidate = Path(sys.argv[0] if argv0 is None else argv0)
    if _is_loopguard(candidate.name) and candidate.is_file():
        return candidate.absolute()
    root = Path(sys.prefix if prefix is None else prefix)
    for folder in ("bin", "Scripts"):
        for name in ("loopguard", "loopguard.exe"):
            script = root / folder / name
            if script.is_file():
                return script.absolute()
    return None


def choose_program(
    *, argv0: str | None = None, prefix: str | None = None, path: str | None = None
) -> tuple[str, str]:
    """(program, why): the plain word `loopguard` when the one on PATH (`path`, default $PATH)
    is the one running, else the running one's absolute path, so an agent started without the
    virtual environment on its PATH still finds it."""
    running = running_executable(argv0, prefix)
    on_path = shutil.which(PLAIN, path=path)
    if running is not None and on_path is not None and _same_file(running, on_path):
        return PLAIN, f"the `loopguard` on PATH is this one: {on_path}"
    if running is not None:
        why = f"the `loopguard` on PATH is {on_path}, not" if on_path else "no `loopguard` on PATH,"
        return str(running), f"{why} this one: its full path is written; --command to choose"
    if on_path is not None:
        return PLAIN, f"this loopguard's executable is not known; the one on PATH is {on_path}"
    return PLAIN, "no loopguard executable found: the agent needs `loopguard` on its PATH"


def _same_file(a: Path, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _posix_program(program: str) -> str:
    return program if program == PLAIN else shlex.quote(program)


def _powershell_program(program: str) -> str:
    """A path as PowerShell runs it: bare when safe, else quoted with the call operator."""
    if re.fullmatch(r"[\w./\\:-]+", program):
        return program
    return "& '" + program.replace("'", "''") + "'"


def hook_command(program: str, dialect: Dialect, event: str, *, key: str = "command") -> str:
    """The command of `event`'s entry under `key` (`powershell` gets PowerShell quoting);
    `program` is a path or word to quote, as `choose_program` gives it."""
    quoted = _powershell_program(program) if key == "powershell" else _posix_program(program)
    return _with_hook_words(quoted, dialect, event)


def _with_hook_words(program_text: str, dialect: Dialect, event: str) -> str:
    words = f"{program_text} hook {dialect.name}"
    if event in dialect.install.named:
        words += f" --event {event}"
    return words


# ---- reading and writing the file ----------------------------------------------------------


def _read(path: Path, dialect: Dialect) -> tuple[str | None, dict[str, Any], str | None]:
    """(text, document, where the first comment is): (None, {}, None) when there is no file."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None, {}, None
    except IsADirectoryError:
        raise InstallError(f"{path}: is a folder, not a settings file") from None
    except OSError as exc:
        raise InstallError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InstallError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    source, comment = (text, None)
    if dialect.install.comments:
        source, comment = strip_comments(text)
    if not source.strip():
        return text, {}, comment
    try:
        doc = json.loads(source, object_pairs_hook=_no_duplicates)
    except json.JSONDecodeError as exc:
        raise InstallError(f"{path}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}") from None
    except _DuplicateKey as exc:
        raise InstallError(f"{path}: duplicate key {exc.args[0]!r} in a JSON object") from None
    if not isinstance(doc, dict):
        raise InstallError(f"{path}: holds a JSON {_json_type(doc)}, not an object")
    return text, doc, comment


class _DuplicateKey(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def strip_comments(text: str) -> tuple[str, str | None]:
    """`text` with // and /* */ comments outside strings blanked (newlines kept, so JSON error
    positions stay right), and the line:col of the first comment (None without)."""
    out: list[str] = []
    first: int | None = None
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char == '"':
            end = i + 1
            while end < n and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            out.append(text[i : end + 1])
            i = end + 1
        elif text.startswith("//", i) or text.startswith("/*", i):
            first = i if first is None else first
            if text[i + 1] == "/":
                end = text.find("\n", i)
                end = n if end < 0 else end
            else:
                end = text.find("*/", i + 2)
                end = n if end < 0 else end + 2
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
        else:
            out.append(char)
            i += 1
    if first is None:
        return text, None
    line = text.count("\n", 0, first) + 1
    col = first - (text.rfind("\n", 0, first) + 1) + 1
    return "".join(out), f"{line}:{col}"


def _json_type(value: Any) -> str:
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    return "number"


def _indent_of(text: str | None) -> str | int:
    """The indentation the file uses (its first indented line), 2 spaces for a new file."""
    if text:
        match = re.search(r"\n([ \t]+)\S", text)
        if match:
            unit = match.group(1)
            return len(unit) if set(unit) == {" "} else unit
    return 2


def _render(doc: dict[str, Any], like: str | None) -> str:
    return json.dumps(doc, indent=_indent_of(like), ensure_ascii=False) + "\n"


def _free_backup(path: Path) -> Path:
    """The first backup name not taken: <name>.loopguard-backup, then .loopguard-backup.2, ..."""
    number = 1
    while True:
        suffix = BACKUP_SUFFIX if number == 1 else f"{BACKUP_SUFFIX}.{number}"
        candidate = path.with_name(path.name + suffix)
        if not candidate.exists() and not candidate.is_symlink():
            return candidate
        number += 1


def _backup(path: Path, data: bytes, mode: int) -> Path:
    """Copy `data` (the old file) to a new backup beside `path`, never over an older one."""
    while True:
        target = _free_backup(path)
        try:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        except FileExistsError:  # taken meanwhile: the next number
            continue
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.chmod(target, mode)
        return target


def _write_atomic(path: Path, text: str, mode: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".loopguard-tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def _new_file_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


# ---- merging -------------------------------------------------------------------------------


def _entries(dialect: Dialect, event_list: list[Any]) -> Iterator[tuple[list[Any], Any]]:
    """(the list holding it, the entry) for each loopguard entry of `dialect` in an event list."""
    spec = dialect.install
    holders: list[list[Any]] = []
    if spec.layout == "nested":
        for group in event_list:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                holders.append(group["hooks"])
    else:
        holders.append(event_list)
    for holder in holders:
        for entry in holder:
            if isinstance(entry, dict) and any(
                runs_loopguard_hook(entry.get(key), dialect.name) for key in spec.command_keys
            ):
                yield holder, entry


def _desired_entry(
    dialect: Dialect, event: str, matcher: str | None, commands: dict[str, str]
) -> dict[str, Any]:
    spec = dialect.install
    entry: dict[str, Any] = dict(spec.entry_extra)
    for key in spec.command_keys:
        entry[key] = commands[key]
    if spec.layout == "flat" and matcher is not None:
        entry["matcher"] = matcher
    if spec.timeout is not None:
        entry[spec.timeout[0]] = spec.timeout[1]
    return entry


def _hooks_object(doc: dict[str, Any], path: Path, *, create: bool) -> dict[str, Any] | None:
    hooks = doc.get("hooks")
    if hooks is None:
        if not create:
            return None
        hooks = doc["hooks"] = {}
    if not isinstance(hooks, dict):
        raise InstallError(f'{path}: "hooks" is a JSON {_json_type(hooks)}, not an object')
    return hooks


def _prune(event_list: list[Any], holder: list[Any]) -> None:
    """Drop a matcher group whose hooks list `holder` has just become empty."""
    if holder is not event_list and not holder:
        event_list[:] = [
            g for g in event_list if not (isinstance(g, dict) and g.get("hooks") is holder)
        ]


def _merge_install(
    doc: dict[str, Any], dialect: Dialect, path: Path, commands_of: Any
) -> list[str]:
    spec = dialect.install
    changes: list[str] = []
    for key, value in spec.file_extra.items():
        if key not in doc:
            doc[key] = value
            changes.append(f"set {json.dumps(key)}: {json.dumps(value)}")
        elif doc[key] != value:
            raise InstallError(
                f"{path}: {json.dumps(key)} is {json.dumps(doc[key])}; loopguard writes "
                f"{dialect.title} hooks for {json.dumps(key)}: {json.dumps(value)}"
            )
    hooks = _hooks_object(doc, path, create=True)
    assert hooks is not None
    for event, matcher in spec.events:
        desired = _desired_entry(dialect, event, matcher, commands_of(event))
        event_list = hooks.setdefault(event, [])
        if not isinstance(event_list, list):
            raise InstallError(
                f"{path}: hooks.{event} is a JSON {_json_type(event_list)}, not an array"
            )
        found = list(_entries(dialect, event_list))
        if not found:
            if spec.layout == "nested":
                group: dict[str, Any] = {} if matcher is None else {"matcher": matcher}
                group["hooks"] = [desired]
                event_list.append(group)
            else:
                event_list.append(desired)
            changes.append(
                f"added {event}" + ("" if matcher is None else f" (matcher {json.dumps(matcher)})")
            )
            continue
        _, entry = found[0]
        fixed = [key for key, value in desired.items() if entry.get(key) != value]
        if fixed:
            old = next((entry.get(k) for k in spec.command_keys if k in fixed), None)
            for key in fixed:
                entry[key] = desired[key]
            detail = f" (the command was {old!r})" if isinstance(old, str) else ""
            changes.append(f"updated {event}: {', '.join(fixed)}{detail}")
        for holder, extra in found[1:]:
            holder.remove(extra)
            _prune(event_list, holder)
            changes.append(f"removed a second loopguard entry of {event}")
    return changes


def _merge_uninstall(doc: dict[str, Any], dialect: Dialect, path: Path) -> list[str]:
    hooks = _hooks_object(doc, path, create=False)
    changes: list[str] = []
    if hooks is None:
        return changes
    for event in list(hooks):
        event_list = hooks[event]
        if not isinstance(event_list, list):
            continue  # not an event (e.g. Gemini's hooks.disabled) or not ours to judge
        found = list(_entries(dialect, event_list))
        for holder, entry in found:
            holder.remove(entry)
            _prune(event_list, holder)
        if found:
            changes.append(
                f"removed {event}" + (f" ({len(found)} entries)" if len(found) > 1 else "")
            )
            if not event_list:
                del hooks[event]
    if changes and not hooks:
        del doc["hooks"]
    return changes


def _switch_parent(
    doc: dict[str, Any], keys: tuple[str, ...], path: Path, *, create: bool
) -> dict[str, Any] | None:
    node = doc
    for depth, key in enumerate(keys[:-1]):
        child = node.get(key)
        if child is None:
            if not create:
                return None
            child = node[key] = {}
        if not isinstance(child, dict):
            where = ".".join(keys[: depth + 1])
            raise InstallError(f"{path}: {where} is a JSON {_json_type(child)}, not an object")
        node = child
    return node


def builtin_loop_detection_off(doc: dict[str, Any], dialect: Dialect) -> bool:
    """Whether the agent's own loop detection is switched off in `doc`."""
    keys = dialect.install.builtin_loop_switch
    node: Any = doc
    for key in keys:
        if not isinstance(node, dict):
            return False
        node = node.get(key)
    return bool(keys) and node is True


# ---- install / uninstall -------------------------------------------------------------------


def install(
    dialect: Dialect,
    scope: str,
    *,
    project_dir: Path,
    home: Path,
    command: str | None = None,
    dry_run: bool = False,
    disable_builtin_loop_detection: bool | None = None,
    environ: Mapping[str, str] | None = None,
) -> InstallReport:
    """Add loopguard's hook entries to `dialect`'s settings file for `scope`.

    `command`: the program part of the command, written as given (`hook DIALECT` follows);
    None chooses it (`choose_program`). `disable_builtin_loop_detection`: True sets the agent's
    switch (Gemini CLI's `model.disableLoopDetection`), False or None leaves it (None adds a
    note saying how). Raises InstallError for a file it will not change."""
    path = settings_path(dialect, scope, project_dir=project_dir, home=home, environ=environ)
    spec = dialect.install
    if command is not None:
        command = command.strip()
        if runs_loopguard_hook(command, dialect.name):
            raise InstallError(
                f"--command {command!r}: give only the program (e.g. /path/to/loopguard); "
                f"`hook {dialect.name}` is added to it"
            )
        if not any(_is_loopguard(w) for words in _word_lists(command) for w in words):
            raise InstallError(
                f"--command {command!r} does not name a program called loopguard; the hook "
                "entries could not be recognised again (the program's name must be loopguard)"
            )
        why = "given with --command"

        def commands_of(event: str) -> dict[str, str]:
            return {key: _with_hook_words(command, dialect, event) for key in spec.command_keys}

    else:
        program, why = choose_program()

        def commands_of(event: str) -> dict[str, str]:
            return {
                key: hook_command(program, dialect, event, key=key) for key in spec.command_keys
            }

    report = InstallReport(dialect, "install", path, dry_run, command_why=why)
    report.command = commands_of(spec.events[0][0])[spec.command_keys[0]] if spec.events else None
    target = path.resolve() if path.is_symlink() else path
    text, doc, comment = _read(target, dialect)
    new = copy.deepcopy(doc)
    report.changes = _merge_install(new, dialect, path, commands_of)
    keys = spec.builtin_loop_switch
    if keys and not builtin_loop_detection_off(new, dialect):
        if disable_builtin_loop_detection:
            parent = _switch_parent(new, keys, path, create=True)
            assert parent is not None
            parent[keys[-1]] = True
            report.changes.append(
                f"set {'.'.join(keys)}: true ({dialect.title}'s own loop detection off)"
            )
        elif disable_builtin_loop_detection is None:
            report.notes.append(
                f"note: {dialect.title}'s own loop detection stays on; to turn it off: "
                f"loopguard hook install {dialect.name} --disable-builtin-loop-detection"
            )
    if (
        scope == "project"
        and command is None
        and report.command
        and not report.command.startswith(PLAIN + " ")
    ):
        report.notes.append(
            "note: the command is this machine's path; for a project file kept in git, "
            "--command loopguard writes the plain word"
        )
    if spec.note:
        report.notes.append(f"note: {spec.note}")
    return _finish(report, target, text, new, comment)


def uninstall(
    dialect: Dialect,
    scope: str,
    *,
    project_dir: Path,
    home: Path,
    dry_run: bool = False,
    restore_builtin_loop_detection: bool = False,
    environ: Mapping[str, str] | None = None,
) -> InstallReport:
    """Remove loopguard's hook entries of `dialect` from its settings file for `scope`.

    The agent's own loop-detection switch is removed only with `restore_builtin_loop_detection`.
    Raises InstallError for a file it will not change."""
    path = settings_path(dialect, scope, project_dir=project_dir, home=home, environ=environ)
    report = InstallReport(dialect, "uninstall", path, dry_run)
    target = path.resolve() if path.is_symlink() else path
    text, doc, comment = _read(target, dialect)
    new = copy.deepcopy(doc)
    report.changes = _merge_uninstall(new, dialect, path)
    keys = dialect.install.builtin_loop_switch
    if keys and builtin_loop_detection_off(new, dialect):
        if restore_builtin_loop_detection:
            parent = _switch_parent(new, keys, path, create=False)
            assert parent is not None
            del parent[keys[-1]]
            if not parent and len(keys) > 1:
                grand = _switch_parent(new, keys[:-1], path, create=False)
                assert grand is not None
                del grand[keys[-2]]
            report.changes.append(
                f"removed {'.'.join(keys)} ({dialect.title}'s own loop detection on again)"
            )
        else:
            report.notes.append(
                f"note: {dialect.title}'s own loop detection stays off ({'.'.join(keys)}); "
                f"--restore-builtin-loop-detection turns it back on"
            )
    return _finish(report, target, text, new, comment)


def _finish(
    report: InstallReport,
    target: Path,
    text: str | None,
    new: dict[str, Any],
    comment: str | None,
) -> InstallReport:
    """Render, back up and write (or, in a dry run, only describe) the new document."""
    report.before = text
    report.after = text
    if not report.changes:
        return report
    extra = dict(report.dialect.install.file_extra)
    leftover = {k: v for k, v in new.items() if not (k in extra and extra[k] == v)}
    delete = report.action == "uninstall" and not leftover
    report.created = text is None
    report.deleted = delete and text is not None
    report.after = None if delete else _render(new, text)
    if comment is not None:
        why = (
            f"{report.path} has comments (the first at {comment}), which rewriting it would "
            "lose; add or remove loopguard's entries by hand (--dry-run shows them)"
        )
        if not report.dry_run:
            raise InstallError(why)
        report.refused = "the file has comments, which rewriting it would lose"
    if report.dry_run:
        return report
    try:
        mode = stat.S_IMODE(target.stat().st_mode) if text is not None else _new_file_mode()
        if text is not None:
            report.backup = _backup(target, target.read_bytes(), mode)
        if delete:
            if text is not None:
                target.unlink()
        else:
            assert report.after is not None
            _write_atomic(target, report.after, mode)
    except OSError as exc:
        raise InstallError(f"{target}: cannot be written ({exc.strerror or exc})") from None
    return report


# ---- the command line ----------------------------------------------------------------------


def add_install_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of `loopguard hook install`; sets `run` to `run_install`."""
    _common_arguments(parser, "install")
    parser.add_argument(
        "--command",
        metavar="CMD",
        help="the program part of the hook command, written as given (`hook DIALECT` is added); "
        "default: `loopguard` when the one on PATH is this one, else this one's full path. "
        "For a project file kept in git prefer --command loopguard",
    )
    loop = parser.add_mutually_exclusive_group()
    loop.add_argument(
        "--disable-builtin-loop-detection",
        dest="builtin_loop_detection",
        action="store_const",
        const=True,
        help="Gemini CLI: also turn its own loop detection off (model.disableLoopDetection)",
    )
    loop.add_argument(
        "--keep-builtin-loop-detection",
        dest="builtin_loop_detection",
        action="store_const",
        const=False,
        help="Gemini CLI: leave its own loop detection as it is (default off a terminal; "
        "on a terminal you are asked)",
    )
    parser.set_defaults(run=run_install, builtin_loop_detection=None)


def add_uninstall_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of `loopguard hook uninstall`; sets `run` to `run_uninstall`."""
    _common_arguments(parser, "uninstall")
    parser.add_argument(
        "--restore-builtin-loop-detection",
        action="store_true",
        help="Gemini CLI: also remove model.disableLoopDetection (its own loop detection on)",
    )
    parser.set_defaults(run=run_uninstall)


def _common_arguments(parser: argparse.ArgumentParser, action: str) -> None:
    parser.add_argument(
        "dialect", choices=list(DIALECTS), metavar="DIALECT", help=" | ".join(DIALECTS)
    )
    scope = parser.add_mutually_exclusive_group()
    defaults = ", ".join(f"{name}: --{d.install.default_scope}" for name, d in DIALECTS.items())
    scope.add_argument(
        "--project",
        dest="scope",
        action="store_const",
        const="project",
        help=f"the project's settings file (defaults: {defaults})",
    )
    scope.add_argument(
        "--user", dest="scope", action="store_const", const="user", help="your user settings file"
    )
    parser.add_argument(
        "--project-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="the project folder (default: the current folder)",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help=f"print what {action} would change (and a diff of the file); write nothing",
    )


def run_install(args: argparse.Namespace) -> int:
    """`loopguard hook install`: 0 on success (no change included), 2 when it cannot."""
    return _run(args, "install")


def run_uninstall(args: argparse.Namespace) -> int:
    """`loopguard hook uninstall`: 0 on success (nothing to remove included), 2 when it cannot."""
    return _run(args, "uninstall")


def _run(args: argparse.Namespace, action: str) -> int:
    dialect = DIALECTS[args.dialect]
    scope = args.scope or dialect.install.default_scope
    project_dir = Path(args.project_dir).absolute() if args.project_dir else Path.cwd()
    home = Path.home()
    try:
        if action == "install":
            disable = args.builtin_loop_detection
            if disable is not None and not dialect.install.builtin_loop_switch:
                flag = "--disable" if disable else "--keep"
                return _error(
                    f"{flag}-builtin-loop-detection: {dialect.title} has no own loop detection"
                )
            if disable is None and not args.dry_run:
                disable = _ask_loop_detection(dialect, scope, project_dir, home)
            report = install(
                dialect,
                scope,
                project_dir=project_dir,
                home=home,
                command=args.command,
                dry_run=args.dry_run,
                disable_builtin_loop_detection=disable,
            )
        else:
            restore = args.restore_builtin_loop_detection
            if restore and not dialect.install.builtin_loop_switch:
                return _error(
                    f"--restore-builtin-loop-detection: {dialect.title} has no own loop detection"
                )
            report = uninstall(
                dialect,
                scope,
                project_dir=project_dir,
                home=home,
                dry_run=args.dry_run,
                restore_builtin_loop_detection=restore,
            )
    except InstallError as exc:
        return _error(f"{exc}; nothing was changed")
    out = sys.stdout
    out.write("\n".join(report.lines()) + "\n")
    if args.dry_run and report.changed:
        out.write(report.diff())
    return 0


def _ask_loop_detection(dialect: Dialect, scope: str, project_dir: Path, home: Path) -> bool | None:
    """On a terminal, ask whether to turn the agent's own loop detection off (y/N); None when
    not on a terminal, when the agent has none, or when it is off already."""
    if not dialect.install.builtin_loop_switch:
        return None
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        return None
    path = settings_path(dialect, scope, project_dir=project_dir, home=home)
    try:
        _, doc, _ = _read(path.resolve() if path.is_symlink() else path, dialect)
    except InstallError:
        return None  # install reports the problem
    if builtin_loop_detection_off(doc, dialect):
        return None
    keys = ".".join(dialect.install.builtin_loop_switch)
    try:
        answer = input(
            f"Turn {dialect.title}'s own loop detection off ({keys}: true)? loopguard replaces "
            "it. [y/N] "
        )
    except EOFError:
        return None
    return answer.strip().lower() in ("y", "yes")


def _error(message: str) -> int:
    print(f"loopguard: {message}", file=sys.stderr)
    return 2
