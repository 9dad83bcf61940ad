#!/usr/bin/env python3
"""Cobblestone-128 speed: pyca/cryptography's streaming API beside
cipherio on one thread, in one run.

    python3 interop/cobblestone_speed.py [--features aws-lc] [--rounds N]

Runs itself in the venv of interop/native_interop.py (pinned
pyca/cryptography from PyPI). Each round times, one after the other,
pyca/cryptography encrypting 4 updates of 64 MiB (`update`, then
`finalize`) and decrypting the result in 64 MiB updates, and cipherio
doing the same through `cargo run --release --example cobblestone_speed`
(`write_all` of 64 MiB pieces into a `CipherWriter<Vec<u8>>`, `read`
into a 64 MiB buffer from a `CipherReader<&[u8]>`; its own clock, so
process start, the payload and its output buffers, touched beforehand,
are outside; pyca/cryptography allocates the bytes each update returns,
which its API cannot avoid, inside the clock). Prints GB/s per
round, then the median and spread over the rounds.
"""

import os
import statistics
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import native_interop as ni  # noqa: E402  (the venv)

UPDATE = 64 << 20
UPDATES = 4
EXAMPLE = os.path.join(ni.TARGET, "release", "examples", "cobblestone_speed")


def pyca() -> tuple[float, float]:
    from cryptography import cobblestone as cb
    key, piece = os.urandom(16), b"\x5a" * UPDATE
    t = time.perf_counter()
    enc = cb.Cobblestone128Encryptor(key, b"")
    sealed = b"".join([enc.update(piece) for _ in range(UPDATES)] + [enc.finalize()])
    encrypt = time.perf_counter() - t
    t = time.perf_counter()
    dec = cb.Cobblestone128Decryptor(key, b"")
    opened = 0
    for at in range(0, len(sealed), UPDATE):
        opened += len(dec.update(sealed[at:at + UPDATE]))
    opened += len(dec.finalize())
    decrypt = time.perf_counter() - t
    assert opened == UPDATE * UPDATES
    return encrypt, decrypt


def cipherio() -> tuple[float, float]:
    r = ni.run([EXAMPLE, str(UPDATE), str(UPDATES)])
    if r.returncode != 0:
        sys.exit(f"cobblestone_speed failed: {r.stderr.strip()}")
    encrypt, decrypt = map(float, r.stdout.split())
    return encrypt, decrypt


def main() -> None:
    args = sys.argv[1:]
    rounds = int(args[args.index("--rounds") + 1]) if "--rounds" in args else 5
    features = ["--features", "aws-lc"] if "aws-lc" in args else []
    subprocess.run(["cargo", "build", "--release", "--quiet", "--example", "cobblestone_speed",
                    *features], cwd=ni.ROOT, check=True)
    gb = UPDATE * UPDATES / 1e9
    speeds: dict[str, list[float]] = {}
    for r in range(rounds):
        order = [("pyca", pyca), ("cipherio", cipherio)]
        for name, f in order if r % 2 == 0 else order[::-1]:
            encrypt, decrypt = f()
            speeds.setdefault(f"{name} encrypt", []).append(gb / encrypt)
            speeds.setdefault(f"{name} decrypt", []).append(gb / decrypt)
            print(f"round {r + 1}: {name}: encrypt {gb / encrypt:.2f} GB/s, "
                  f"decrypt {gb / decrypt:.2f} GB/s", flush=True)
    from cryptography import __version__
    provider = "AWS-LC" if features else "RustCrypto"
    print(f"\nCobblestone-128, {UPDATES} updates of {UPDATE >> 20} MiB, {rounds} rounds "
          f"(pyca/cryptography {__version__}, cipherio with {provider}); median (min-max):")
    for name, v in speeds.items():
        print(f"  {name:18} {statistics.median(v):6.2f} GB/s ({min(v):.2f}-{max(v):.2f})")


if __name__ == "__main__":
    if os.environ.get(ni.IN_VENV) != "1":
        ni.enter_venv(os.path.abspath(__file__))
    main()
