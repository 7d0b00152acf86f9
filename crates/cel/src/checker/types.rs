//! CEL types as cel-go's checker knows them, and the mapping from an OpenAPI schema node to its
//! CEL type as Kubernetes declares it (`SchemaDeclType` in apiserver `pkg/cel/common/schemas.go`,
//! property-name escaping from `pkg/cel/escaping.go`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

use serde_json::{Value, json};

/// A CEL type as cel-go's checker knows it.
// `TypeOf` is the design's shared name for `type(T)`.
#[allow(clippy::enum_variant_names)]
#[derive(Clone, Debug)]
pub(crate) enum Type {
    /// `dyn`: any value; assignable to and from everything.
    Dyn,
    /// cel-go's error type (`*error*`), given to expressions that failed to check.
    Error,
    /// `null_type`.
    Null,
    /// `bool`.
    Bool,
    /// `int`.
    Int,
    /// `uint`.
    Uint,
    /// `double`.
    Double,
    /// `string`.
    String,
    /// `bytes`.
    Bytes,
    /// `google.protobuf.Timestamp`.
    Timestamp,
    /// `google.protobuf.Duration`.
    Duration,
    /// `list(T)`.
    List(Box<Type>),
    /// `map(K, V)`.
    Map(Box<Type>, Box<Type>),
    /// An object type from a schema node (declared properties only); also the root/embedded
    /// resource, which additionally declares apiVersion, kind, metadata{name,generateName}.
    Object(Arc<ObjectType>),
    /// `optional_type(T)`.
    Optional(Box<Type>),
    /// `type(T)`: the type of a type value (`int`, `string`, `type(x)`).
    TypeOf(Box<Type>),
    /// Library types: `kubernetes.Quantity`, `net.IP`, `net.CIDR`, `kubernetes.URL`,
    /// `kubernetes.Semver`, `kubernetes.NamedFormat`, `kubernetes.authorization.*`.
    Opaque(&'static str, Vec<Type>),
    /// Type parameters (`A`, `B`) in overload signatures.
    Param(&'static str),
    /// A free type variable of the checker (`_var0`); never left in a `Checked` result.
    Var(u32),
}

/// An object type: the declared (accessible) properties of a schema node.
#[derive(Debug)]
pub(crate) struct ObjectType {
    /// The type name cel-go prints (`selfType0`, `selfType0.spec`, `object`).
    pub name: String,
    /// Escaped CEL field name → (property name in the schema, field type).
    pub fields: BTreeMap<String, (String, Type)>,
}

/// Which library set applies: rules being created are held to the compatibility version
/// (Kubernetes 1.33 for a 1.34 server); rules already stored may use everything.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Compat {
    /// Expressions new in this write: libraries introduced after 1.33 are not declared.
    NewExpressions,
    /// Expressions unchanged from the stored object: every library is declared.
    StoredExpressions,
}

impl Compat {
    /// Whether an overload introduced in Kubernetes 1.`minor` is declared under this setting.
    pub(crate) fn allows(self, minor: u8) -> bool {
        match self {
            Compat::StoredExpressions => true,
            Compat::NewExpressions => minor <= COMPATIBILITY_MINOR,
        }
    }
}

/// The minor version of the compatibility version (n-1 of the 1.34 server) new expressions
/// are held to.
pub(crate) const COMPATIBILITY_MINOR: u8 = 33;

/// The type name given to the rule's own object type. Upstream generates
/// `selfType<nanoseconds>` anew on every CRD write; a fixed value keeps our texts stable.
pub(crate) const SELF_TYPE_NAME: &str = "selfType0";

impl PartialEq for Type {
    fn eq(&self, other: &Self) -> bool {
        use Type::{
            Bool, Bytes, Double, Duration, Dyn, Error, Int, List, Map, Null, Object, Opaque,
            Optional, Param, String, Timestamp, TypeOf, Uint, Var,
        };
        match (self, other) {
            (Dyn, Dyn)
            | (Error, Error)
            | (Null, Null)
            | (Bool, Bool)
            | (Int, Int)
            | (Uint, Uint)
            | (Double, Double)
            | (String, String)
            | (Bytes, Bytes)
            | (Timestamp, Timestamp)
            | (Duration, Duration) => true,
            (List(a), List(b)) | (Optional(a), Optional(b)) | (TypeOf(a), TypeOf(b)) => a == b,
            (Map(k1, v1), Map(k2, v2)) => k1 == k2 && v1 == v2,
            (Object(a), Object(b)) => a.name == b.name,
            (Opaque(n1, p1), Opaque(n2, p2)) => n1 == n2 && p1 == p2,
            (Param(a), Param(b)) => a == b,
            (Var(a), Var(b)) => a == b,
            _ => false,
        }
    }
}

impl Type {
    /// cel-go's text for the type (`FormatCELType`), as printed in checker errors.
    pub(crate) fn name(&self) -> String {
        let mut out = String::new();
        self.write_name(&mut out);
        out
    }

