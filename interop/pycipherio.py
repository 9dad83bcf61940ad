"""A second implementation of cipherio's native format v1, written from
FORMAT.md alone (none of the Rust code), with the `cryptography` package:
HKDF-SHA256, AES-GCM and ChaCha20-Poly1305.

Both variants, fixed-size segments (version byte 1) and framed records
(version byte 2); encryption and decryption of whole byte strings, with the
reader rules of FORMAT.md sections 6.2, 7.2 and 8 and one exception class
per `cipherio::Error` variant, named after it.

    key = Key("ChaCha20-Poly1305", bytes(32))
    ct = encrypt(key, b"data", segment_size=8192, aad=b"context")
    assert decrypt(key, ct, aad=b"context") == b"data"
    ct = encrypt_framed(key, b"hello world", flush_at=[5], segment_size=64)
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from typing import Any, Optional, Sequence, Union

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

MAGIC = b"cipherio"
HEADER_LEN = 53
TAG_LEN = 16
RECORD_HEADER_LEN = 4
VERSION_FIXED = 0x01
VERSION_FRAMED = 0x02
SALT_LEN = 32
NONCE_PREFIX_LEN = 7
# cipherio's default reader limit on the header's segment size, and its
# writer's largest capacity.
DEFAULT_MAX_SEGMENT_SIZE = 16 << 20
# Segment indices run from 0 to 2^32 - 1.
INDEX_LIMIT = 1 << 32
FINAL_BIT = 1 << 31
# A framed header's largest segment size: a record's length has 31 bits.
FRAMED_MAX_SEGMENT_SIZE = FINAL_BIT - 1

# id byte -> (name, key length)
ALGORITHMS = {
    0x01: ("AES-128-GCM", 16),
    0x02: ("AES-256-GCM", 32),
    0x03: ("ChaCha20-Poly1305", 32),
}
ALGORITHM_IDS = {name: i for i, (name, _) in ALGORITHMS.items()}

Aead = Union[AESGCM, ChaCha20Poly1305]


# ---------------------------------------------------------------------------
# Errors: one class per cipherio::Error variant a reader gives.
# ---------------------------------------------------------------------------

class FormatError(Exception):
    """A stream the format refuses. `variant` is the cipherio::Error variant,
    `fields` its fields (algorithms by name), `kind` the io::ErrorKind;
    `released` is the plaintext of the segments that opened before the
    failure (what a streaming reader would have released)."""

    kind = "InvalidData"

    def __init__(self, **fields: Any) -> None:
        self.fields = fields
        self.released = b""
        detail = ", ".join(f"{k}: {v}" for k, v in fields.items())
        super().__init__(f"{self.variant}" + (f" {{ {detail} }}" if detail else ""))

    @property
    def variant(self) -> str:
        return type(self).__name__


class Authentication(FormatError):
    """A segment or record failed to open."""


class BadMagic(FormatError):
    """The input does not start with the magic bytes (H2)."""


class UnsupportedVersion(FormatError):
    """A version byte other than 1 and 2 (H4); field `version`."""


class UnknownAlgorithm(FormatError):
    """An unknown algorithm byte (H5); field `id`."""


class AlgorithmMismatch(FormatError):
    """The header's algorithm is not the key's (H8); fields `stream`, `key`."""


class ZeroSegmentSize(FormatError):
    """A segment size of 0 (H6)."""


class SegmentTooLarge(FormatError):
    """A segment size above the reader's limit (H7), or a record longer than
    the segment size; fields `size`, `limit`."""


class Truncated(FormatError):
    """The input ends before the final segment or record is complete."""

    kind = "UnexpectedEof"


class TrailingData(FormatError):
    """Input after the final segment or record."""


class EmptyFinalSegment(FormatError):
    """Fixed: an empty final segment after non-empty ones."""


class TooManySegments(FormatError):
    """A segment or record at index 2^32 or above."""


ERRORS = {c.__name__: c for c in (
    Authentication, BadMagic, UnsupportedVersion, UnknownAlgorithm, AlgorithmMismatch,
    ZeroSegmentSize, SegmentTooLarge, Truncated, TrailingData, EmptyFinalSegment,
    TooManySegments)}


# ---------------------------------------------------------------------------
# Keys, header, key derivation, nonces.
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Key:
    """The caller's key: an algorithm (by name) and its bytes."""

    algorithm: str
    raw: bytes

    def __post_init__(self) -> None:
        if self.algorithm not in ALGORITHM_IDS:
            raise ValueError(f"unknown algorithm {self.algorithm!r}")
        want = ALGORITHMS[self.id][1]
        if len(self.raw) != want:
            raise ValueError(f"{self.algorithm} keys are {want} bytes, got {len(self.raw)}")

    @property
    def id(self) -> int:
        return ALGORITHM_IDS[self.algorithm]


