//! The native v1 format's bytes and limits, in one place: the header
//! ([`Header`] parses and encodes its 53 bytes, pure bytes, no I/O; the
//! crate documentation has the byte diagram) and the sizes every reader and
//! writer defaults to or is bounded by ([`DEFAULT_CAPACITY`], also at the
//! crate root; [`DEFAULT_MAX_SEGMENT_SIZE`]; [`MAX_WRITER_CAPACITY`]).

pub use crate::profile::native::{
    DEFAULT_CAPACITY, DEFAULT_MAX_SEGMENT_SIZE, HEADER_LEN, Header, MAGIC, MAX_WRITER_CAPACITY,
    SALT_LEN, TAG_LEN, VERSION, VERSION_FRAMED,
};
