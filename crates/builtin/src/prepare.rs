//! Defaulting and write preparation.
use serde_json::Value;
use crate::Kind;
impl Kind {
    /// Defaults.
    pub fn default(&self, _obj: &mut Value) {}
}