@dataclass(frozen=True)
class Header:
    version: int
    algorithm: int
    segment_size: int
    salt: bytes
    nonce_prefix: bytes

    def to_bytes(self) -> bytes:
        return (MAGIC + bytes([self.version, self.algorithm])
                + struct.pack(">I", self.segment_size) + self.salt + self.nonce_prefix)

    @property
    def framed(self) -> bool:
        return self.version == VERSION_FRAMED


def stream_aead(key: Key, header: bytes, aad: bytes) -> Aead:
    """K = HKDF-SHA256(IKM = key, salt = header[14..46], info = header ‖ aad,
    L = the key length), keying the header's algorithm."""
    alg = header[9]
    length = ALGORITHMS[alg][1]
    k = HKDF(algorithm=hashes.SHA256(), length=length, salt=header[14:46],
             info=header + aad).derive(key.raw)
    return ChaCha20Poly1305(k) if alg == 0x03 else AESGCM(k)


def nonce(prefix: bytes, index: int, last: bool) -> bytes:
    """prefix (7) ‖ BE32(index) ‖ last (1)."""
    return prefix + struct.pack(">I", index) + (b"\x01" if last else b"\x00")


def fresh_header(key: Key, version: int, segment_size: int, salt: Optional[bytes],
                 nonce_prefix: Optional[bytes]) -> Header:
    top = FRAMED_MAX_SEGMENT_SIZE if version == VERSION_FRAMED else INDEX_LIMIT - 1
    if not 1 <= segment_size <= top:
        raise ValueError(f"segment size {segment_size} out of 1 ..= {top}")
    salt = os.urandom(SALT_LEN) if salt is None else salt
    prefix = os.urandom(NONCE_PREFIX_LEN) if nonce_prefix is None else nonce_prefix
    if len(salt) != SALT_LEN or len(prefix) != NONCE_PREFIX_LEN:
        raise ValueError("salt is 32 bytes, the nonce prefix 7")
    return Header(version, key.id, segment_size, salt, prefix)


# ---------------------------------------------------------------------------
# Writing.
# ---------------------------------------------------------------------------

def seal_segments(key: Key, header: Header, segments: Sequence[bytes],
                  aad: bytes = b"", first_index: int = 0) -> bytes:
    """The header, then `segments` sealed as segments first_index,
    first_index + 1, ..., the last one final (fixed variant; no checks on
    their lengths)."""
    h = header.to_bytes()
    aead = stream_aead(key, h, aad)
    out = [h]
    for i, pt in enumerate(segments):
        last = i == len(segments) - 1
        out.append(aead.encrypt(nonce(header.nonce_prefix, first_index + i, last), pt, b""))
    return b"".join(out)


def seal_records(key: Key, header: Header, records: Sequence[bytes],
                 aad: bytes = b"") -> bytes:
    """The header, then `records` sealed as records 0, 1, ..., the last one
    final (framed variant)."""
    h = header.to_bytes()
    aead = stream_aead(key, h, aad)
    out = [h]
    for i, pt in enumerate(records):
        last = i == len(records) - 1
        if len(pt) > header.segment_size:
            raise ValueError("a record holds at most segment_size bytes")
        rh = struct.pack(">I", len(pt) | (FINAL_BIT if last else 0))
        out.append(rh + aead.encrypt(nonce(header.nonce_prefix, i, last), pt, rh))
    return b"".join(out)


