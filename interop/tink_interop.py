#!/usr/bin/env python3
"""The Tink profiles against real Google Tink, both directions, for both of
Tink's streaming key types: AES-GCM-HKDF and AES-CTR-HMAC.

    python3 interop/tink_interop.py [--quick] [--features aws-lc]

With `--features aws-lc` the example is built with that cargo feature, so
the example seals and opens with AWS-LC (`Provider::AwsLc`).

1. Creates (once) a virtual environment under target/tink-venv with Tink from
   ../shared/interop/requirements.txt (that folder is read-only; set
   CIPHERIO_INTEROP_DIR to use another copy).
2. cipherio -> Tink: encrypts a sweep of plaintext lengths (0, 1, the first
   segment's capacity -1/0/+1, the next boundaries -1/0/+1, several segments)
   under several parameter sets of each key type and associated data with
   `cargo run --release --example tink`, then has Tink decrypt them all with
   `tink_decrypt.py --batch`, which must print `N passed, 0 failed`. The batch
   also holds tampered copies that Tink must reject, so a checker that
   accepted anything would fail here.
3. Tink -> cipherio: fresh ciphertexts made by `tink_encrypt.py` (new random
   salt and nonce prefix every run) are decrypted by the example and compared
   with the plaintext; tampered copies must fail and leave no output file.

Exits non-zero on any mismatch. Everything it writes is under
target/tink-interop/.
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INTEROP = os.environ.get("CIPHERIO_INTEROP_DIR",
                         os.path.join(os.path.dirname(ROOT), "shared", "interop"))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
VENV = os.path.join(TARGET, "tink-venv")
WORK = os.path.join(TARGET, "tink-interop")
EXAMPLE = os.path.join(TARGET, "release", "examples", "tink")

# (name, raw key hex, derived key size, ciphertext segment size, HKDF hash,
#  and for AES-CTR-HMAC keys (HMAC hash, tag size))
PARAMS = [
    ("aes128-4k-sha256", "000102030405060708090a0b0c0d0e0f", 16, 4096, "SHA256"),
    ("aes256-4k-sha256", "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f",
     32, 4096, "SHA256"),
    ("aes128-1m-sha256", "404142434445464748494a4b4c4d4e4f", 16, 1 << 20, "SHA256"),
    ("aes256-4113-sha512", "606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f",
     32, 4113, "SHA512"),
    ("aes256-4k-sha1", "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f",
     32, 4096, "SHA1"),
    ("ikm32-dk16-4k", "a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf",
     16, 4096, "SHA256"),
    ("aes128-min41", "c0c1c2c3c4c5c6c7c8c9cacbcccdcecf", 16, 41, "SHA256"),
    ("aes256-min57", "e0e1e2e3e4e5e6e7e8e9eaebecedeeefd0d1d2d3d4d5d6d7d8d9dadbdcdddedf",
     32, 57, "SHA256"),
    # AES-CTR-HMAC: Tink's four templates, every hash for HKDF and HMAC, the
    # tag sizes' ends, odd and smallest segments.
    ("ctr128-4k-sha256", "101112131415161718191a1b1c1d1e1f", 16, 4096, "SHA256",
     ("SHA256", 32)),
    ("ctr256-4k-sha256", "303132333435363738393a3b3c3d3e3f202122232425262728292a2b2c2d2e2f",
     32, 4096, "SHA256", ("SHA256", 32)),
    ("ctr128-1m-sha256", "505152535455565758595a5b5c5d5e5f", 16, 1 << 20, "SHA256",
     ("SHA256", 32)),
    ("ctr256-1m-sha256", "707172737475767778797a7b7c7d7e7f606162636465666768696a6b6c6d6e6f",
     32, 1 << 20, "SHA256", ("SHA256", 32)),
    ("ctr128-4113-sha512-t64", "909192939495969798999a9b9c9d9e9f", 16, 4113, "SHA512",
     ("SHA512", 64)),
    ("ctr256-4k-sha1-t20", "b0b1b2b3b4b5b6b7b8b9babbbcbdbebfa0a1a2a3a4a5a6a7a8a9aaabacadaeaf",
     32, 4096, "SHA1", ("SHA1", 20)),
    ("ctr128-sha1-hmac512-t10", "d0d1d2d3d4d5d6d7d8d9dadbdcdddedfc0c1c2c3c4c5c6c7", 16, 300, "SHA1",
     ("SHA512", 10)),
    ("ctr128-min41-t16", "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff", 16, 41, "SHA256",
     ("SHA256", 16)),
]
AADS = ["", "636970686572696f2d696e7465726f70"]  # "" and "cipherio-interop"


def tag_len(p):
    return p[5][1] if len(p) > 5 else 16


def lengths(p, quick):
    dks, seg = p[2], p[3]
    header = 1 + dks + 7
    first, rest = seg - header - tag_len(p), seg - tag_len(p)
    out = {0, 1, first - 1, first, first + 1,
           first + rest - 1, first + rest, first + rest + 1,
           first + 3 * rest + 5}
    if not quick:
        out |= {first + 2 * rest, 100_000}
    return sorted(n for n in out if n >= 0)


def plaintext(n, seed):
    # Distinct bytes per case, so that a ciphertext swapped between cases
    # would show up as a wrong plaintext, not pass unnoticed.
    block = hashlib.sha256(seed.encode()).digest()
    return (block * (n // 32 + 1))[:n]


def run(cmd, **kw):
    # A hang fails the check instead of stalling CI.
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kw)


def ensure_venv():
    py = os.path.join(VENV, "bin", "python")
    if os.path.exists(py) and run([py, "-c", "import tink"]).returncode == 0:
        return py
    req = os.path.join(INTEROP, "requirements.txt")
    if not os.path.exists(req):
        sys.exit(f"interop: {req} not found (set CIPHERIO_INTEROP_DIR)")
    print(f"== creating {VENV} with {req}", flush=True)
    subprocess.run([sys.executable, "-m", "venv", VENV], check=True)
    subprocess.run([py, "-m", "pip", "install", "-q", "-r", req], check=True)
    return py


def example(mode, p, aad, src, dst):
    name, key, dks, seg, hsh = p[:5]
    cmd = [EXAMPLE, mode, "--key", key, "--derived-key-size", str(dks),
           "--segment-size", str(seg), "--hkdf-hash", hsh]
    if len(p) > 5:
        cmd += ["--type", "ctr-hmac", "--hmac-hash", p[5][0], "--tag-size", str(p[5][1])]
    if aad:
        cmd += ["--aad", aad]
    return run(cmd + [src, dst])


def tink_params(p):
    name, key, dks, seg, hsh = p[:5]
    out = {"alg": "AES_GCM_HKDF_STREAMING", "key_size": len(key) // 2,
           "derived_key_size": dks, "hkdf_hash": hsh, "ciphertext_segment_size": seg}
    if len(p) > 5:
        out.update(alg="AES_CTR_HMAC_STREAMING", hmac_hash=p[5][0], tag_size=p[5][1])
    return out


def main():
    quick = "--quick" in sys.argv
    features = []
    if "--features" in sys.argv:
        i = sys.argv.index("--features")
        if i + 1 >= len(sys.argv):
            sys.exit("--features needs a value")
        features = ["--features", sys.argv[i + 1]]
    py = ensure_venv()
    print(f"== building the example {' '.join(features)}", flush=True)
    subprocess.run(["cargo", "build", "--release", "--example", "tink", *features],
                   cwd=ROOT, check=True)
    # Fresh every run: a stale ciphertext must never stand in for one that
    # a broken build failed to write.
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    failures = []
    # Per parameter set: [to Tink ok, tampered Tink refused, from Tink ok, tampered we refused]
    counts = {p[0]: [0, 0, 0, 0] for p in PARAMS}

    # 1. cipherio -> Tink
    manifest, expect_pass, expect_fail = [], 0, 0
    for p in PARAMS:
        for aad in AADS:
            for n in lengths(p, quick):
                cid = f"{p[0]}/aad={len(aad) // 2}/n={n}"
                base = os.path.join(WORK, cid.replace("/", "_"))
                pt = plaintext(n, cid)
                with open(base + ".pt", "wb") as f:
                    f.write(pt)
                r = example("encrypt", p, aad, base + ".pt", base + ".ct")
                if r.returncode != 0:
                    failures.append(f"encrypt {cid}: {r.stderr.strip()}")
                    continue
                ct = open(base + ".ct", "rb").read()
                entry = {"id": cid, "key": p[1], "params": tink_params(p), "aad": aad,
                         "ciphertext_file": base + ".ct",
                         "plaintext_sha256": hashlib.sha256(pt).hexdigest()}
                manifest.append(entry)
                expect_pass += 1
                counts[p[0]][0] += 1
                ns = lengths(p, quick)
                if n in (0, 1, ns[-1]):
                    # Tampered copies, which Tink must reject: the last byte
                    # flipped; for the multi-segment length also a byte of
                    # the first segment's body and the stream cut at the
                    # end of its first segment.
                    bads = [(len(ct) - 1, None)]
                    if n == ns[-1]:
                        bads += [(p[2] + 8 + 1, None), (None, p[3])]
                    for flip, cut in bads:
                        bad = bytearray(ct[:cut] if cut else ct)
                        if flip is not None:
                            bad[flip] ^= 1
                        tag = f"/flip{flip}" if flip is not None else f"/cut{cut}"
                        manifest.append(dict(entry, id=cid + tag, ciphertext=bytes(bad).hex(),
                                             ciphertext_file=None, expect="fail"))
                        expect_fail += 1
                        counts[p[0]][1] += 1
    for e in manifest:
        if e.get("ciphertext_file") is None:
            del e["ciphertext_file"]
    mpath = os.path.join(WORK, "manifest.json")
    with open(mpath, "w") as f:
        json.dump(manifest, f)
    r = run([py, os.path.join(INTEROP, "tink_decrypt.py"), "--batch", mpath])
    summary = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else r.stderr.strip()
    want = f"{expect_pass + expect_fail} passed, 0 failed"
    print(f"cipherio -> Tink: tink_decrypt.py --batch: {summary} "
          f"({expect_pass} to decrypt, {expect_fail} tampered to reject)")
    if summary != want or r.returncode != 0:
        failures.append(f"tink_decrypt.py --batch printed {summary!r}, wanted {want!r}")
        failures += [l for l in r.stdout.splitlines() if "FAIL" in l][:20]

    # 2. Tink -> cipherio
    ok = bad_ok = 0
    for i, p in enumerate(PARAMS):
        aad = AADS[i % 2]
        ns = lengths(p, True)
        ns = ns if not quick else [ns[0], ns[len(ns) // 2], ns[-1]]
        for n in ns:
            cid = f"tink/{p[0]}/aad={len(aad) // 2}/n={n}"
            base = os.path.join(WORK, cid.replace("/", "_"))
            pt = plaintext(n, cid)
            with open(base + ".pt", "wb") as f:
                f.write(pt)
            r = run([py, os.path.join(INTEROP, "tink_encrypt.py"), "--key", p[1],
                     "--params", json.dumps(tink_params(p)), "--aad", aad, "--chunk", "1000",
                     base + ".pt", base + ".ct"])
            if r.returncode != 0:
                failures.append(f"tink_encrypt {cid}: {r.stderr.strip()[-300:]}")
                continue
            r = example("decrypt", p, aad, base + ".ct", base + ".out")
            if r.returncode != 0 or open(base + ".out", "rb").read() != pt:
                failures.append(f"decrypt {cid}: {r.returncode} {r.stderr.strip()}")
                continue
            ok += 1
            counts[p[0]][2] += 1
            # Tampered: the last byte flipped -> refused, and no output file.
            ct = bytearray(open(base + ".ct", "rb").read())
            ct[-1] ^= 1
            with open(base + ".bad", "wb") as f:
                f.write(ct)
            r = example("decrypt", p, aad, base + ".bad", base + ".badout")
            if r.returncode == 0 or os.path.exists(base + ".badout"):
                failures.append(f"tampered {cid} was accepted or left output")
            else:
                bad_ok += 1
                counts[p[0]][3] += 1
    print(f"Tink -> cipherio: {ok} fresh Tink ciphertexts decrypted, "
          f"{bad_ok} tampered ones refused with no output file")

    print("per parameter set (counts are of cases sent; the batch verdict above covers them all):")
    print(f"  {'set':28} {'->Tink':>7} {'bad->Tink':>9} {'Tink->':>7} {'bad Tink->':>10}")
    for name, c in counts.items():
        print(f"  {name:28} {c[0]:7} {c[1]:9} {c[2]:7} {c[3]:10}")
    if failures:
        print(f"{len(failures)} FAILURES:")
        for f in failures:
            print("  " + f)
        return 1
    print("interop: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
