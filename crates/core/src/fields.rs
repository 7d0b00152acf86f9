//! Field selectors (apimachinery `pkg/fields`): the `fieldSelector` query parameter of list,
//! watch and delete-collection requests.
//!
//! A selector is a comma-separated list of `field=value`, `field==value` or `field!=value` terms,
//! all of which must hold. In values, `\` escapes `\`, `,` and `=`; field names have no escaping,
//! so the first operator in a term splits it. A field the object does not have compares as the
//! empty string. Parse errors carry upstream's exact text, since the server returns them in a
//! 400 `BadRequest`.

use std::fmt;

/// How a field is compared with the value of a [`FieldRequirement`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FieldOp {
    /// `=` or `==`: the field's value must equal the value.
    Equals,
    /// `!=`: the field's value must differ from the value.
    NotEquals,
}

impl FieldOp {
    /// The operator as the canonical string form prints it (`==` prints as `=`).
    pub fn as_str(self) -> &'static str {
        match self {
            FieldOp::Equals => "=",
            FieldOp::NotEquals => "!=",
        }
    }
}

/// One term of a field selector, such as `metadata.name=foo`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FieldRequirement {
    /// The field path as written by the client (for custom resources, `metadata.name`,
    /// `metadata.namespace` or a selectable field's JSON path without its leading dot).
    pub field: String,
    /// The comparison.
    pub op: FieldOp,
    /// The unescaped value to compare with.
    pub value: String,
}

impl FieldRequirement {
    /// Whether a field value (`None` when the object lacks the field, which compares as `""`)
    /// satisfies this term.
    pub fn matches(&self, actual: Option<&str>) -> bool {
        let actual = actual.unwrap_or("");
        match self.op {
            FieldOp::Equals => actual == self.value,
            FieldOp::NotEquals => actual != self.value,
        }
    }
}

impl fmt::Display for FieldRequirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}{}{}",
            self.field,
            self.op.as_str(),
            escape_value(&self.value)
        )
    }
}

/// A parsed field selector: the AND of its requirements. No requirement selects everything.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct FieldSelector {
    /// The terms, in the order upstream keeps them (sorted by their raw text).
    pub requirements: Vec<FieldRequirement>,
}

impl FieldSelector {
    /// A selector that matches every object (the empty `fieldSelector`).
    pub fn everything() -> Self {
        FieldSelector::default()
    }

    /// Parses a `fieldSelector` string as upstream's `fields.ParseSelector` does.
    ///
    /// Errors are upstream's messages: `invalid selector: '<s>'; can't understand '<term>'`,
    /// `invalid field selector: invalid escape sequence: <seq>` and
    /// `invalid field selector: unescaped character in value: <code point>` (Go prints the
    /// rune as a number). Terms with both an empty field and an empty value (`=`) are dropped,
    /// as upstream's `Transform` does.
    pub fn parse(s: &str) -> Result<FieldSelector, String> {
        let mut parts = split_terms(s);
        parts.sort_unstable();
        let mut requirements = Vec::with_capacity(parts.len());
        for part in parts {
            if part.is_empty() {
                continue;
            }
            let Some((field, op, rhs)) = split_term(part) else {
                return Err(format!(
                    "invalid selector: '{s}'; can't understand '{part}'"
                ));
            };
            let value = unescape_value(rhs)?;
            if field.is_empty() && value.is_empty() {
                continue;
            }
            requirements.push(FieldRequirement {
                field: field.to_string(),
                op,
                value,
            });
        }
        Ok(FieldSelector { requirements })
    }

    /// Whether the selector restricts nothing.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether an object matches; `get` returns a field's value as a string, or `None` when the
    /// object lacks it (compared as `""`, as upstream).
    pub fn matches(&self, get: impl Fn(&str) -> Option<String>) -> bool {
        self.requirements
            .iter()
            .all(|r| r.matches(get(&r.field).as_deref()))
    }

    /// The value an `=`/`==` term requires of `field` (the first such term), so that storage
    /// can narrow a `metadata.name` or `metadata.namespace` query. `!=` terms never count.
    pub fn exact_match(&self, field: &str) -> Option<&str> {
        self.requirements
            .iter()
            .find(|r| r.op == FieldOp::Equals && r.field == field)
            .map(|r| r.value.as_str())
    }

    /// The field names the selector mentions, in requirement order (possibly repeated), so the
    /// server can reject labels it does not support.
    pub fn fields(&self) -> impl Iterator<Item = &str> {
        self.requirements.iter().map(|r| r.field.as_str())
    }
}

