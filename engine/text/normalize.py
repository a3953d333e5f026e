"""Text normalisation shared by the keyword matcher and the rules checks (`turn.normalize`).

Steps always run in this order whatever the order listed: `nfkc` (Unicode NFKC),
`fold_punctuation` (CJK and full-width punctuation to ASCII look-alikes), `lower`,
`strip`. Lint's duplicate-keyword check uses the same `Normalizer` as the matcher, so the
two cannot disagree on which keywords are the same.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

from loopguard.errors import rules_error

NORMALIZE_STEPS = ("nfkc", "fold_punctuation", "lower", "strip")
_PUNCT_FOLD = str.maketrans(
    {
        "。": ".",
        "．": ".",
        "，": ",",
        "、": ",",
        "！": "!",
        "？": "?",
        "：": ":",
        "；": ";",
        "“": '"',
        "”": '"',
        "„": '"',
        "‘": "'",
        "’": "'",
        "（": "(",
        "）": ")",
        "【": "[",
        "】": "]",
        "「": '"',
        "」": '"',
        "『": '"',
        "』": '"',
        "《": "<",
        "》": ">",
        "〈": "<",
        "〉": ">",
        "～": "~",
        "—": "-",
        "–": "-",
        "…": "...",
        "·": ".",
        "｜": "|",
    }
)


def whole_text(text: str) -> str:
    """`text` with each lone surrogate (half an emoji, from cut-off model output) as "?".

    The automaton needs text that UTF-8 can encode; one "?" per surrogate keeps
    character offsets, so keyword positions still point into the original.
    """
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


class Normalizer:
    """Applies the `turn.normalize` steps; the same instance serves keywords and texts."""

    def __init__(self, steps: Iterable[str] = ("strip", "lower")) -> None:
        chosen = list(steps)
        for step in chosen:
            if step not in NORMALIZE_STEPS:
                raise rules_error(
                    f"unknown normalisation step {step!r}",
                    "turn.normalize",
                    f"use some of {', '.join(NORMALIZE_STEPS)}",
                )
        self.steps = tuple(s for s in NORMALIZE_STEPS if s in chosen)
        self.folds = "fold_punctuation" in self.steps

    def __call__(self, text: str) -> str:
        for step in self.steps:
            if step == "nfkc":
                text = unicodedata.normalize("NFKC", text)
            elif step == "fold_punctuation":
                text = text.translate(_PUNCT_FOLD)
            elif step == "lower":
                text = text.lower()
            else:
                text = text.strip()
        return whole_text(text)

    def equality_key(self, normalised: str) -> str:
        """The form compared by `text_equals` (edge punctuation dropped when folding)."""
        if not self.folds:
            return normalised
        return normalised.strip().strip("!\"'(),-.:;<>?[]~|").strip()
