#!/usr/bin/env python3
"""The native format (FORMAT.md) between cipherio and a second, independent
implementation written from FORMAT.md alone: interop/pycipherio.py, on
Python's `cryptography`.

    python3 interop/native_interop.py [--quick] [--features aws-lc]

1. Creates (once) a virtual environment under target/native-venv with the
   pinned interop/requirements.txt from PyPI, and runs itself in it.
2. Vectors: every case of tests/data/format_vectors.json through
   pycipherio: a positive case decrypts to its plaintext and re-encodes to
   its ciphertext byte for byte (from its header's salt and nonce prefix,
   and for a framed case its records, which for a writer's case must be the
   ones its flush points give); a negative case fails with the named error,
   its fields and its io::ErrorKind, having released exactly the case's
   `released` plaintext. Each case is read with its own reader limit and
   first segment index where it gives them.
3. cipherio -> Python: `cargo run --release --example native_format` (one
   batch process) encrypts a sweep of lengths around the segment
   boundaries, for every algorithm, several capacities, fixed and framed
   (with flushes), with and without associated data; pycipherio decrypts
   each stream and re-encodes it with the salt and nonce prefix cipherio
   drew, which must give cipherio's bytes exactly.
4. Python -> cipherio: pycipherio encrypts the same sweep (fresh random salt
   and prefix); cipherio decrypts each stream to the plaintext. Damaged
   copies (cut, extended, a byte flipped) must fail in cipherio with exactly
   the error pycipherio gives them.
5. Mutants (interop/header_mutants.py): pycipherio with each of its header
   checks skipped, swapped or moved in turn must fail at least one vector,
   but for the changes that cannot change any outcome.

With `--features aws-lc` the example is built with that cargo feature, so
that cipherio seals and opens with AWS-LC. Exits non-zero on any mismatch;
the last line is `N passed, M failed`. Everything it writes is under
target/native-interop/.
"""

import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
from typing import Any, Callable, Optional

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
VENV = os.path.join(TARGET, "native-venv")
WORK = os.path.join(TARGET, "native-interop")
REQUIREMENTS = os.path.join(ROOT, "interop", "requirements.txt")
VECTORS = os.path.join(ROOT, "tests", "data", "format_vectors.json")
EXAMPLE = os.path.join(TARGET, "release", "examples", "native_format")
IN_VENV = "CIPHERIO_NATIVE_INTEROP_VENV"

ALGORITHMS = ["AES-128-GCM", "AES-256-GCM", "ChaCha20-Poly1305"]
KEY_LEN = {"AES-128-GCM": 16, "AES-256-GCM": 32, "ChaCha20-Poly1305": 32}
AADS = [b"", b"cipherio-interop"]


def run(cmd: list[str], **kw: Any) -> subprocess.CompletedProcess:
    # A hang fails the check instead of stalling CI.
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kw)


def pinned() -> dict[str, str]:
    out = {}
    for line in open(REQUIREMENTS):
        line = line.split("#")[0].strip()
        if "==" in line:
            name, version = line.split("==")
            out[name.strip()] = version.strip()
    return out


def enter_venv(script: str = os.path.abspath(__file__)) -> None:
    """Re-runs `script` (this one by default) in the venv, creating it
    first if need be."""
    py = os.path.join(VENV, "bin", "python")
    want = pinned()["cryptography"]
    probe = "import cryptography; print(cryptography.__version__)"
    if not (os.path.exists(py) and run([py, "-c", probe]).stdout.strip() == want):
        print(f"== creating {VENV} with {REQUIREMENTS}", flush=True)
        shutil.rmtree(VENV, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", VENV], check=True)
        subprocess.run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                        "-r", REQUIREMENTS], check=True)
    os.execve(py, [py, script, *sys.argv[1:]], dict(os.environ, **{IN_VENV: "1"}))


