#!/usr/bin/env python3
"""Makes tests/data/tink_vectors.json, the subset of the Tink interop vectors
(../shared/interop/vectors.json.gz) that the tests carry, under 2 MB.

    python3 tests/data/make_tink_vectors.py [PATH/TO/vectors.json.gz]

Kept: every AES-GCM-HKDF case of every group, except positive vectors with
ciphertexts over MAX_POSITIVE bytes (the multi-megabyte 1 MiB-segment ones
among them; CI checks those parameters against real Tink instead).
Deterministic vectors longer than 4 KiB keep their ciphertext as length +
SHA-256 (the tests reproduce them byte for byte and compare the hash).
Negative vectors are stored as a difference from one base ciphertext per
parameter set: base[:prefix] + middle + base[len(base) - suffix:].
AES-CTR-HMAC cases are dropped: that key type is not implemented.
"""

import gzip
import hashlib
import json
import os
import sys

MAX_POSITIVE = 9000

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    HERE, "..", "..", "..", "shared", "interop", "vectors.json.gz")

d = json.load(gzip.open(SRC))
ps = d["param_sets"]


def gcm(name):
    return ps[name]["alg"] == "AES_GCM_HKDF_STREAMING"


def slim(v):
    return {k: v[k] for k in v if k not in ("source", "tink_error")}


out = {
    "about": "subset of ../shared/interop/vectors.json.gz made by make_tink_vectors.py",
    "plaintext_rule": d["plaintext_rule"],
    "param_sets": {k: {f: v[f] for f in ("derived_key_size", "hkdf_hash", "ciphertext_segment_size", "key_size")}
                   for k, v in ps.items() if gcm(k)},
    "vectors": [slim(v) for v in d["vectors"]
                if gcm(v["param_set"]) and int(v["ciphertext_len"]) <= MAX_POSITIVE],
    "deterministic_vectors": [],
    "negative_bases": {},
    "negative_vectors": [],
    "quirk_vectors": [{k: v[k] for k in ("id", "param_set", "key", "aad", "plaintext_len", "ciphertext", "what")}
                      for v in d["quirk_vectors"] if gcm(v["param_set"])],
    "tink_source_kats": [],
}
for v in d["negative_vectors"]:
    if not gcm(v["param_set"]):
        continue
    v = slim(v)
    ct = bytes.fromhex(v.pop("ciphertext"))
    bases = out["negative_bases"]
    if v["param_set"] not in bases:
        # The longest ciphertext of the set: its mutations are small diffs.
        bases[v["param_set"]] = max(
            (x["ciphertext"] for x in d["negative_vectors"] if x["param_set"] == v["param_set"]),
            key=len)
    base = bytes.fromhex(bases[v["param_set"]])
    p = 0
    while p < min(len(ct), len(base)) and ct[p] == base[p]:
        p += 1
    q = 0
    while q < min(len(ct), len(base)) - p and ct[-1 - q] == base[-1 - q]:
        q += 1
    v["ciphertext_diff"] = {"prefix": p, "middle": ct[p:len(ct) - q].hex(), "suffix": q}
    v["ciphertext_sha256"] = hashlib.sha256(ct).hexdigest()
    out["negative_vectors"].append(v)
for v in d["deterministic_vectors"]:
    if not gcm(v["param_set"]):
        continue
    v = slim(v)
    ct = bytes.fromhex(v["ciphertext"])
    if len(ct) > 4096:
        del v["ciphertext"]
        v["ciphertext_sha256"] = hashlib.sha256(ct).hexdigest()
    out["deterministic_vectors"].append(v)
for k in d["tink_source_kats"]:
    p = k["params"]
    if p["alg"] != "AES_GCM_HKDF_STREAMING":
        continue
    k = dict(k)
    k["params"] = {f: p[f] for f in ("derived_key_size", "hkdf_hash", "ciphertext_segment_size", "key_size")}
    k.pop("source", None)
    out["tink_source_kats"].append(k)

path = os.path.join(HERE, "tink_vectors.json")
with open(path, "w") as f:
    json.dump(out, f, indent=0, sort_keys=True)
    f.write("\n")
print(path, os.path.getsize(path), "bytes;",
      ", ".join(f"{k} {len(out[k])}" for k in ("vectors", "deterministic_vectors", "negative_vectors",
                                               "quirk_vectors", "tink_source_kats")))
