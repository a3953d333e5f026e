"""Google ADK plugin: `App(name=..., root_agent=agent, plugins=[LoopGuardPlugin()])`.

Needs `pip install "loopguard-engine[google-adk]"`. See docs/integrations.md.
"""

from loopguard.integrations._missing import needs

try:
    from loopguard.integrations.google_adk.plugin import LoopGuardPlugin
except ImportError as exc:  # the framework is not installed: say which extra brings it
    raise needs("google-adk", exc) from exc

__all__ = ["LoopGuardPlugin"]
