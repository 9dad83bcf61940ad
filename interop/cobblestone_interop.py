#!/usr/bin/env python3
"""Cobblestone (C2SP chunked encryption) between cipherio and
pyca/cryptography (`cryptography.cobblestone`), both directions.

    python3 interop/cobblestone_interop.py [--features aws-lc]

1. Runs itself in the venv of interop/native_interop.py (target/native-venv,
   the pinned interop/requirements.txt from PyPI), creating it if need be.
2. cipherio -> Python: `cargo run --release --example cobblestone_batch`
   (one batch process) encrypts random lengths around every 16 KiB boundary
   up to 4 chunks (and one of 40 chunks), for both instantiations, with an
   empty and a non-empty context, in uneven write sizes, on one thread and
   on two; pyca/cryptography decrypts each in uneven updates.
3. Python -> cipherio: pyca/cryptography encrypts the same sweep in uneven
   updates; cipherio decrypts each (one thread and two). Damaged copies
   (the final chunk cut off, a byte flipped, a wrong context) must fail in
   both.

With `--features aws-lc` the example is built with that cargo feature, so
that cipherio seals and opens with AWS-LC. Exits non-zero on any mismatch;
the last line is `N passed, M failed`. Everything it writes is under
target/cobblestone-interop/.
"""

import json
import os
import random
import shutil
import subprocess
import sys
from typing import Any

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import native_interop as ni  # noqa: E402  (the venv, the tally, plaintexts)

WORK = os.path.join(ni.TARGET, "cobblestone-interop")
EXAMPLE = os.path.join(ni.TARGET, "release", "examples", "cobblestone_batch")
CHUNK = 16 * 1024
HEADER, TAG = 56, 16
CONTEXTS = [b"", b"app/context\x00interop"]
WRITES = [[], [1, 7, CHUNK - 1, CHUNK + 1, 4096], [CHUNK], [5000, 3 * CHUNK + 2]]


def classes(inst: int) -> tuple[Any, Any]:
    from cryptography import cobblestone as cb
    if inst == 128:
        return cb.Cobblestone128Encryptor, cb.Cobblestone128Decryptor
    return cb.Cobblestone256Encryptor, cb.Cobblestone256Decryptor


