"""Load errors for message templates that do not parse or name unknown fields (`template`).

The template language itself (`{name}` fields, doubled braces) lives in
`loopguard.text.templates`, which the runtime fills; this module only places its
problems in the rules file.
"""

from __future__ import annotations

from typing import Any

from loopguard.config.positions import Path, PositionIndex
from loopguard.findings import Finding
from loopguard.text.templates import problems


def template_findings(data: dict[str, Any], index: PositionIndex) -> list[Finding]:
    """Errors for every bad template of the merged rules (global and per-agent `messages`)."""
    found: list[Finding] = []
    blocks: list[tuple[Path, Any]] = [((), data.get("messages"))]
    agents = data.get("agents")
    if isinstance(agents, dict):
        blocks += [
            (("agents", name), block.get("messages"))
            for name, block in agents.items()
            if isinstance(block, dict)
        ]
    for prefix, messages in blocks:
        for lang, texts in messages.items() if isinstance(messages, dict) else ():
            for key, text in texts.items() if isinstance(texts, dict) else ():
                if isinstance(text, str):
                    for problem in problems(key, text):
                        found.append(
                            index.finding(
                                data,
                                prefix + ("messages", lang, key),
                                "error",
                                problem,
                                "write fields as {message}; double a literal brace: {{ or }}",
                                "template",
                            )
                        )
    return found
