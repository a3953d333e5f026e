"""The entry point: a loaded rules document, the detector registry and a session store.

A `Guard` compiles one policy per agent (lazily, once) and hands out `Session`
handles that share it. Its constructors load the rules through `loopguard.config.layers`
(every layer validated once, with positions), so a bad rules file fails here with a
`RulesError` naming file, line and column; the `RulesDocument` that loading produces is
used as is, and per-agent policies only merge and repair (`effective_config`), never
validate again. The loader is imported on first use: it is about a third of the cost of
`import loopguard`, and a host guarding calls pays it when it loads rules.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping
from typing import Any

from loopguard.config.source import RulesDocument, effective_config
from loopguard.detection.plugins import Registry, load_registry
from loopguard.policy.compile import CompiledPolicy, compile_policy
from loopguard.session.notifier import PluginNotifier
from loopguard.session.session import Session
from loopguard.session.stored import StoredSession
from loopguard.state.history import SessionState
from loopguard.state.store import MemoryStore, SessionStore
from loopguard.stores import store_from_config
from loopguard.stores.versioned import VersionedStore

log = logging.getLogger("loopguard")
MAX_REPORTED_AGENTS = 100  # unknown agent names logged (and remembered) per Guard


class Guard:
    """Shared by every session of a host process; thread-safe."""

    def __init__(
        self,
        document: RulesDocument | Mapping[str, Any],
        *,
        registry: Registry | None = None,
        store: SessionStore | None = None,
        source: str | None = None,
    ) -> None:
        """`document`: what `loopguard.config.layers` returns (validated, used as is), or a
        rules dict taken as already valid: nothing checks it (the engine still refuses
        dangerous values, see docs/limits.md). `source` names it in messages (default: the
        document's source, else `<mapping>`)."""
        if isinstance(document, RulesDocument):
            source = document.source if source is None else source
            document = document.data
        self.document = document
        self.source = source if source is not None else "<mapping>"
        self.registry = registry if registry is not None else load_registry()
        if store is None and isinstance(
            document.get("store"), Mapping
        ):  # the rules' `store:` block
            store = store_from_config(document["store"], self.source)
        self.store: SessionStore = store if store is not None else MemoryStore()
        self._policies: dict[str | None, CompiledPolicy] = {}
        self._lock = threading.Lock()
        # what sessions report to: `loopguard_on_decision` listeners and the fault log
        self.notifier = PluginNotifier(
            self.registry.plugin_manager.hook.loopguard_on_decision, self.source
        )
        self._reported_agents: set[str] = set()

    # -- construction ------------------------------------------------------
    @classmethod
    def default(cls, **kwargs: Any) -> Guard:
        """The bundled default rules (`builtin:default`)."""
        from loopguard.config.layers import load

        return cls(
            load({"version": 1}, "mapping", "builtin:default"),
            source="builtin:default",
            **kwargs,
        )

    @classmethod
    def from_file(
        cls, path: str | os.PathLike[str], *, allow_extends_outside: bool = False, **kwargs: Any
    ) -> Guard:
        """Rules from a YAML (or OpenClaw JSON5) file.

        `extends:` paths must stay inside the file's folder tree unless
        `allow_extends_outside=True` (see docs/limits.md). Lint-only checks do not run
        here (`loopguard lint` runs them).
        """
        from loopguard.config.layers import load

        rules = load(path, allow_extends_outside=allow_extends_outside)
        return cls(rules, source=os.fspath(path), **kwargs)

    @classmethod
    def from_yaml(
        cls,
        text: str,
        name: str = "<string>",
        *,
        allow_extends_outside: bool = False,
        **kwargs: Any,
    ) -> Guard:
        """Rules from YAML text (`extends:` paths confined to the working directory's tree)."""
        from loopguard.config.layers import load

        rules = load(text, "text", name, allow_extends_outside)
        return cls(rules, source=name, **kwargs)

    @classmethod
    def from_dict(
        cls, mapping: Mapping[str, Any], *, allow_extends_outside: bool = False, **kwargs: Any
    ) -> Guard:
        """Rules from a mapping with the same keys as a rules file."""
        from loopguard.config.layers import load

        kwargs.setdefault("source", "<mapping>")
        return cls(load(mapping, "mapping", allow_extends_outside=allow_extends_outside), **kwargs)

    # -- sessions ----------------------------------------------------------
    def policy(self, agent: str | None = None) -> CompiledPolicy:
        """The compiled policy for an agent (its overrides merged and repaired).

        An agent without an override block shares the global policy, so arbitrary
        agent names never grow the cache.
        """
        if self.unknown_agent(agent):
            agent = None
        policy = self._policies.get(agent)
        if policy is None:
            with self._lock:
                policy = self._policies.get(agent)
                if policy is None:
                    config, _repairs = effective_config(dict(self.document), agent)
                    policy = compile_policy(config, self.registry)
                    self._policies[agent] = policy
        return policy

    def unknown_agent(self, agent: str | None, log_it: bool = True) -> bool:
        """True when `agent` is named but has no block under `agents` (it gets the global rules).

        Each such name is reported once: logged at WARNING, or only remembered with
        `log_it=False` (the CLI prints its own warning). At most `MAX_REPORTED_AGENTS`
        names are remembered, so arbitrary names never grow memory without bound.
        """
        if agent is None or agent in (self.document.get("agents") or {}):
            return False
        if agent not in self._reported_agents and len(self._reported_agents) < MAX_REPORTED_AGENTS:
            self._reported_agents.add(agent)
            if log_it:
                log.warning(
                    "loopguard: agent %r has no block under agents in %s; it runs with "
                    "the global rules",
                    agent,
                    self.source,
                )
        return True

    def session(self, session_id: str, agent: str | None = None) -> Session:
        """A handle on one session; the same id (and agent) shares state."""
        policy = self.policy(agent)
        key = session_id if agent is None else f"{agent}\x00{session_id}"
        if isinstance(self.store, VersionedStore):  # a shared store: state read per call
            return StoredSession(self.notifier, session_id, agent, policy, self.store, key)
        state = self.store.get(key, lambda: SessionState(policy.history_size, policy.indexed))
        return Session(self.notifier, session_id, agent, policy, state)
