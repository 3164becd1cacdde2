"""Did-you-mean for sysctl keys: the key of the target kernel a key not in the catalog is one
slip away from (check.misspelt-key), by optimal string alignment over an index of the names."""

from __future__ import annotations


def _edits(a: str, b: str, limit: int) -> int:
    """The optimal-string-alignment distance between `a` and `b` (a letter inserted, dropped,
    changed, or two swapped count one edit each), or limit + 1 once it is sure to exceed it.
    What the two share at the start and at the end costs nothing and is left out first: a
    key and a name of the same family differ in a few letters of one field."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    shorter = min(len(a), len(b))
    start = 0
    while start < shorter and a[start] == b[start]:
        start += 1
    end = 0
    while end < shorter - start and a[-1 - end] == b[-1 - end]:
        end += 1
    a, b = a[start : len(a) - end], b[start : len(b) - end]
    # Row i holds the distances from a[:i] to b[:j]; a cell further than `limit` from the
    # diagonal is more than `limit` edits away, so only the band around it is worked out
    # (the rest stays at limit + 1, as does any cell past the limit).
    over = limit + 1
    before: list[int] = []
    row = [j if j <= limit else over for j in range(len(b) + 1)]
    for i in range(1, len(a) + 1):
        current = [over] * (len(b) + 1)
        if i <= limit:
            current[0] = i
        for j in range(max(1, i - limit), min(len(b), i + limit) + 1):
            edit = min(row[j] + 1, current[j - 1] + 1, row[j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                edit = min(edit, before[j - 2] + 1)
            current[j] = min(edit, over)
        if min(current) > limit:
            return over
        before, row = row, current
    return row[-1]


class NearKeys:
    """The names a key not in the catalog may have been meant as (`Catalog.kernel_keys`: a
    `*` there takes the key's own field, an interface name), indexed once, so that a key is
    aligned with few of them: only with the names as long as it give or take the edits
    allowed, and of those only with the ones whose letters it could reach: an edit adds at
    most one letter the other lacks and takes away at most one (a swap none), so two names
    whose sets of letters differ in more than twice the edits allowed are never that close."""

    def __init__(self, names: list[str]) -> None:
        self.compared = 0  # keys looked up
        self._by_length: dict[int, list[tuple[int, str, frozenset[str]]]] = {}
        self._patterns: dict[int, list[tuple[int, list[str]]]] = {}
        for order, name in enumerate(names):
            if "*" in name:
                parts = name.split(".")
                self._patterns.setdefault(len(parts), []).append((order, parts))
            else:
                entry = (order, name, frozenset(name))
                self._by_length.setdefault(len(name), []).append(entry)

    def nearest(self, key: str) -> str | None:
        """The name `key` was probably meant to be: one within one edit of it, two when its
        last field is ten characters or more; the closest (the first listed of equals), None
        when none is that close. A real key that differs by more (udp_mem and tcp_mem, send_
        and secure_redirects) is not taken for a typo."""
        self.compared += 1
        fields = key.split(".")
        limit = 1 if len(fields[-1]) < 10 else 2
        letters = frozenset(key)
        candidates = [
            (order, name)
            for length in range(len(key) - limit, len(key) + limit + 1)
            for order, name, its_letters in self._by_length.get(length, ())
            if len(letters ^ its_letters) <= 2 * limit
        ]
        for order, parts in self._patterns.get(len(fields), ()):
            name = ".".join(f if p == "*" else p for p, f in zip(parts, fields, strict=True))
            if abs(len(name) - len(key)) <= limit and len(letters ^ frozenset(name)) <= 2 * limit:
                candidates.append((order, name))
        best: tuple[int, int, str] | None = None
        for order, name in candidates:
            distance = _edits(key, name, limit)
            if distance <= limit and (best is None or (distance, order) < best[:2]):
                best = (distance, order, name)
        return best[2] if best is not None else None


def nearest_key(key: str, names: list[str]) -> str | None:
    """NearKeys(names).nearest(key): for one key; a checker keeps its index for all."""
    return NearKeys(names).nearest(key)
