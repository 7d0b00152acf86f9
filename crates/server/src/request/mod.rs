//! What a request asks for, parsed before any work is done: the [`route`] (URL grammar), the
//! typed query [`options`], and the [`negotiate`]d representations of bodies.
//!
//! Architecture Invariant: handlers never read query keys by string; they read the typed options
//! parsed here.

pub mod negotiate;
pub mod options;
pub mod route;