def key_of(inst: int) -> bytes:
    return ni.plaintext(inst // 8, f"cobblestone interop key {inst}")


def pieces(data: bytes, sizes: list[int]) -> list[bytes]:
    """`data` cut in the sizes of `sizes` in turn (empty: one piece)."""
    if not sizes:
        return [data]
    out, i, at = [], 0, 0
    while at < len(data):
        n = sizes[i % len(sizes)]
        out.append(data[at:at + n])
        at, i = at + n, i + 1
    return out


def py_encrypt(inst: int, ctx: bytes, pt: bytes, sizes: list[int]) -> bytes:
    enc = classes(inst)[0](key_of(inst), ctx)
    return b"".join(enc.update(p) for p in pieces(pt, sizes)) + enc.finalize()


def py_decrypt(inst: int, ctx: bytes, ct: bytes, sizes: list[int]) -> bytes:
    dec = classes(inst)[1](key_of(inst), ctx)
    return b"".join(dec.update(p) for p in pieces(ct, sizes)) + dec.finalize()


def sweep() -> list[dict[str, Any]]:
    """Both instantiations and contexts; lengths: 0, and random ones
    within 40 bytes of every boundary up to 4 chunks (the boundary itself
    too), and one of about 40 chunks."""
    rng = random.Random(20261207)
    lengths = {0, 40 * CHUNK + rng.randrange(CHUNK)}
    for k in range(1, 5):
        lengths |= {k * CHUNK, k * CHUNK - 1, k * CHUNK + 1,
                    k * CHUNK + rng.randrange(-40, 41)}
    out = []
    for inst in (128, 256):
        for ci, ctx in enumerate(CONTEXTS):
            for n in sorted(lengths):
                i = len(out)
                out.append({"id": f"{inst}/ctx{ci}/n={n}/{i}", "inst": inst, "ctx": ctx, "n": n,
                            "writes": WRITES[i % len(WRITES)], "threads": 1 + i % 2})
    return out


def run_batch(jobs: list[dict[str, Any]], name: str) -> dict[str, dict[str, Any]]:
    path = os.path.join(WORK, name)
    with open(path, "w") as f:
        json.dump(jobs, f)
    r = ni.run([EXAMPLE, path])
    if r.returncode != 0:
        sys.exit(f"cobblestone_batch {path} failed: {r.stderr.strip()}")
    return {v.pop("id"): v for v in map(json.loads, r.stdout.splitlines())}


def job(op: str, c: dict[str, Any], src: str, dst: str, jid: str,
        ctx: bytes | None = None) -> dict[str, Any]:
    return {"id": jid, "op": op, "instantiation": c["inst"], "key": key_of(c["inst"]).hex(),
            "context": (c["ctx"] if ctx is None else ctx).hex(), "input": src, "output": dst,
            "writes": c["writes"], "threads": c["threads"]}


def path(c: dict[str, Any], tag: str) -> str:
    return os.path.join(WORK, f"{tag}_" + c["id"].replace("/", "_").replace("=", ""))


def cipherio_to_python(cases: list[dict[str, Any]], t: ni.Tally) -> None:
    jobs = []
    for c in cases:
        b = path(c, "c2p")
        with open(b + ".pt", "wb") as f:
            f.write(ni.plaintext(c["n"], "c2p/" + c["id"]))
        jobs.append(job("encrypt", c, b + ".pt", b + ".ct", c["id"]))
    results = run_batch(jobs, "c2p.json")
    for c in cases:
        b, cid = path(c, "c2p"), c["id"]
        section = f"cipherio -> Python (Cobblestone-{c['inst']})"
        if not results.get(cid, {}).get("ok", False):
            t.check(section, False, f"{cid}: cipherio failed to encrypt: {results.get(cid)}")
            continue
        pt, ct = open(b + ".pt", "rb").read(), open(b + ".ct", "rb").read()
        chunks = c["n"] // CHUNK + 1
        if not t.check(section, len(ct) == HEADER + c["n"] + chunks * TAG,
                       f"{cid}: {len(ct)} bytes"):
            continue
        try:
            got = py_decrypt(c["inst"], c["ctx"], ct, [1000, CHUNK + TAG, 3])
        except Exception as e:  # pyca raises its own error types
            t.check(section, False, f"{cid}: pyca refused it: {e!r}")
            continue
        t.check(section, got == pt, f"{cid}: pyca decrypted other bytes")


def python_to_cipherio(cases: list[dict[str, Any]], t: ni.Tally) -> None:
    jobs, expect = [], {}
    for c in cases:
        b = path(c, "p2c")
        pt = ni.plaintext(c["n"], "p2c/" + c["id"])
        ct = py_encrypt(c["inst"], c["ctx"], pt, c["writes"])
        with open(b + ".ct", "wb") as f:
            f.write(ct)
        jobs.append(job("decrypt", c, b + ".ct", b + ".out", c["id"]))
        expect[c["id"]] = (pt, b + ".out")
        bad = {
            # The final (short) chunk cut off: ends on a full chunk, or
            # after the header alone.
            "cut-final": (ct[:HEADER + (c["n"] // CHUNK) * (CHUNK + TAG)], c["ctx"]),
            "flipped": (ct[:len(ct) // 2] + bytes([ct[len(ct) // 2] ^ 4]) + ct[len(ct) // 2 + 1:],
                        c["ctx"]),
            "wrong-context": (ct, c["ctx"] + b"!"),
        }
        for name, (damaged, ctx) in bad.items():
            jid = f"{c['id']}/{name}"
            try:
                py_decrypt(c["inst"], ctx, damaged, [])
                t.check("Python, damaged", False, f"{jid}: pyca accepted it")
            except Exception:
                t.check("Python, damaged", True, jid)
            with open(b + f".{name}.ct", "wb") as f:
                f.write(damaged)
            jobs.append(job("decrypt", c, b + f".{name}.ct", b + f".{name}.out", jid, ctx))
            expect[jid] = (None, b + f".{name}.out")
    results = run_batch(jobs, "p2c.json")
    for jid, (want, out) in expect.items():
        got = results.get(jid, {})
        if want is not None:
            t.check("Python -> cipherio", got.get("ok", False) and open(out, "rb").read() == want,
                    f"{jid}: {got}")
        else:
            t.check("Python -> cipherio, damaged",
                    got.get("ok") is False and not os.path.exists(out), f"{jid}: {got}")


def main() -> int:
    if os.environ.get(ni.IN_VENV) != "1":
        ni.enter_venv(os.path.abspath(__file__))
    features = ni.cargo_features()
    print(f"== building the example {' '.join(features)}", flush=True)
    subprocess.run(["cargo", "build", "--release", "--example", "cobblestone_batch", *features],
                   cwd=ni.ROOT, check=True)
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    t = ni.Tally()
    cases = sweep()
    cipherio_to_python(cases, t)
    python_to_cipherio(cases, t)
    return t.report()


if __name__ == "__main__":
    sys.exit(main())
