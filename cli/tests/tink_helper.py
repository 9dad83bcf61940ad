#!/usr/bin/env python3
"""Real Google Tink (the `tink` package from PyPI) for the command line's
interop tests. Run with the virtual environment that tink-venv.sh makes.

    tink_helper.py keyset TEMPLATE [TEMPLATE ...] OUT.json
        A cleartext JSON keyset (Tink's JSON keyset format, as tinkey writes
        it) with one new key per template; the last one is primary.
    tink_helper.py rotate KEYSET.json TEMPLATE OUT.json
        The keyset with one more new key, which becomes the primary.
    tink_helper.py encrypt KEYSET.json AAD_HEX IN OUT
    tink_helper.py decrypt KEYSET.json AAD_HEX IN OUT
        Tink's StreamingAead with the keyset's primary (encrypt) or any of
        its keys (decrypt). Exits 1 with a message if decryption fails.

Templates are the names in tink.streaming_aead.streaming_aead_key_templates,
e.g. AES128_GCM_HKDF_4KB, AES256_CTR_HMAC_SHA256_1MB.
"""

import io
import sys

import tink
from tink import secret_key_access, streaming_aead
from tink.proto import tink_pb2

streaming_aead.register()


def keyset(templates, out, start=None):
    merged = tink_pb2.Keyset()
    if start is not None:
        with open(start) as fh:
            handle = tink.json_proto_keyset_format.parse(fh.read(), secret_key_access.TOKEN)
        merged = tink_pb2.Keyset.FromString(
            tink.proto_keyset_format.serialize(handle, secret_key_access.TOKEN))
    for name in templates:
        template = getattr(streaming_aead.streaming_aead_key_templates, name)
        handle = tink.new_keyset_handle(template)
        one = tink_pb2.Keyset.FromString(
            tink.proto_keyset_format.serialize(handle, secret_key_access.TOKEN))
        merged.key.extend(one.key)
        merged.primary_key_id = one.primary_key_id
    handle = tink.proto_keyset_format.parse(merged.SerializeToString(), secret_key_access.TOKEN)
    with open(out, "w") as fh:
        fh.write(tink.json_proto_keyset_format.serialize(handle, secret_key_access.TOKEN))


def primitive(path):
    with open(path) as fh:
        handle = tink.json_proto_keyset_format.parse(fh.read(), secret_key_access.TOKEN)
    return handle.primitive(streaming_aead.StreamingAead)


class KeepBytes(io.BytesIO):
    """Tink closes the destination when its stream closes: keep the bytes."""

    def close(self):
        if not self.closed:
            self.kept = self.getvalue()
        super().close()


def encrypt(keyset_path, aad, src, dst):
    with open(src, "rb") as fh:
        plaintext = fh.read()
    out = KeepBytes()
    with primitive(keyset_path).new_encrypting_stream(out, aad) as es:
        for i in range(0, len(plaintext), 100_000):
            es.write(plaintext[i:i + 100_000])
    with open(dst, "wb") as fh:
        fh.write(out.kept)


def decrypt(keyset_path, aad, src, dst):
    with open(src, "rb") as fh:
        ciphertext = fh.read()
    chunks = []
    try:
        with primitive(keyset_path).new_decrypting_stream(io.BytesIO(ciphertext), aad) as ds:
            while True:
                b = ds.read(1 << 20)
                if not b:
                    break
                chunks.append(b)
    except tink.TinkError as e:
        print(f"Tink refused it: {e}", file=sys.stderr)
        return 1
    with open(dst, "wb") as fh:
        fh.write(b"".join(chunks))
    return 0


def main(argv):
    if len(argv) == 4 and argv[0] == "rotate":
        keyset([argv[2]], argv[3], start=argv[1])
        return 0
    if len(argv) >= 3 and argv[0] == "keyset":
        keyset(argv[1:-1], argv[-1])
        return 0
    if len(argv) == 5 and argv[0] in ("encrypt", "decrypt"):
        aad = bytes.fromhex(argv[2])
        if argv[0] == "encrypt":
            encrypt(argv[1], aad, argv[3], argv[4])
            return 0
        return decrypt(argv[1], aad, argv[3], argv[4])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
