"""Did-you-mean for a name the user typed: the known names closest to it (difflib's ratio),
so a refusal names the one or few meant instead of every name there is."""

from __future__ import annotations

import difflib
import heapq
from collections.abc import Iterable, Mapping

from sysctl_advisor.model.errors import InputError

CUTOFF = 0.6  # difflib's own: a name less alike is no suggestion
MARGIN = 0.1  # a second or third name is shown only this close to the closest


def nearest_names(word: str, names: Iterable[str], n: int = 3) -> list[str]:
    """Up to `n` of `names` closest to `word`, closest first, as difflib.get_close_matches
    finds them; of those only the ones about as close as the closest (within MARGIN), so a
    typo of one name is not shown two others merely alike."""
    matcher = difflib.SequenceMatcher()
    matcher.set_seq2(word)
    scored = []
    for name in map(str, names):
        matcher.set_seq1(name)
        if matcher.real_quick_ratio() < CUTOFF or matcher.quick_ratio() < CUTOFF:
            continue
        ratio = matcher.ratio()
        if ratio >= CUTOFF:
            scored.append((ratio, name))
    best = heapq.nlargest(n, scored)
    return [name for score, name in best if score >= best[0][0] - MARGIN]


def nearest_name(word: str, names: Iterable[str]) -> str | None:
    """The name among `names` closest to `word`, or None."""
    found = nearest_names(word, names, n=1)
    return found[0] if found else None


def did_you_mean(word: str, names: Iterable[str] | Mapping[str, str], n: int = 1) -> str:
    """` (did you mean A, B or C?)` for the up to `n` closest names, or "" for none. A mapping
    gives each name a spelling may be a slip of (a short name) the name it stands for."""
    close = nearest_names(word, names, n)
    if isinstance(names, Mapping):
        close = list(dict.fromkeys(names[name] for name in close))
    if not close:
        return ""
    said = close[0] if len(close) == 1 else f"{', '.join(close[:-1])} or {close[-1]}"
    return f" (did you mean {said}?)"


def unknown_name(
    kind: str, word: str, names: Iterable[str] | Mapping[str, str], field: str, listed: str
) -> InputError:
    """The refusal of a `kind` (key, profile, rule) named `word` that is none of `names`:
    the closest three, else where they are all listed."""
    hint = did_you_mean(word, names, n=3) or f" (none is close; {listed})"
    return InputError(f"unknown {kind} {word!r}{hint}", field=field)