class Tally:
    """Checks passed and failed, by section."""

    def __init__(self) -> None:
        self.sections: dict[str, list[int]] = {}
        self.failures: list[str] = []

    def check(self, section: str, ok: bool, what: str) -> bool:
        counts = self.sections.setdefault(section, [0, 0])
        counts[0 if ok else 1] += 1
        if not ok:
            self.failures.append(f"{section}: {what}")
        return ok

    def totals(self) -> tuple[int, int]:
        return (sum(c[0] for c in self.sections.values()),
                sum(c[1] for c in self.sections.values()))

    def report(self) -> int:
        """Prints the sections, the first failures and the closing line;
        the exit status."""
        for section, (ok, bad) in self.sections.items():
            print(f"  {section:45} {ok:5} passed {bad:3} failed")
        if self.failures:
            print(f"{len(self.failures)} FAILURES (first 30):")
            for f in self.failures[:30]:
                print("  " + f)
        passed, failed = self.totals()
        print(f"{passed} passed, {failed} failed")
        return 1 if failed else 0


def cargo_features() -> list[str]:
    """`--features X` from the command line, as cargo takes it."""
    if "--features" not in sys.argv:
        return []
    i = sys.argv.index("--features")
    if i + 1 >= len(sys.argv):
        sys.exit("--features needs a value")
    return ["--features", sys.argv[i + 1]]


def key_bytes(alg: str) -> bytes:
    return hashlib.sha256(f"native interop key {alg}".encode()).digest()[:KEY_LEN[alg]]


def plaintext(n: int, label: str) -> bytes:
    # Distinct bytes per case: a stream swapped between cases shows.
    out = bytearray()
    i = 0
    while len(out) < n:
        out += hashlib.sha256(f"{label}/{i}".encode()).digest()
        i += 1
    return bytes(out[:n])


def error_of(e: Exception) -> dict[str, Any]:
    return {"error": e.variant, "error_fields": e.fields, "io_error_kind": e.kind}


# ---------------------------------------------------------------------------
# 2. The vector file.
# ---------------------------------------------------------------------------

def check_vectors(pc: Any, t: Tally) -> None:
    data = json.load(open(VECTORS))
    limit = data["reader_max_segment_size"]
    for case in data["cases"]:
        cid = case["id"]
        section = f"vectors ({case['kind']})"
        key = pc.Key(case["algorithm"], bytes.fromhex(case["key"]))
        aad = bytes.fromhex(case["aad"])
        ct = bytes.fromhex(case["ciphertext"])
        first = case.get("first_index", 0)
        released = None
        try:
            got: Optional[bytes] = pc.decrypt(
                key, ct, aad=aad, max_segment_size=case.get("reader_max_segment_size", limit),
                first_index=first)
            err = None
        except pc.FormatError as e:
            got, err, released = None, error_of(e), e.released
        if case["kind"] == "negative":
            want = {k: case[k] for k in ("error", "error_fields", "io_error_kind")}
            t.check(section, err == want, f"{cid}: got {err or 'a plaintext'}, want {want}")
            # pycipherio releases a segment's plaintext as soon as it opens:
            # exactly the longest a streaming reader may release.
            t.check("vectors (released before the error)",
                    err is None or released == bytes.fromhex(case["released"]),
                    f"{cid}: released {len(released or b'')} bytes, "
                    f"want {len(case['released']) // 2}")
            continue
        pt = bytes.fromhex(case["plaintext"])
        ok = t.check(section, err is None and got == pt,
                     f"{cid}: {err['error'] if err else 'wrong plaintext'}")
        # Re-encode from the header's fields.
        h = case["header"]
        header = pc.Header(h["version"], h["algorithm"], h["segment_size"],
                           bytes.fromhex(h["salt"]), bytes.fromhex(h["nonce_prefix"]))
        if header.framed:
            records, start = [], 0
            for r in case["records"]:
                records.append(pt[start:start + r["len"]])
                start += r["len"]
            if case["writer"]:
                ok = ok and t.check("vectors (writer's records)",
                                    pc.writer_records(pt, header.segment_size,
                                                      case["flush_at"]) == records,
                                    f"{cid}: flushes do not give the records")
            again = pc.seal_records(key, header, records, aad)
        else:
            again = pc.seal_segments(key, header, pc.fixed_segments(pt, header.segment_size),
                                     aad, first)
        if ok:
            t.check("vectors (re-encoded)", again == ct, f"{cid}: re-encoded differently")