impl fmt::Display for FieldSelector {
    /// The canonical form, as upstream's `String()`: terms joined by `,`, `==` printed as `=`,
    /// values escaped.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

/// Escapes a literal value for use in a field selector: `\` → `\\`, `,` → `\,`, `=` → `\=`
/// (upstream's `EscapeValue`).
pub fn escape_value(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '\\' | ',' | '=') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Reverses [`escape_value`] with upstream's errors: an unknown escape or a trailing `\` is an
/// invalid escape sequence, and a bare `,` or `=` is an unescaped character.
fn unescape_value(s: &str) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut in_slash = false;
    for c in s.chars() {
        if in_slash {
            if !matches!(c, '\\' | ',' | '=') {
                return Err(format!(
                    "invalid field selector: invalid escape sequence: \\{c}"
                ));
            }
            out.push(c);
            in_slash = false;
            continue;
        }
        match c {
            '\\' => in_slash = true,
            ',' | '=' => {
                return Err(format!(
                    "invalid field selector: unescaped character in value: {}",
                    u32::from(c)
                ));
            }
            _ => out.push(c),
        }
    }
    if in_slash {
        return Err("invalid field selector: invalid escape sequence: \\".to_string());
    }
    Ok(out)
}

/// Splits on commas that are not escaped; escaped commas stay in the term with their backslash.
/// An empty selector has no terms.
fn split_terms(s: &str) -> Vec<&str> {
    if s.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::with_capacity(1);
    let mut start = 0;
    let mut in_slash = false;
    for (i, c) in s.char_indices() {
        if in_slash {
            in_slash = false;
        } else if c == '\\' {
            in_slash = true;
        } else if c == ',' {
            terms.push(&s[start..i]);
            start = i + 1;
        }
    }
    terms.push(&s[start..]);
    terms
}

