//! Apply conflicts and their rendering as kube-apiserver's 409 `Status` (apimachinery's
//! `NewConflictError`).

use std::fmt;

use super::fieldset::Path;
use super::managed::{ManagerId, identifier};

/// A field the applier would change that another manager owns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    /// The manager owning the field.
    pub manager: ManagerId,
    /// The field.
    pub path: Path,
}

/// The conflicts that failed an apply without `force`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflicts(pub Vec<Conflict>);

impl Conflicts {
    /// Returns the `details.causes` of the 409 Status, in order: `(field, message)` pairs of
    /// type `FieldManagerConflict` (`(".spec.cronSpec", "conflict with \"m\" using v1")`).
    pub fn causes(&self) -> Vec<(String, String)> {
        self.0
            .iter()
            .map(|c| {
                (
                    c.path.to_string(),
                    format!("conflict with {}", c.manager.describe()),
                )
            })
            .collect()
    }
}

impl fmt::Display for Conflicts {
    /// Writes the Status message: `Apply failed with 1 conflict: conflict with "m" using v1:
    /// .spec.a`, or for several, per manager in order, `conflicts with "m" using v1:` then one
    /// `- .path` line per field.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let [only] = self.0.as_slice() {
            return write!(
                f,
                "Apply failed with 1 conflict: conflict with {}: {}",
                only.manager.describe(),
                only.path
            );
        }
        let mut managers: Vec<&ManagerId> = Vec::new();
        for c in &self.0 {
            if !managers.contains(&&c.manager) {
                managers.push(&c.manager);
            }
        }
        managers.sort_by_key(|m| identifier(m));
        let mut lines = Vec::new();
        for m in managers {
            lines.push(format!("conflicts with {}:", m.describe()));
            for c in self.0.iter().filter(|c| &c.manager == m) {
                lines.push(format!("- {}", c.path));
            }
        }
        write!(
            f,
            "Apply failed with {} conflicts: {}",
            self.0.len(),
            lines.join("\n")
        )
    }
}

impl std::error::Error for Conflicts {}
