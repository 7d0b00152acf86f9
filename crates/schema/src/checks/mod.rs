//! (being written)

mod defaults;
