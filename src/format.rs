//! The native v1 header: pure bytes, no I/O.
//!
//! See the crate documentation for the byte diagram. [`Header`] parses and
//! encodes the 53 header bytes; the native profile uses it to set up a
//! stream's suite and segment layout.

pub use crate::profile::native::{
    DEFAULT_MAX_SEGMENT_SIZE, HEADER_LEN, Header, MAGIC, MAX_WRITER_CAPACITY, SALT_LEN, TAG_LEN,
    VERSION,
};
