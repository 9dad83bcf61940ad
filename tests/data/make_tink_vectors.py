#!/usr/bin/env python3
"""Makes tests/data/tink_vectors.json, the subset of the Tink interop vectors
(../shared/interop/vectors.json.gz) that the tests carry, under 2 MB.

    python3 tests/data/make_tink_vectors.py [PATH/TO/vectors.json.gz]

Kept: every case of every group, AES-GCM-HKDF and AES-CTR-HMAC, except
positive vectors with ciphertexts over MAX_POSITIVE bytes (MAX_POSITIVE_CTR
for AES-CTR-HMAC, to keep the file small: one- and two-segment streams of
every set, and the many-segment ones of the 41-byte set; the multi-megabyte
1 MiB-segment ones are dropped, CI checks those parameters against real Tink
instead).
Deterministic vectors longer than 4 KiB keep their ciphertext as length +
SHA-256 (the tests reproduce them byte for byte and compare the hash).
Negative vectors are stored as a difference from one base ciphertext per
parameter set (the one the others differ least from):
base[:prefix] + middle + base[len(base) - suffix:].
Parameter sets keep the fields a key needs ("alg" says which key type;
AES-CTR-HMAC sets also have "hmac_hash" and "tag_size").
"""

import gzip
import hashlib
import json
import os
import sys

MAX_POSITIVE = 9000
MAX_POSITIVE_CTR = 4200

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    HERE, "..", "..", "..", "shared", "interop", "vectors.json.gz")

d = json.load(gzip.open(SRC))
ps = d["param_sets"]


def gcm(name):
    return ps[name]["alg"] == "AES_GCM_HKDF_STREAMING"


def max_positive(name):
    return MAX_POSITIVE if gcm(name) else MAX_POSITIVE_CTR


KEY_FIELDS = ("alg", "derived_key_size", "hkdf_hash", "ciphertext_segment_size", "key_size")
CTR_FIELDS = ("hmac_hash", "tag_size")


def key_fields(p):
    return {f: p[f] for f in KEY_FIELDS + (() if p["alg"] == "AES_GCM_HKDF_STREAMING" else CTR_FIELDS)}


def slim(v):
    return {k: v[k] for k in v if k not in ("source", "tink_error")}


out = {
    "about": "subset of ../shared/interop/vectors.json.gz made by make_tink_vectors.py",
    "plaintext_rule": d["plaintext_rule"],
    "param_sets": {k: key_fields(v) for k, v in ps.items()},
    "vectors": [slim(v) for v in d["vectors"]
                if int(v["ciphertext_len"]) <= max_positive(v["param_set"])],
    "deterministic_vectors": [],
    "negative_bases": {},
    "negative_vectors": [],
    "quirk_vectors": [{k: v[k] for k in ("id", "param_set", "key", "aad", "plaintext_len", "ciphertext", "what")}
                      for v in d["quirk_vectors"]],
    "tink_source_kats": [],
}
def diff(ct, base):
    p = 0
    while p < min(len(ct), len(base)) and ct[p] == base[p]:
        p += 1
    q = 0
    while q < min(len(ct), len(base)) - p and ct[-1 - q] == base[-1 - q]:
        q += 1
    return {"prefix": p, "middle": ct[p:len(ct) - q].hex(), "suffix": q}


for name in ps:
    cts = [bytes.fromhex(x["ciphertext"]) for x in d["negative_vectors"] if x["param_set"] == name]
    if cts:
        # The set's ciphertext that the others differ least from (most
        # mutations are one byte or one cut away from the untouched one).
        out["negative_bases"][name] = min(
            cts, key=lambda b: sum(len(diff(c, b)["middle"]) for c in cts)).hex()
for v in d["negative_vectors"]:
    v = slim(v)
    ct = bytes.fromhex(v.pop("ciphertext"))
    v["ciphertext_diff"] = diff(ct, bytes.fromhex(out["negative_bases"][v["param_set"]]))
    v["ciphertext_sha256"] = hashlib.sha256(ct).hexdigest()
    out["negative_vectors"].append(v)
for v in d["deterministic_vectors"]:
    v = slim(v)
    ct = bytes.fromhex(v["ciphertext"])
    if len(ct) > 4096:
        del v["ciphertext"]
        v["ciphertext_sha256"] = hashlib.sha256(ct).hexdigest()
    out["deterministic_vectors"].append(v)
for k in d["tink_source_kats"]:
    p = k["params"]
    k = dict(k)
    k["params"] = key_fields(p)
    k.pop("source", None)
    out["tink_source_kats"].append(k)

path = os.path.join(HERE, "tink_vectors.json")
with open(path, "w") as f:
    json.dump(out, f, indent=0, sort_keys=True)
    f.write("\n")
print(path, os.path.getsize(path), "bytes;",
      ", ".join(f"{k} {len(out[k])}" for k in ("vectors", "deterministic_vectors", "negative_vectors",
                                               "quirk_vectors", "tink_source_kats")))
