"""pydantic-ai capability: `Agent(model, capabilities=[LoopGuard()])`.

Needs `pip install "loopguard-engine[pydantic-ai]"`. See docs/integrations.md.
"""

from loopguard.integrations._missing import needs

try:
    from loopguard.integrations.pydantic_ai.capability import LoopGuard
except ImportError as exc:  # the framework is not installed: say which extra brings it
    raise needs("pydantic-ai", exc) from exc

__all__ = ["LoopGuard"]