def fixed_segments(plaintext: bytes, segment_size: int) -> list[bytes]:
    """FORMAT.md 6.1: full segments, then a final one of 1 ..= segment_size
    bytes; the empty plaintext is one empty segment."""
    if not plaintext:
        return [b""]
    return [plaintext[i:i + segment_size] for i in range(0, len(plaintext), segment_size)]


def writer_records(plaintext: bytes, segment_size: int, flush_at: Sequence[int]) -> list[bytes]:
    """The records cipherio's writer makes for `plaintext` written with a
    flush after each offset of `flush_at` (non-decreasing), then finished
    (FORMAT.md, Appendix A.2): a full record when more data follows it, what is
    buffered at a flush (nothing if nothing is), the rest (possibly nothing)
    as the final record."""
    def cut(piece: bytes) -> list[bytes]:
        return [piece[i:i + segment_size] for i in range(0, len(piece), segment_size)]

    records: list[bytes] = []
    start = 0
    for at in flush_at:
        if not start <= at <= len(plaintext):
            raise ValueError("flush offsets must be non-decreasing and within the plaintext")
        records += cut(plaintext[start:at])
        start = at
    tail = plaintext[start:]
    return records + (cut(tail) if tail else [b""])


def encrypt(key: Key, plaintext: bytes, *, segment_size: int = 8192, aad: bytes = b"",
            salt: Optional[bytes] = None, nonce_prefix: Optional[bytes] = None) -> bytes:
    """A fixed-size-segment stream (version byte 1)."""
    header = fresh_header(key, VERSION_FIXED, segment_size, salt, nonce_prefix)
    segments = fixed_segments(plaintext, segment_size)
    if len(segments) > INDEX_LIMIT:
        raise ValueError("more than 2^32 segments")
    return seal_segments(key, header, segments, aad)


def encrypt_framed(key: Key, plaintext: bytes, *, flush_at: Sequence[int] = (),
                   segment_size: int = 8192, aad: bytes = b"", salt: Optional[bytes] = None,
                   nonce_prefix: Optional[bytes] = None) -> bytes:
    """A framed stream (version byte 2), as cipherio's writer cuts it."""
    header = fresh_header(key, VERSION_FRAMED, segment_size, salt, nonce_prefix)
    return seal_records(key, header, writer_records(plaintext, segment_size, flush_at), aad)


# ---------------------------------------------------------------------------
# Reading.
# ---------------------------------------------------------------------------

# The header rules H1-H8 of FORMAT.md section 8, in their order: each takes
# the input, the reader's key and its limit, and gives the error of the
# rule it checks if the input breaks it.

def _h1(data: bytes, key: Key, limit: int) -> Optional[FormatError]:
    if len(data) < len(MAGIC) and MAGIC.startswith(bytes(data)):
        return Truncated()
    return None


def _h2(data: bytes, key: Key, limit: int) -> Optional[FormatError]:
    return None if MAGIC.startswith(bytes(data[:len(MAGIC)])) else BadMagic()


def _h3(data: bytes, key: Key, limit: int) -> Optional[FormatError]:
    return Truncated() if len(data) < HEADER_LEN else None


def _h4(data: bytes, key: Key, limit: int) -> Optional[FormatError]:
    ok = data[8] in (VERSION_FIXED, VERSION_FRAMED)
    return None if ok else UnsupportedVersion(version=data[8])


def _h5(data: bytes, key: Key, limit: int) -> Optional[FormatError]:
    return None if data[9] in ALGORITHMS else UnknownAlgorithm(id=data[9])


def _segment_size(data: bytes) -> int:
    return struct.unpack(">I", data[10:14])[0]


def _h6(data: bytes, key: Key, limit: int) -> Optional[FormatError]:
    return ZeroSegmentSize() if _segment_size(data) == 0 else None


def _h7(data: bytes, key: Key, limit: int) -> Optional[FormatError]:
    if data[8] == VERSION_FRAMED:
        limit = min(limit, FRAMED_MAX_SEGMENT_SIZE)
    size = _segment_size(data)
    return SegmentTooLarge(size=size, limit=limit) if size > limit else None


