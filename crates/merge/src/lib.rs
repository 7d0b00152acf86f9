//! How patches and applies change objects, pure and synchronous: JSON values and schemas in,
//! JSON values and errors out.
//!
//! Architecture Invariant: this crate does no IO and knows no HTTP, async runtime or storage.

pub mod apply;
pub mod json_patch;
pub mod merge_patch;
pub mod strategic;
