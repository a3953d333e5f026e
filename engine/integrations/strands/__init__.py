"""Strands Agents hooks: `Agent(model, tools=[...], hooks=[LoopGuardHooks()])`.

Needs `pip install "loopguard-engine[strands]"`. See docs/integrations.md.
"""

from loopguard.integrations._missing import needs

try:
    from loopguard.integrations.strands.hooks import LoopGuardHooks
except ImportError as exc:  # the framework is not installed: say which extra brings it
    raise needs("strands", exc) from exc

__all__ = ["LoopGuardHooks"]
