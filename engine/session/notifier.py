"""Where a session reports what happened: decisions to listeners, plugin faults to the log.

The `Guard` builds one `PluginNotifier` from its registry and passes it to every session it
hands out, so a `Session` needs nothing else of the Guard (it never imports it). A session
calls `decision` only for non-allow decisions; with no `loopguard_on_decision` listener
registered that call returns at once, so the guarded call pays nothing for it.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from loopguard.decision import Decision
from loopguard.text.hints import error_text

log = logging.getLogger("loopguard")
_ARGS = ("session_id", "decision", "rules_source")  # what `loopguard_on_decision` is given


def _picks(indexes: tuple[int, ...]) -> tuple[int, ...] | None:
    """Which of `_ARGS` a listener declares, in its order; None for all of them as they are."""
    return None if indexes == tuple(range(len(_ARGS))) else indexes


class Notifier(Protocol):
    """What a session reports to: its decisions and the faults of plugin code it ran."""

    def decision(self, session_id: str, decision: Decision) -> None:
        """A decision was made (sessions skip `allow`)."""

    def fault(self, source: str, error: str) -> None:
        """Plugin code named `source` (`package[entry]`) failed and was isolated."""


class PluginNotifier:
    """Hands decisions to `loopguard_on_decision` plugins; logs each failing plugin once."""

    def __init__(self, hook: Any, rules_source: str = "<mapping>") -> None:
        """`hook` is the plugin manager's `loopguard_on_decision` hook caller; `rules_source`
        names the Guard's rules for the listeners."""
        self._hook = hook
        self.rules_source = rules_source
        self._impls = hook.get_hookimpls()
        self.listening = bool(self._impls)
        # Plain listeners are called directly, in the plugin manager's order (newest first)
        # and with the arguments each declares: its hook call costs several times the listener.
        plain = not any(
            impl.hookwrapper
            or getattr(impl, "wrapper", False)
            or not set(impl.argnames) <= set(_ARGS)
            for impl in self._impls
        )
        self._direct = (
            [
                (impl.function, _picks(tuple(_ARGS.index(name) for name in impl.argnames)))
                for impl in reversed(self._impls)
            ]
            if plain
            else None
        )
        self._faulted: set[str] = set()

    def decision(self, session_id: str, decision: Decision) -> None:
        """Call the listeners with a non-allow decision; a listener that fails is a fault."""
        if not self.listening or decision.action == "allow":
            return
        try:
            direct = self._direct
            if direct is not None and self._hook.get_hookimpls() == self._impls:
                given = (session_id, decision, self.rules_source)
                for listener, picks in direct:
                    listener(*(given if picks is None else [given[i] for i in picks]))
                return
            self._hook(session_id=session_id, decision=decision, rules_source=self.rules_source)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 — a listener (even sys.exit) must not break the host
            self.fault("loopguard_on_decision", error_text(exc))

    def fault(self, source: str, error: str) -> None:
        """Log a failing plugin once per source, so an isolated fault is never silent."""
        if source in self._faulted:
            return
        self._faulted.add(source)
        log.error(
            "loopguard plugin %s failed and was isolated: %s (later failures of it "
            "are not logged again)",
            source,
            error,
        )
