"""Do the vectors pin down FORMAT.md's header rules? Each mutant is
pycipherio with one change to its header checks (FORMAT.md section 8): a
rule skipped, two rules swapped, a rule moved to the front or to the back,
one of H5-H8 skipped on one variant only, the framed cap on the segment
size dropped, or the segment index limit moved by one. A mutant is killed when at least one case of the vector file
gets another outcome from it (another plaintext, error, error field or
released plaintext, or no outcome at all: the decoder breaks).

Run by interop/native_interop.py (in its venv); `run` gives each mutant
and whether it was killed. A surviving mutant that is not one of
EQUIVALENT is a rule no vector checks.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Iterator

# Changes that give every input the outcome it had, so that no vector can
# kill them (FORMAT.md 8.1): swaps of rules that no input breaks together,
# and H1 moved or skipped (an input that breaks H1 passes H2 and breaks H3,
# which gives the same error; H1 tells a streaming reader that it cannot
# call such an input bad magic yet).
EQUIVALENT = {"swap H1 H2", "swap H6 H7", "skip H1", "H1 last"}


def outcome(pc: Any, case: dict[str, Any], limit: int) -> tuple:
    """What pycipherio gives a case: its plaintext, or its error with the
    plaintext released before it."""
    key = pc.Key(case["algorithm"], bytes.fromhex(case["key"]))
    try:
        return ("ok", pc.decrypt(key, bytes.fromhex(case["ciphertext"]),
                                 aad=bytes.fromhex(case["aad"]),
                                 max_segment_size=case.get("reader_max_segment_size", limit),
                                 first_index=case.get("first_index", 0)))
    except pc.FormatError as e:
        return ("error", e.variant, e.fields, e.kind, e.released)


def expected(case: dict[str, Any]) -> tuple:
    if case["kind"] == "positive":
        return ("ok", bytes.fromhex(case["plaintext"]))
    return ("error", case["error"], case["error_fields"], case["io_error_kind"],
            bytes.fromhex(case["released"]))


def mutants(pc: Any) -> Iterator[tuple[str, Callable[[], None]]]:
    """(name, apply): `apply` changes pycipherio; the caller restores it."""
    rules = list(pc.HEADER_RULES)
    names = [f"H{i + 1}" for i in range(len(rules))]

    def order(new: list) -> Callable[[], None]:
        return lambda: setattr(pc, "HEADER_RULES", new)

    seen = {tuple(rules)}
    candidates = []
    for i, name in enumerate(names):
        candidates.append((f"skip {name}", rules[:i] + rules[i + 1:]))
    for i in range(len(rules)):
        for j in range(i + 1, len(rules)):
            r = list(rules)
            r[i], r[j] = r[j], r[i]
            candidates.append((f"swap {names[i]} {names[j]}", r))
    for i, name in enumerate(names):
        rest = rules[:i] + rules[i + 1:]
        candidates.append((f"{name} first", [rules[i]] + rest))
        candidates.append((f"{name} last", rest + [rules[i]]))
    for name, r in candidates:
        if tuple(r) not in seen:
            seen.add(tuple(r))
            yield name, order(r)
    for i in range(4, len(rules)):
        for version, variant in ((pc.VERSION_FIXED, "fixed"), (pc.VERSION_FRAMED, "framed")):
            def only_other(data: bytes, key: Any, limit: int, rule: Callable = rules[i],
                           version: int = version) -> Any:
                return None if len(data) > 8 and data[8] == version else rule(data, key, limit)
            yield (f"skip {names[i]} on {variant}",
                   order(rules[:i] + [only_other] + rules[i + 1:]))
    yield "no framed cap", lambda: setattr(pc, "FRAMED_MAX_SEGMENT_SIZE", (1 << 32) - 1)
    yield "index limit 2^32 - 1", lambda: setattr(pc, "INDEX_LIMIT", (1 << 32) - 1)


def killed(pc: Any, cases: list[dict[str, Any]], limit: int) -> bool:
    for case in cases:
        try:
            if outcome(pc, case, limit) != expected(case):
                return True
        except Exception:  # a decoder that breaks on a case fails it
            return True
    return False


def run(pc: Any, vectors: str) -> list[tuple[str, bool]]:
    """Each mutant's name and whether a vector killed it."""
    data = json.load(open(vectors))
    cases, limit = data["cases"], data["reader_max_segment_size"]
    saved = {k: getattr(pc, k) for k in ("HEADER_RULES", "FRAMED_MAX_SEGMENT_SIZE",
                                         "INDEX_LIMIT")}
    assert not killed(pc, cases, limit), "pycipherio itself fails a vector"
    results = []
    for name, apply in mutants(pc):
        apply()
        try:
            results.append((name, killed(pc, cases, limit)))
        finally:
            for k, v in saved.items():
                setattr(pc, k, v)
    return results
