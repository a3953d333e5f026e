"""CrewAI global hooks: `LoopGuard().register()` guards every crew and agent of the process.

Needs `pip install "loopguard-engine[crewai]"`. See docs/integrations.md.
"""

from loopguard.integrations._missing import needs

try:
    from loopguard.integrations.crewai.hooks import LoopGuard
except ImportError as exc:  # the framework is not installed: say which extra brings it
    raise needs("crewai", exc) from exc

__all__ = ["LoopGuard"]
