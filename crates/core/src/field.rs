//! Field paths and field errors, formatted exactly as apimachinery's `field` package formats them.
//!
//! Main types: [`Path`], [`FieldError`], [`ErrorType`], [`ErrorList`]. Validation code in every
//! crate collects an [`ErrorList`]; the HTTP layer turns it into a 422 `Status` with causes.

use std::fmt;

use serde_json::Value;

/// A path to a field, such as `spec.versions[0].name`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Path(String);

impl Path {
    /// The root path of a named field.
    pub fn new(name: &str) -> Self {
        Path(name.to_string())
    }

    /// The empty path, printed as `<nil>` by Kubernetes.
    pub fn root() -> Self {
        Path(String::new())
    }

    /// A child field: `a` → `a.b`.
    #[must_use]
    pub fn child(&self, name: &str) -> Self {
        if self.0.is_empty() {
            Path(name.to_string())
        } else {
            // `concat` sizes the string once; `format!` costs several times more, and every
            // validated object builds a few of these paths.
            Path([self.0.as_str(), ".", name].concat())
        }
    }

    /// A list index: `a` → `a[3]`.
    #[must_use]
    pub fn index(&self, i: usize) -> Self {
        Path(format!("{}[{i}]", self.0))
    }

    /// A map key, printed unquoted: `a` → `a[key]`.
    #[must_use]
    pub fn key(&self, k: &str) -> Self {
        Path([self.0.as_str(), "[", k, "]"].concat())
    }

    /// The rendered path; empty for the root.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            f.write_str("<nil>")
        } else {
            f.write_str(&self.0)
        }
    }
}

/// The kind of a field error; its `as_str` is the `reason` of a Status cause.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorType {
    /// `FieldValueNotFound`.
    NotFound,
    /// `FieldValueRequired`.
    Required,
    /// `FieldValueDuplicate`.
    Duplicate,
    /// `FieldValueInvalid`.
    Invalid,
    /// `FieldValueNotSupported`.
    NotSupported,
    /// `FieldValueForbidden`.
    Forbidden,
    /// `FieldValueTooLong`.
    TooLong,
    /// `FieldValueTooMany`.
    TooMany,
    /// `InternalError`.
    Internal,
    /// `FieldValueTypeInvalid`.
    TypeInvalid,
}

impl ErrorType {
    /// The wire name used as a Status cause `reason`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorType::NotFound => "FieldValueNotFound",
            ErrorType::Required => "FieldValueRequired",
            ErrorType::Duplicate => "FieldValueDuplicate",
            ErrorType::Invalid => "FieldValueInvalid",
            ErrorType::NotSupported => "FieldValueNotSupported",
            ErrorType::Forbidden => "FieldValueForbidden",
            ErrorType::TooLong => "FieldValueTooLong",
            ErrorType::TooMany => "FieldValueTooMany",
            ErrorType::Internal => "InternalError",
            ErrorType::TypeInvalid => "FieldValueTypeInvalid",
        }
    }

    /// The message prefix Kubernetes prints for this type.
    fn prefix(self) -> &'static str {
        match self {
            ErrorType::NotFound => "Not found",
            ErrorType::Required => "Required value",
            ErrorType::Duplicate => "Duplicate value",
            ErrorType::Invalid | ErrorType::TypeInvalid => "Invalid value",
            ErrorType::NotSupported => "Unsupported value",
            ErrorType::Forbidden => "Forbidden",
            ErrorType::TooLong => "Too long",
            ErrorType::TooMany => "Too many",
            ErrorType::Internal => "Internal error",
        }
    }

    /// Whether the bad value is printed in the message.
    fn prints_value(self) -> bool {
        !matches!(
            self,
            ErrorType::Required | ErrorType::Forbidden | ErrorType::TooLong | ErrorType::Internal
        )
    }
}

