"""pydantic-ai capability: `Agent(model, capabilities=[LoopGuard()])`.

Needs `pip install "loopguard-engine[pydantic-ai]"`. See docs/integrations.md.
"""

from .capability import LoopGuard

__all__ = ["LoopGuard"]