    fn write_name(&self, out: &mut String) {
        let simple = match self {
            Type::Dyn => "dyn",
            Type::Error => "*error*",
            Type::Null => "null_type",
            Type::Bool => "bool",
            Type::Int => "int",
            Type::Uint => "uint",
            Type::Double => "double",
            Type::String => "string",
            Type::Bytes => "bytes",
            Type::Timestamp => "google.protobuf.Timestamp",
            Type::Duration => "google.protobuf.Duration",
            Type::Object(o) => {
                out.push_str(&o.name);
                return;
            }
            Type::Param(p) => p,
            Type::Var(n) => {
                let _ = write!(out, "_var{n}");
                return;
            }
            Type::List(t) => return Self::write_params(out, "list", &[t.as_ref()]),
            Type::Map(k, v) => return Self::write_params(out, "map", &[k.as_ref(), v.as_ref()]),
            Type::Optional(t) => return Self::write_params(out, "optional_type", &[t.as_ref()]),
            Type::TypeOf(t) => return Self::write_params(out, "type", &[t.as_ref()]),
            Type::Opaque(n, ps) => {
                if ps.is_empty() {
                    out.push_str(n);
                    return;
                }
                let refs: Vec<&Type> = ps.iter().collect();
                return Self::write_params(out, n, &refs);
            }
        };
        out.push_str(simple);
    }

    fn write_params(out: &mut String, name: &str, params: &[&Type]) {
        out.push_str(name);
        out.push('(');
        for (i, p) in params.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            p.write_name(out);
        }
        out.push(')');
    }

    /// Whether the type is `dyn` or the error type (cel-go's `isDynOrError`).
    pub(crate) fn is_dyn_or_error(&self) -> bool {
        matches!(self, Type::Dyn | Type::Error)
    }

    /// The type parameters of a parameterized type (list, map, optional, type, opaque).
    pub(crate) fn params(&self) -> Vec<&Type> {
        match self {
            Type::List(t) | Type::Optional(t) | Type::TypeOf(t) => vec![t.as_ref()],
            Type::Map(k, v) => vec![k.as_ref(), v.as_ref()],
            Type::Opaque(_, ps) => ps.iter().collect(),
            _ => Vec::new(),
        }
    }

    /// The same type constructor with new parameters (in `params()` order).
    pub(crate) fn with_params(&self, mut ps: Vec<Type>) -> Type {
        let mut next = || {
            Box::new(if ps.is_empty() {
                Type::Dyn
            } else {
                ps.remove(0)
            })
        };
        match self {
            Type::List(_) => Type::List(next()),
            Type::Optional(_) => Type::Optional(next()),
            Type::TypeOf(_) => Type::TypeOf(next()),
            Type::Map(_, _) => {
                let k = next();
                Type::Map(k, next())
            }
            Type::Opaque(n, _) => Type::Opaque(n, ps),
            other => other.clone(),
        }
    }
}

/// CEL reserved words that Kubernetes escapes as `__word__` when they are property names.
const RESERVED: [&str; 21] = [
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// The CEL field name of a schema property (apiserver `cel.Escape`), or `None` when the
/// property is not accessible from CEL.
pub(crate) fn escape(name: &str) -> Option<String> {
    let first = name.chars().next()?;
    if first.is_ascii_digit() {
        return None;
    }
    if RESERVED.contains(&name) {
        return Some(format!("__{name}__"));
    }
    let mut out = String::with_capacity(name.len());
    let mut chars = name.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '_' if chars.peek() == Some(&'_') => {
                chars.next();
                out.push_str("__underscores__");
            }
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c if c.is_ascii_alphanumeric() || c == '_' => out.push(c),
            _ => return None,
        }
    }
    Some(out)
}

/// Whether a schema node is an `x-kubernetes-embedded-resource`.
pub(crate) fn is_embedded(node: &Value) -> bool {
    node.get("x-kubernetes-embedded-resource")
        .and_then(Value::as_bool)
        == Some(true)
}

fn type_of_node(node: &Value) -> &str {
    node.get("type").and_then(Value::as_str).unwrap_or("")
}