/// One validation failure at one field.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldError {
    /// What kind of failure.
    pub kind: ErrorType,
    /// Where.
    pub field: Path,
    /// The offending value; `None` omits it from the message.
    pub value: Option<Value>,
    /// Extra explanation, appended after `: `.
    pub detail: String,
}

impl FieldError {
    fn new(kind: ErrorType, field: &Path, value: Option<Value>, detail: impl Into<String>) -> Self {
        FieldError {
            kind,
            field: field.clone(),
            value,
            detail: detail.into(),
        }
    }

    /// `Required value: <detail>`.
    pub fn required(field: &Path, detail: impl Into<String>) -> Self {
        Self::new(ErrorType::Required, field, None, detail)
    }

    /// `Invalid value: <value>: <detail>`.
    pub fn invalid(field: &Path, value: impl Into<Value>, detail: impl Into<String>) -> Self {
        Self::new(ErrorType::Invalid, field, Some(value.into()), detail)
    }

    /// `Invalid value: <printed>: <detail>` for a value Go prints with `%#v` rather than as
    /// JSON (an unset `uint64` revision is `0x0`); the cause carries no value.
    pub fn invalid_printed(field: &Path, printed: &str, detail: &str) -> Self {
        Self::new(
            ErrorType::Invalid,
            field,
            None,
            format!("{printed}: {detail}"),
        )
    }

    /// `Forbidden: <detail>`.
    pub fn forbidden(field: &Path, detail: impl Into<String>) -> Self {
        Self::new(ErrorType::Forbidden, field, None, detail)
    }

    /// `Duplicate value: <value>`.
    pub fn duplicate(field: &Path, value: impl Into<Value>) -> Self {
        Self::new(ErrorType::Duplicate, field, Some(value.into()), "")
    }

    /// `Not found: <value>`.
    pub fn not_found(field: &Path, value: impl Into<Value>) -> Self {
        Self::new(ErrorType::NotFound, field, Some(value.into()), "")
    }

    /// `Unsupported value: <value>: supported values: "a", "b"`.
    pub fn not_supported(field: &Path, value: impl Into<Value>, supported: &[&str]) -> Self {
        let detail = if supported.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = supported.iter().map(|s| go_quote(s)).collect();
            format!("supported values: {}", quoted.join(", "))
        };
        Self::new(ErrorType::NotSupported, field, Some(value.into()), detail)
    }

    /// `Too long: may not be more than <max> bytes`.
    pub fn too_long(field: &Path, max: usize) -> Self {
        let unit = if max == 1 { "byte" } else { "bytes" };
        Self::new(
            ErrorType::TooLong,
            field,
            None,
            format!("may not be more than {max} {unit}"),
        )
    }

    /// `Too many: <actual>: must have at most <max> items`.
    pub fn too_many(field: &Path, actual: usize, max: usize) -> Self {
        let unit = if max == 1 { "item" } else { "items" };
        Self::new(
            ErrorType::TooMany,
            field,
            Some(Value::from(actual)),
            format!("must have at most {max} {unit}"),
        )
    }

    /// `Invalid value: <value>: <detail>` with the type-invalid reason.
    pub fn type_invalid(field: &Path, value: impl Into<Value>, detail: impl Into<String>) -> Self {
        Self::new(ErrorType::TypeInvalid, field, Some(value.into()), detail)
    }

    /// `Internal error: <detail>`.
    pub fn internal(field: &Path, detail: impl Into<String>) -> Self {
        Self::new(ErrorType::Internal, field, None, detail)
    }

    /// The message without the path (Kubernetes' `ErrorBody`), used as a Status cause message.
    pub fn body(&self) -> String {
        let mut s = self.kind.prefix().to_string();
        if let (true, Some(v)) = (self.kind.prints_value(), &self.value) {
            s.push_str(": ");
            s.push_str(&render_value(v));
        }
        if !self.detail.is_empty() {
            s.push_str(": ");
            s.push_str(&self.detail);
        }
        s
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.body())
    }
}