def _h8(data: bytes, key: Key, limit: int) -> Optional[FormatError]:
    if data[9] == key.id:
        return None
    # (An unknown byte has no name: only a decoder that checks H8 before
    # H5 gets here with one.)
    stream = ALGORITHMS[data[9]][0] if data[9] in ALGORITHMS else f"0x{data[9]:02x}"
    return AlgorithmMismatch(stream=stream, key=key.algorithm)


HEADER_RULES = [_h1, _h2, _h3, _h4, _h5, _h6, _h7, _h8]


def parse_header(key: Key, data: bytes, max_segment_size: int) -> Header:
    """Rules H1-H8 of FORMAT.md section 8, in order."""
    for rule in HEADER_RULES:
        e = rule(data, key, max_segment_size)
        if e is not None:
            raise e
    return Header(data[8], data[9], _segment_size(data), bytes(data[14:46]),
                  bytes(data[46:53]))


def _open(aead: Aead, n: bytes, sealed: bytes, ad: bytes) -> Optional[bytes]:
    try:
        return aead.decrypt(n, sealed, ad)
    except InvalidTag:
        return None


def _read_fixed(aead: Aead, header: Header, body: memoryview, out: list[bytes],
                i: int) -> bytes:
    """FORMAT.md 6.2, from segment index `i`."""
    full = header.segment_size + TAG_LEN
    prefix = header.nonce_prefix
    pos = 0
    while True:
        rest = len(body) - pos
        if rest >= full:
            seg = bytes(body[pos:pos + full])
            if i >= INDEX_LIMIT:
                raise TooManySegments()
            pt = _open(aead, nonce(prefix, i, False), seg, b"")
            if pt is not None:
                out.append(pt)
                pos, i = pos + full, i + 1
                continue
            pt = _open(aead, nonce(prefix, i, True), seg, b"")
            if pt is None:
                raise Authentication()
            out.append(pt)
            if rest > full:
                raise TrailingData()
            return b"".join(out)
        if rest < TAG_LEN:
            raise Truncated()
        if i >= INDEX_LIMIT:
            raise TooManySegments()
        pt = _open(aead, nonce(prefix, i, True), bytes(body[pos:]), b"")
        if pt is None:
            raise Authentication()
        if not pt and i > 0:
            raise EmptyFinalSegment()
        out.append(pt)
        return b"".join(out)


def _read_framed(aead: Aead, header: Header, body: memoryview, out: list[bytes],
                 i: int) -> bytes:
    """FORMAT.md 7.2, from record index `i`."""
    prefix = header.nonce_prefix
    pos = 0
    while True:
        rest = len(body) - pos
        if rest < RECORD_HEADER_LEN:
            raise Truncated()
        rh = bytes(body[pos:pos + RECORD_HEADER_LEN])
        (v,) = struct.unpack(">I", rh)
        final, length = v >> 31 == 1, v & (FINAL_BIT - 1)
        if length > header.segment_size:
            raise SegmentTooLarge(size=length, limit=header.segment_size)
        total = RECORD_HEADER_LEN + length + TAG_LEN
        if rest < total:
            raise Truncated()
        if i >= INDEX_LIMIT:
            raise TooManySegments()
        pt = _open(aead, nonce(prefix, i, final), bytes(body[pos + RECORD_HEADER_LEN:pos + total]), rh)
        if pt is None:
            raise Authentication()
        out.append(pt)
        pos, i = pos + total, i + 1
        if final:
            if pos != len(body):
                raise TrailingData()
            return b"".join(out)


def decrypt(key: Key, data: bytes, *, aad: bytes = b"",
            max_segment_size: int = DEFAULT_MAX_SEGMENT_SIZE, first_index: int = 0) -> bytes:
    """The plaintext of a whole stream of either variant, or the FormatError
    the format gives it. `first_index` is the index of the body's first
    segment (0 but for a stream read from the middle on)."""
    header = parse_header(key, data, max_segment_size)
    h = bytes(data[:HEADER_LEN])
    aead = stream_aead(key, h, aad)
    body = memoryview(data)[HEADER_LEN:]
    out: list[bytes] = []
    read = _read_framed if header.framed else _read_fixed
    try:
        return read(aead, header, body, out, first_index)
    except FormatError as e:
        e.released = b"".join(out)
        raise