/// The schema node as CEL sees it: at a resource root (or an embedded resource), Kubernetes
/// adds `apiVersion`, `kind` and `metadata{name, generateName}` (replacing whatever the schema
/// says about `metadata`), as `Structural.WithTypeAndObjectMeta` does.
pub(crate) fn with_type_and_object_meta(node: &Value) -> Value {
    let mut out = node.clone();
    if let Some(m) = out.as_object_mut() {
        let props = m
            .entry("properties")
            .or_insert_with(|| Value::Object(serde_json::Map::new()));
        if let Some(p) = props.as_object_mut() {
            p.insert("apiVersion".into(), json!({"type": "string"}));
            p.insert("kind".into(), json!({"type": "string"}));
            p.insert(
                "metadata".into(),
                json!({"type": "object", "properties": {
                    "name": {"type": "string"},
                    "generateName": {"type": "string"}
                }}),
            );
        }
    }
    out
}

/// The CEL type of a schema node (Kubernetes `SchemaDeclType`), or `None` when the node is not
/// exposed to CEL (no type, or a list/map of such nodes). `name` is the object type name to
/// give this node (`selfType0` at the rule's node, `object` elsewhere); object properties are
/// named `<name>.<field>` as `MaybeAssignTypeName` does, but not list items or map values.
pub(crate) fn schema_type(node: &Value, resource_root: bool, name: &str) -> Option<Type> {
    if node
        .get("x-kubernetes-int-or-string")
        .and_then(Value::as_bool)
        == Some(true)
    {
        return Some(Type::Dyn);
    }
    let meta;
    let node = if resource_root {
        meta = with_type_and_object_meta(node);
        &meta
    } else {
        node
    };
    match type_of_node(node) {
        "array" => {
            let items = node.get("items")?;
            let t = schema_type(items, is_embedded(items), "object")?;
            Some(Type::List(Box::new(t)))
        }
        "object" => {
            if let Some(ap) = node.get("additionalProperties").filter(|a| a.is_object()) {
                let t = schema_type(ap, is_embedded(ap), "object")?;
                return Some(Type::Map(Box::new(Type::String), Box::new(t)));
            }
            let mut fields = BTreeMap::new();
            if let Some(props) = node.get("properties").and_then(Value::as_object) {
                for (prop, sub) in props {
                    let Some(escaped) = escape(prop) else {
                        continue;
                    };
                    let child_name = if name == "object" {
                        "object".to_string()
                    } else {
                        format!("{name}.{escaped}")
                    };
                    if let Some(t) = schema_type(sub, is_embedded(sub), &child_name) {
                        fields.insert(escaped, (prop.clone(), t));
                    }
                }
            }
            Some(Type::Object(Arc::new(ObjectType {
                name: name.to_string(),
                fields,
            })))
        }
        "string" => Some(
            match node.get("format").and_then(Value::as_str).unwrap_or("") {
                "byte" => Type::Bytes,
                "duration" => Type::Duration,
                "date" | "date-time" => Type::Timestamp,
                _ => Type::String,
            },
        ),
        "boolean" => Some(Type::Bool),
        "number" => Some(Type::Double),
        "integer" => Some(Type::Int),
        _ => None,
    }
}

/// The schema node of property `prop` under `node` as CEL sees it (with the implicit resource
/// metadata at resource roots).
pub(crate) fn property_schema(node: &Value, prop: &str, resource_root: bool) -> Option<Value> {
    if resource_root && matches!(prop, "apiVersion" | "kind" | "metadata") {
        return with_type_and_object_meta(node)
            .get("properties")
            .and_then(|p| p.get(prop))
            .cloned();
    }
    node.get("properties").and_then(|p| p.get(prop)).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_matches_upstream() {
        let cases: [(&str, Option<&str>); 9] = [
            ("namespace", Some("__namespace__")),
            ("x-prop", Some("x__dash__prop")),
            ("redact__d", Some("redact__underscores__d")),
            ("a.b/c", Some("a__dot__b__slash__c")),
            ("a___b", Some("a__underscores___b")),
            ("sprint", Some("sprint")),
            ("1a", None),
            ("a b", None),
            ("", None),
        ];
        for (input, want) in cases {
            assert_eq!(escape(input).as_deref(), want, "{input}");
        }
    }

    #[test]
    fn names_print_as_cel_go() {
        let t = Type::Map(
            Box::new(Type::String),
            Box::new(Type::List(Box::new(Type::Optional(Box::new(Type::Int))))),
        );
        assert_eq!(t.name(), "map(string, list(optional_type(int)))");
        assert_eq!(Type::Timestamp.name(), "google.protobuf.Timestamp");
        assert_eq!(Type::TypeOf(Box::new(Type::Dyn)).name(), "type(dyn)");
        assert_eq!(Type::Opaque("net.IP", vec![]).name(), "net.IP");
    }
}