/// Splits a term at the first operator (`!=`, then `==`, then `=` at each position), returning
/// the field, the operator and the still-escaped value.
fn split_term(term: &str) -> Option<(&str, FieldOp, &str)> {
    const OPERATORS: [(&str, FieldOp); 3] = [
        ("!=", FieldOp::NotEquals),
        ("==", FieldOp::Equals),
        ("=", FieldOp::Equals),
    ];
    for (i, _) in term.char_indices() {
        let remaining = &term[i..];
        for (text, op) in OPERATORS {
            if let Some(rhs) = remaining.strip_prefix(text) {
                return Some((&term[..i], op, rhs));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn getter(fields: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: BTreeMap<String, String> = fields
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
            .collect();
        move |f| map.get(f).cloned()
    }

    #[test]
    fn parses_and_prints_canonical_form() {
        // (input, canonical String() form)
        let cases: &[(&str, &str)] = &[
            ("", ""),
            (",", ""),
            ("=", ""),
            ("!=", ""),
            ("a=b", "a=b"),
            ("a==b", "a=b"),
            ("a!=b", "a!=b"),
            ("a=", "a="),
            ("=b", "=b"),
            ("b=2,a=1", "a=1,b=2"),
            ("x=a,,y=b", "x=a,y=b"),
            (
                "metadata.name=foo,metadata.namespace!=bar",
                "metadata.name=foo,metadata.namespace!=bar",
            ),
            (r"a=x\,y", r"a=x\,y"),
            (r"a=x\=y", r"a=x\=y"),
            (r"a=x\\y", r"a=x\\y"),
            ("spec.color=réd", "spec.color=réd"),
            (" a = b ", " a = b "),
        ];
        for &(input, want) in cases {
            let sel = FieldSelector::parse(input)
                .unwrap_or_else(|e| panic!("parse {input:?} failed: {e}"));
            assert_eq!(sel.to_string(), want, "input {input:?}");
            // The canonical form parses back to the same selector.
            assert_eq!(FieldSelector::parse(&sel.to_string()), Ok(sel), "{input:?}");
        }
    }

    #[test]
    fn parses_requirements_with_unescaped_values() {
        let sel = FieldSelector::parse(r"b!=x\,y\=z\\,a==1").unwrap_or_default();
        assert_eq!(
            sel.requirements,
            vec![
                FieldRequirement {
                    field: "a".into(),
                    op: FieldOp::Equals,
                    value: "1".into()
                },
                FieldRequirement {
                    field: "b".into(),
                    op: FieldOp::NotEquals,
                    value: r"x,y=z\".into()
                },
            ]
        );
    }

    #[test]
    fn rejects_bad_selectors_with_upstream_messages() {
        let cases: &[(&str, &str)] = &[
            ("a", "invalid selector: 'a'; can't understand 'a'"),
            ("a=b,c", "invalid selector: 'a=b,c'; can't understand 'c'"),
            ("a<b", "invalid selector: 'a<b'; can't understand 'a<b'"),
            ("!", "invalid selector: '!'; can't understand '!'"),
            (
                "a=b=c",
                "invalid field selector: unescaped character in value: 61",
            ),
            (
                "a!==b",
                "invalid field selector: unescaped character in value: 61",
            ),
            (
                "a===b",
                "invalid field selector: unescaped character in value: 61",
            ),
            (
                r"a=b\,c=d",
                "invalid field selector: unescaped character in value: 61",
            ),
            (
                r"a=b\n",
                r"invalid field selector: invalid escape sequence: \n",
            ),
            (
                r"a=b\é",
                r"invalid field selector: invalid escape sequence: \é",
            ),
            (
                r"a=b\",
                r"invalid field selector: invalid escape sequence: \",
            ),
            (
                r"a=\",
                r"invalid field selector: invalid escape sequence: \",
            ),
            // Terms are sorted before parsing, so the first bad term in sorted order is reported.
            ("z,y", "invalid selector: 'z,y'; can't understand 'y'"),
        ];
        for &(input, want) in cases {
            assert_eq!(
                FieldSelector::parse(input),
                Err(want.to_string()),
                "{input:?}"
            );
        }
    }

    #[test]
    fn matches_objects() {
        let obj = getter(&[
            ("metadata.name", "foo"),
            ("metadata.namespace", "ns"),
            ("spec.color", "red"),
            ("spec.count", "3"),
        ]);
        // (selector, expected match against `obj`)
        let cases: &[(&str, bool)] = &[
            ("", true),
            ("metadata.name=foo", true),
            ("metadata.name==foo", true),
            ("metadata.name=bar", false),
            ("metadata.name!=bar", true),
            ("metadata.name!=foo", false),
            ("metadata.name=foo,metadata.namespace=ns", true),
            ("metadata.name=foo,metadata.namespace=other", false),
            ("spec.color=red,spec.count=3", true),
            ("spec.count!=3", false),
            // A missing field compares as "".
            ("spec.size=", true),
            ("spec.size!=", false),
            ("spec.size=big", false),
            ("spec.size!=big", true),
            ("metadata.name=", false),
        ];
        for &(sel, want) in cases {
            let parsed = FieldSelector::parse(sel).unwrap_or_else(|e| panic!("{sel:?}: {e}"));
            assert_eq!(parsed.matches(&obj), want, "{sel:?}");
        }
    }

    #[test]
    fn exact_match_and_fields() {
        let sel = FieldSelector::parse("metadata.namespace!=x,metadata.name=b,metadata.name=a")
            .unwrap_or_default();
        assert_eq!(sel.exact_match("metadata.name"), Some("a"));
        assert_eq!(sel.exact_match("metadata.namespace"), None);
        assert_eq!(sel.exact_match("spec.color"), None);
        assert_eq!(
            sel.fields().collect::<Vec<_>>(),
            ["metadata.name", "metadata.name", "metadata.namespace"]
        );
        let sel = FieldSelector::parse("metadata.name==").unwrap_or_default();
        assert_eq!(sel.exact_match("metadata.name"), Some(""));
        assert!(FieldSelector::everything().is_empty());
        assert!(FieldSelector::parse("=,,=").is_ok_and(|s| s.is_empty()));
        assert!(!FieldSelector::parse("=x").is_ok_and(|s| s.is_empty()));
    }

    #[test]
    fn escape_round_trips() {
        for v in ["", "plain", r"a\b", "a,b", "a=b", r"\,=\\", "ünï,cödé="] {
            let sel = FieldSelector {
                requirements: vec![FieldRequirement {
                    field: "f".into(),
                    op: FieldOp::NotEquals,
                    value: v.into(),
                }],
            };
            assert_eq!(FieldSelector::parse(&sel.to_string()), Ok(sel), "{v:?}");
        }
    }

    #[test]
    fn garbage_never_panics() {
        let inputs = [
            "\\",
            "\\\\",
            ",,,",
            "===",
            "!!==",
            "\u{0}",
            "a=\u{0}",
            "é=ü",
            "\u{10FFFF}!=\\\u{10FFFF}",
            "a=b\\,",
            "\\,=",
            "=\\",
            "!",
            "a!",
            "a!=\\",
            "\n=\t",
            "🦀=🦀,🦀!=x",
        ];
        for input in inputs {
            let _ = FieldSelector::parse(input).map(|s| (s.to_string(), s.matches(|_| None)));
        }
        // Every short string over a small alphabet of special characters.
        let alphabet = ['a', '=', '!', ',', '\\', 'é'];
        let mut stack = vec![String::new()];
        while let Some(s) = stack.pop() {
            if let Ok(sel) = FieldSelector::parse(&s) {
                let _ = sel.matches(|_| Some("a".into()));
                let _ = sel.to_string();
            }
            if s.chars().count() < 5 {
                for c in alphabet {
                    stack.push(format!("{s}{c}"));
                }
            }
        }
    }
}