/// Prints a value as Go's field errors do: strings quoted, numbers and bools bare, the rest JSON.
pub fn render_value(v: &Value) -> String {
    match v {
        Value::String(s) => go_quote(s),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        other => other.to_string(),
    }
}

/// Quotes a string as Go's `%q` does for printable text.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => {
                use std::fmt::Write;
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// An ordered list of field errors (Go's `field.ErrorList`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ErrorList(pub Vec<FieldError>);

impl ErrorList {
    /// An empty list.
    pub fn new() -> Self {
        ErrorList(Vec::new())
    }

    /// Appends one error.
    pub fn push(&mut self, e: FieldError) {
        self.0.push(e);
    }

    /// Appends all errors of another list.
    pub fn extend(&mut self, other: ErrorList) {
        self.0.extend(other.0);
    }

    /// Whether there are no errors.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The number of errors.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Iterates over the errors.
    pub fn iter(&self) -> std::slice::Iter<'_, FieldError> {
        self.0.iter()
    }

    /// The aggregate message: one message, or `[m1, m2]` with duplicates dropped.
    pub fn aggregate(&self) -> String {
        let mut seen = std::collections::HashSet::new();
        let msgs: Vec<String> = self
            .0
            .iter()
            .map(ToString::to_string)
            .filter(|m| seen.insert(m.clone()))
            .collect();
        match msgs.len() {
            0 => String::new(),
            1 => msgs.into_iter().next().unwrap_or_default(),
            _ => format!("[{}]", msgs.join(", ")),
        }
    }
}

impl From<Vec<FieldError>> for ErrorList {
    fn from(v: Vec<FieldError>) -> Self {
        ErrorList(v)
    }
}

impl<'a> IntoIterator for &'a ErrorList {
    type Item = &'a FieldError;
    type IntoIter = std::slice::Iter<'a, FieldError>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl IntoIterator for ErrorList {
    type Item = FieldError;
    type IntoIter = std::vec::IntoIter<FieldError>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn messages_match_kubernetes() {
        let p = Path::new("spec").child("versions").index(0).child("name");
        let cases: Vec<(FieldError, &str)> = vec![
            (
                FieldError::required(&Path::new("spec").child("group"), ""),
                "spec.group: Required value",
            ),
            (
                FieldError::invalid(&p, "V1", "bad"),
                "spec.versions[0].name: Invalid value: \"V1\": bad",
            ),
            (
                FieldError::invalid(&Path::new("x"), 11, ""),
                "x: Invalid value: 11",
            ),
            (
                FieldError::invalid(&Path::new("x"), json!(null), "d"),
                "x: Invalid value: null: d",
            ),
            (
                FieldError::not_supported(
                    &Path::new("spec").child("scope"),
                    "Foo",
                    &["Cluster", "Namespaced"],
                ),
                "spec.scope: Unsupported value: \"Foo\": supported values: \"Cluster\", \"Namespaced\"",
            ),
            (
                FieldError::forbidden(&Path::new("a").key("b"), "no"),
                "a[b]: Forbidden: no",
            ),
            (
                FieldError::too_long(&Path::new("a"), 63),
                "a: Too long: may not be more than 63 bytes",
            ),
            (
                FieldError::too_many(&Path::new("a"), 9, 8),
                "a: Too many: 9: must have at most 8 items",
            ),
            (
                FieldError::invalid(&Path::root(), json!(null), "x"),
                "<nil>: Invalid value: null: x",
            ),
        ];
        for (e, want) in cases {
            assert_eq!(e.to_string(), want);
        }
    }

    #[test]
    fn aggregate_dedups_and_brackets() {
        let a = FieldError::required(&Path::new("a"), "");
        let b = FieldError::required(&Path::new("b"), "");
        assert_eq!(ErrorList(vec![a.clone()]).aggregate(), "a: Required value");
        assert_eq!(
            ErrorList(vec![a.clone(), b, a]).aggregate(),
            "[a: Required value, b: Required value]"
        );
    }
}