def check_mutants(pc: Any, t: Tally) -> None:
    """Every change to pycipherio's header checks that changes an outcome
    fails a vector (interop/header_mutants.py)."""
    import header_mutants
    results = header_mutants.run(pc, VECTORS)
    for name, dead in results:
        t.check("mutants: header checks", dead or name in header_mutants.EQUIVALENT,
                f"{name}: no vector fails when pycipherio's header checks are changed so")
    survivors = [name for name, dead in results if not dead]
    print(f"  header mutants: {len(results) - len(survivors)} of {len(results)} killed; "
          f"the survivors, each equivalent: {', '.join(survivors)}", flush=True)


# ---------------------------------------------------------------------------
# 3 and 4. Against cipherio.
# ---------------------------------------------------------------------------

def sweep(quick: bool) -> list[dict[str, Any]]:
    """The streams of both directions: algorithm, capacity, length, variant,
    associated data, flushes and write chunking."""
    caps = [7, 8192] if quick else [1, 7, 64, 1000, 8192, 65536]
    out = []
    for alg in ALGORITHMS:
        for cap in caps:
            ns = {0, 1, cap - 1, cap, cap + 1, 2 * cap, 3 * cap + 5}
            for n in sorted(x for x in ns if x >= 0):
                for framed in (False, True):
                    i = len(out)
                    flush_at: list[int] = []
                    if framed and n > 0:
                        # Twice at one offset: the second flush seals nothing.
                        flush_at = [n // 3, n // 3, n // 2] + ([n] if i % 2 else [])
                    chunk = [None, 7, 4096, 1][i % 4]
                    if chunk == 1 and n > 3000:
                        chunk = 13
                    v = "framed" if framed else "fixed"
                    out.append({
                        "id": f"{alg}/cap={cap}/n={n}/{v}", "alg": alg, "cap": cap, "n": n,
                        "framed": framed, "aad": AADS[i % 2], "flush_at": flush_at,
                        "chunk": chunk,
                    })
    return out


def job(op: str, c: dict[str, Any], src: str, dst: str, jid: str) -> dict[str, Any]:
    j = {"id": jid, "op": op, "algorithm": c["alg"], "key": key_bytes(c["alg"]).hex(),
         "aad": c["aad"].hex(), "input": src, "output": dst}
    if op == "encrypt":
        j.update(capacity=c["cap"], framed=c["framed"], flush_at=c["flush_at"])
        if c["chunk"]:
            j["chunk"] = c["chunk"]
    return j


def run_batch(jobs: list[dict[str, Any]], name: str) -> dict[str, dict[str, Any]]:
    path = os.path.join(WORK, name)
    with open(path, "w") as f:
        json.dump(jobs, f)
    r = run([EXAMPLE, "batch", path])
    if r.returncode != 0:
        sys.exit(f"native_format batch {path} failed: {r.stderr.strip()}")
    results = {}
    for line in r.stdout.splitlines():
        v = json.loads(line)
        results[v.pop("id")] = v
    return results


def base(c: dict[str, Any], tag: str) -> str:
    return os.path.join(WORK, f"{tag}_" + c["id"].replace("/", "_").replace("=", ""))


def cipherio_to_python(pc: Any, cases: list[dict[str, Any]], t: Tally) -> None:
    jobs = []
    for c in cases:
        b = base(c, "c2p")
        with open(b + ".pt", "wb") as f:
            f.write(plaintext(c["n"], "c2p/" + c["id"]))
        jobs.append(job("encrypt", c, b + ".pt", b + ".ct", c["id"]))
    results = run_batch(jobs, "c2p.json")
    for c in cases:
        b, cid = base(c, "c2p"), c["id"]
        section = "cipherio -> Python (" + ("framed" if c["framed"] else "fixed") + ")"
        if not results.get(cid, {}).get("ok", False):
            t.check(section, False, f"{cid}: cipherio failed to encrypt: {results.get(cid)}")
            continue
        pt = open(b + ".pt", "rb").read()
        ct = open(b + ".ct", "rb").read()
        key = pc.Key(c["alg"], key_bytes(c["alg"]))
        try:
            got = pc.decrypt(key, ct, aad=c["aad"])
        except pc.FormatError as e:
            t.check(section, False, f"{cid}: pycipherio refused it: {e}")
            continue
        if not t.check(section, got == pt, f"{cid}: pycipherio decrypted other bytes"):
            continue
        # The one encoding (fixed), or the writer's cut (framed), for the
        # salt and prefix cipherio drew.
        salt, prefix = ct[14:46], ct[46:53]
        if c["framed"]:
            again = pc.encrypt_framed(key, pt, flush_at=c["flush_at"], segment_size=c["cap"],
                                      aad=c["aad"], salt=salt, nonce_prefix=prefix)
        else:
            again = pc.encrypt(key, pt, segment_size=c["cap"], aad=c["aad"], salt=salt,
                               nonce_prefix=prefix)
        t.check(section + " byte for byte", again == ct,
                f"{cid}: pycipherio's encoding differs from cipherio's")


def damaged(ct: bytes, rng: random.Random) -> list[tuple[str, bytes]]:
    """Two damaged copies: cut at a random point or by one byte, extended by
    a byte, or a random byte flipped."""
    kinds: list[tuple[str, Callable[[], bytes]]] = [
        ("cut-1", lambda: ct[:-1]),
        ("cut", lambda: ct[:rng.randrange(len(ct))]),
        ("extended", lambda: ct + bytes([rng.randrange(256)])),
        ("flipped", lambda: (lambda i: ct[:i] + bytes([ct[i] ^ (1 << rng.randrange(8))])
                             + ct[i + 1:])(rng.randrange(len(ct)))),
    ]
    return [(name, make()) for name, make in rng.sample(kinds, 2)]


def python_to_cipherio(pc: Any, cases: list[dict[str, Any]], t: Tally) -> None:
    rng = random.Random(20240601)
    jobs, expect = [], {}
    for c in cases:
        b = base(c, "p2c")
        pt = plaintext(c["n"], "p2c/" + c["id"])
        key = pc.Key(c["alg"], key_bytes(c["alg"]))
        if c["framed"]:
            ct = pc.encrypt_framed(key, pt, flush_at=c["flush_at"], segment_size=c["cap"],
                                   aad=c["aad"])
        else:
            ct = pc.encrypt(key, pt, segment_size=c["cap"], aad=c["aad"])
        with open(b + ".ct", "wb") as f:
            f.write(ct)
        jobs.append(job("decrypt", c, b + ".ct", b + ".out", c["id"]))
        expect[c["id"]] = ("ok", pt, b + ".out")
        for name, bad in damaged(ct, rng):
            jid = f"{c['id']}/{name}"
            try:
                pc.decrypt(key, bad, aad=c["aad"])
                t.check("Python, damaged", False, f"{jid}: pycipherio accepted it")
                continue
            except pc.FormatError as e:
                want = error_of(e)
            with open(b + f".{name}.ct", "wb") as f:
                f.write(bad)
            jobs.append(job("decrypt", c, b + f".{name}.ct", b + f".{name}.out", jid))
            expect[jid] = ("error", want, b + f".{name}.out")
    results = run_batch(jobs, "p2c.json")
    for jid, (what, want, out) in expect.items():
        got = results.get(jid, {})
        variant = "framed" if "/framed" in jid else "fixed"
        if what == "ok":
            t.check(f"Python -> cipherio ({variant})",
                    got.get("ok", False) and open(out, "rb").read() == want,
                    f"{jid}: {got}")
        else:
            got_err = {k: got.get(k) for k in ("error", "error_fields", "io_error_kind")}
            t.check(f"Python -> cipherio, damaged ({variant})",
                    got_err == want and not os.path.exists(out),
                    f"{jid}: cipherio gave {got_err}, pycipherio {want}")


def main() -> int:
    if os.environ.get(IN_VENV) != "1":
        enter_venv()
    quick = "--quick" in sys.argv
    features = cargo_features()
    sys.path.insert(0, os.path.join(ROOT, "interop"))
    sys.dont_write_bytecode = True  # no __pycache__ in the source tree
    import pycipherio as pc

    print(f"== building the example {' '.join(features)}", flush=True)
    subprocess.run(["cargo", "build", "--release", "--example", "native_format", *features],
                   cwd=ROOT, check=True)
    # Fresh every run: a stale file must never stand in for one that a
    # broken build failed to write.
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    t = Tally()
    check_vectors(pc, t)
    check_mutants(pc, t)
    cases = sweep(quick)
    cipherio_to_python(pc, cases, t)
    python_to_cipherio(pc, cases, t)
    return t.report()


if __name__ == "__main__":
    sys.exit(main())
