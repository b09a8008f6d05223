//! Roaring bitmaps in the byte layouts Paimon stores: the portable 32-bit format (`rbm32`
//! aggregation, deletion vectors) and Java's `Roaring64Bitmap` dump (`rbm64` aggregation).
//!
//! Layer 0 like `spec`: plain data and codecs, no I/O. Merge-engine aggregators and deletion
//! vectors both build on it.

pub(crate) mod roaring;
pub(crate) mod roaring64;
