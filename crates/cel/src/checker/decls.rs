//! Function declarations (overload signatures) of the CEL environment Kubernetes 1.34 gives
//! CRD validation rules: the CEL standard library (cel-go `common/stdlib/standard.go`, with
//! cross-type numeric comparisons), optional types, ext strings v2, ext sets, ext lists v3,
//! two-variable comprehensions' helpers, and the Kubernetes libraries (lists, regex, urls,
//! quantity, ip, cidr, format, semver, authz) — each overload tagged with the Kubernetes minor
//! version that introduced it (apiserver `pkg/cel/environment/base.go`).

use std::collections::HashMap;
use std::sync::OnceLock;

use super::types::{Compat, Type};

/// One overload of a function: call style, argument types (receiver first for member
/// overloads), result type, and the Kubernetes minor version that introduced it.
#[derive(Debug)]
pub(crate) struct Overload {
    /// Called as `target.f(args)` (member) rather than `f(args)` (global).
    pub member: bool,
    /// Argument types; for member overloads the receiver is the first.
    pub args: Vec<Type>,
    /// Result type (may mention the type parameters of `args`).
    pub result: Type,
    /// Kubernetes minor version (1.x) in which the overload became available.
    pub since: u8,
}

impl Overload {
    /// Whether the signature mentions a type parameter (needs fresh type variables per use).
    pub(crate) fn is_generic(&self) -> bool {
        fn has_param(t: &Type) -> bool {
            matches!(t, Type::Param(_)) || t.params().into_iter().any(has_param)
        }
        self.args.iter().any(has_param) || has_param(&self.result)
    }
}

const A: Type = Type::Param("A");
const B: Type = Type::Param("B");
const K: Type = Type::Param("K");
const V: Type = Type::Param("V");
const T: Type = Type::Param("T");

fn list(t: Type) -> Type {
    Type::List(Box::new(t))
}
fn map(k: Type, v: Type) -> Type {
    Type::Map(Box::new(k), Box::new(v))
}
fn opt(t: Type) -> Type {
    Type::Optional(Box::new(t))
}
fn opaque(name: &'static str) -> Type {
    Type::Opaque(name, Vec::new())
}

/// `kubernetes.Quantity`.
fn quantity() -> Type {
    opaque("kubernetes.Quantity")
}
/// `net.IP`.
fn ip() -> Type {
    opaque("net.IP")
}
/// `net.CIDR`.
fn cidr() -> Type {
    opaque("net.CIDR")
}
/// `kubernetes.URL`.
fn url() -> Type {
    opaque("kubernetes.URL")
}
/// `kubernetes.Semver`.
fn semver() -> Type {
    opaque("kubernetes.Semver")
}
/// `kubernetes.NamedFormat`.
fn named_format() -> Type {
    opaque("kubernetes.NamedFormat")
}

/// The element types the comparison-based list functions are declared for.
fn comparable() -> Vec<Type> {
    vec![
        Type::Int,
        Type::Uint,
        Type::Double,
        Type::Bool,
        Type::Duration,
        Type::Timestamp,
        Type::String,
        Type::Bytes,
    ]
}

#[derive(Default)]
struct Builder {
    fns: HashMap<&'static str, Vec<Overload>>,
}

impl Builder {
    fn add(&mut self, name: &'static str, member: bool, since: u8, args: Vec<Type>, result: Type) {
        self.fns.entry(name).or_default().push(Overload {
            member,
            args,
            result,
            since,
        });
    }
    fn g(&mut self, name: &'static str, since: u8, args: Vec<Type>, result: Type) {
        self.add(name, false, since, args, result);
    }
    fn m(&mut self, name: &'static str, since: u8, args: Vec<Type>, result: Type) {
        self.add(name, true, since, args, result);
    }
}

fn standard(b: &mut Builder) {
    use Type::{Bool, Bytes, Double, Duration, Dyn, Int, String, Timestamp, Uint};
    b.g("_?_:_", 0, vec![Bool, A, A], A);
    b.g("_&&_", 0, vec![Bool, Bool], Bool);
    b.g("_||_", 0, vec![Bool, Bool], Bool);
    b.g("!_", 0, vec![Bool], Bool);
    b.g("@not_strictly_false", 0, vec![Bool], Bool);
    b.g("_==_", 0, vec![A, A], Bool);
    b.g("_!=_", 0, vec![A, A], Bool);
    for (l, r, out) in [
        (Bytes, Bytes, Bytes),
        (Double, Double, Double),
        (Duration, Duration, Duration),
        (Duration, Timestamp, Timestamp),
        (Timestamp, Duration, Timestamp),
        (Int, Int, Int),
        (list(A), list(A), list(A)),
        (String, String, String),
        (Uint, Uint, Uint),
    ] {
        b.g("_+_", 0, vec![l, r], out);
    }
    for (l, r, out) in [
        (Double, Double, Double),
        (Duration, Duration, Duration),
        (Int, Int, Int),
        (Timestamp, Duration, Timestamp),
        (Timestamp, Timestamp, Duration),
        (Uint, Uint, Uint),
    ] {
        b.g("_-_", 0, vec![l, r], out);
    }
    for op in ["_*_", "_/_"] {
        for t in [Double, Int, Uint] {
            b.g(op, 0, vec![t.clone(), t.clone()], t);
        }
    }
    for t in [Int, Uint] {
        b.g("_%_", 0, vec![t.clone(), t.clone()], t);
    }
    for t in [Double, Int] {
        b.g("-_", 0, vec![t.clone()], t);
    }
    for op in ["_<_", "_<=_", "_>_", "_>=_"] {
        for (l, r) in [
            (Bool, Bool),
            (Int, Int),
            (Int, Double),
            (Int, Uint),
            (Uint, Uint),
            (Uint, Double),
            (Uint, Int),
            (Double, Double),
            (Double, Int),
            (Double, Uint),
            (String, String),
            (Bytes, Bytes),
            (Timestamp, Timestamp),
            (Duration, Duration),
        ] {
            // Cross-type numeric comparisons arrived with Kubernetes 1.28.
            let since = if l == r { 0 } else { 28 };
            b.g(op, since, vec![l, r], Bool);
        }
    }
    b.g("_[_]", 0, vec![list(A), Int], A);
    b.g("_[_]", 0, vec![map(A, B), A], B);
    b.g("@in", 0, vec![A, list(A)], Bool);
    b.g("@in", 0, vec![A, map(A, B)], Bool);
    for t in [Bytes, list(A), map(A, B), String] {
        b.g("size", 0, vec![t.clone()], Int);
        b.m("size", 0, vec![t], Int);
    }
    b.g("type", 0, vec![A], Type::TypeOf(Box::new(A)));
    b.g("dyn", 0, vec![A], Dyn);
    for t in [Bool, String] {
        b.g("bool", 0, vec![t], Bool);
    }
    for t in [Bytes, String] {
        b.g("bytes", 0, vec![t], Bytes);
    }
    for t in [Double, Int, String, Uint] {
        b.g("double", 0, vec![t], Double);
    }
    for t in [Duration, Int, String] {
        b.g("duration", 0, vec![t], Duration);
    }
    for t in [Int, Double, Duration, String, Timestamp, Uint] {
        b.g("int", 0, vec![t], Int);
    }
    for t in [String, Bool, Bytes, Double, Duration, Int, Timestamp, Uint] {
        b.g("string", 0, vec![t], String);
    }
    for t in [Timestamp, Int, String] {
        b.g("timestamp", 0, vec![t], Timestamp);
    }
    for t in [Uint, Double, Int, String] {
        b.g("uint", 0, vec![t], Uint);
    }
    for f in ["contains", "endsWith", "startsWith"] {
        b.m(f, 0, vec![String, String], Bool);
    }
    b.g("matches", 0, vec![String, String], Bool);
    b.m("matches", 0, vec![String, String], Bool);
    for f in [
        "getFullYear",
        "getMonth",
        "getDayOfYear",
        "getDayOfMonth",
        "getDate",
        "getDayOfWeek",
        "getHours",
        "getMinutes",
        "getSeconds",
        "getMilliseconds",
    ] {
        b.m(f, 0, vec![Timestamp], Int);
        b.m(f, 0, vec![Timestamp, String], Int);
    }
    for f in ["getHours", "getMinutes", "getSeconds", "getMilliseconds"] {
        b.m(f, 0, vec![Duration], Int);
    }
}

/// cel-go `OptionalTypes()` (Kubernetes 1.28); the optMap/optFlatMap macros are handled by the
/// checker itself.
fn optional(b: &mut Builder) {
    use Type::{Bool, Int};
    b.g("optional.of", 28, vec![V], opt(V));
    b.g("optional.ofNonZeroValue", 28, vec![V], opt(V));
    b.g("optional.none", 28, vec![], opt(V));
    b.m("value", 28, vec![opt(V)], V);
    b.m("hasValue", 28, vec![opt(V)], Bool);
    b.m("or", 28, vec![opt(V), opt(V)], opt(V));
    b.m("orValue", 28, vec![opt(V), V], V);
    b.g("_[?_]", 28, vec![map(K, V), K], opt(V));
    b.g("_[?_]", 28, vec![opt(map(K, V)), K], opt(V));
    b.g("_[?_]", 28, vec![list(V), Int], opt(V));
    b.g("_[?_]", 28, vec![opt(list(V)), Int], opt(V));
    b.g("_[_]", 28, vec![opt(list(V)), Int], opt(V));
    b.g("_[_]", 28, vec![opt(map(K, V)), K], opt(V));
    b.m("first", 28, vec![list(V)], opt(V));
    b.m("last", 28, vec![list(V)], opt(V));
    b.g("optional.unwrap", 28, vec![list(opt(V))], list(V));
    b.m("unwrapOpt", 28, vec![list(opt(V))], list(V));
}

/// cel-go `ext.Strings(ext.StringsVersion(2))` (Kubernetes 1.29; version 0 before, whose
/// functions are a subset).
fn strings(b: &mut Builder) {
    use Type::{Dyn, Int, String};
    b.m("charAt", 0, vec![String, Int], String);
    b.m("indexOf", 0, vec![String, String], Int);
    b.m("indexOf", 0, vec![String, String, Int], Int);
    b.m("lastIndexOf", 0, vec![String, String], Int);
    b.m("lastIndexOf", 0, vec![String, String, Int], Int);
    b.m("lowerAscii", 0, vec![String], String);
    b.m("upperAscii", 0, vec![String], String);
    b.m("replace", 0, vec![String, String, String], String);
    b.m("replace", 0, vec![String, String, String, Int], String);
    b.m("split", 0, vec![String, String], list(String));
    b.m("split", 0, vec![String, String, Int], list(String));
    b.m("substring", 0, vec![String, Int], String);
    b.m("substring", 0, vec![String, Int, Int], String);
    b.m("trim", 0, vec![String], String);
    b.m("join", 0, vec![list(String)], String);
    b.m("join", 0, vec![list(String), String], String);
    b.m("format", 29, vec![String, list(Dyn)], String);
    b.g("strings.quote", 29, vec![String], String);
}

/// Kubernetes' `JSONPatch` library (1.32), declared only in the mutating admission policy
/// environment (the checker hides the `jsonpatch` namespace elsewhere).
fn k8s_jsonpatch(b: &mut Builder) {
    b.g("jsonpatch.escapeKey", 32, vec![Type::String], Type::String);
}

/// cel-go `ext.Sets()` (Kubernetes 1.29).
fn sets(b: &mut Builder) {
    for f in ["sets.contains", "sets.equivalent", "sets.intersects"] {
        b.g(f, 29, vec![list(T), list(T)], Type::Bool);
    }
}

/// cel-go `ext.Lists(ext.ListsVersion(3))` (Kubernetes 1.34).
fn ext_lists(b: &mut Builder) {
    use Type::{Dyn, Int};
    b.m("slice", 34, vec![list(T), Int, Int], list(T));
    b.m("flatten", 34, vec![list(list(T))], list(T));
    b.m("flatten", 34, vec![list(Dyn), Int], list(Dyn));
    for t in comparable() {
        b.m("sort", 34, vec![list(t.clone())], list(t.clone()));
        b.m("@sortByAssociatedKeys", 34, vec![list(T), list(t)], list(T));
    }
    b.g("lists.range", 34, vec![Int], list(Int));
    b.m("reverse", 34, vec![list(T)], list(T));
    b.m("distinct", 34, vec![list(T)], list(T));
}

/// cel-go `ext.TwoVarComprehensions()` (Kubernetes 1.32): the map-building helper its
/// `transformMap`/`transformMapEntry` expansions call.
fn two_var(b: &mut Builder) {
    b.g("cel.@mapInsert", 32, vec![map(K, V), K, V], map(K, V));
    b.g("cel.@mapInsert", 32, vec![map(K, V), map(K, V)], map(K, V));
}

/// Kubernetes `library.Lists` (always available).
fn k8s_lists(b: &mut Builder) {
    use Type::{Bool, Duration, Int, Uint};
    for t in comparable() {
        b.m("isSorted", 0, vec![list(t.clone())], Bool);
        b.m("max", 0, vec![list(t.clone())], t.clone());
        b.m("min", 0, vec![list(t.clone())], t);
    }
    for t in [Int, Uint, Type::Double, Duration] {
        b.m("sum", 0, vec![list(t.clone())], t);
    }
    b.m("indexOf", 0, vec![list(A), A], Int);
    b.m("lastIndexOf", 0, vec![list(A), A], Int);
}

/// Kubernetes `library.Regex` and `library.URLs` (always available).
fn k8s_regex_urls(b: &mut Builder) {
    use Type::{Bool, Int, String};
    b.m("find", 0, vec![String, String], String);
    b.m("findAll", 0, vec![String, String], list(String));
    b.m("findAll", 0, vec![String, String, Int], list(String));
    b.g("url", 0, vec![String], url());
    b.g("isURL", 0, vec![String], Bool);
    for f in [
        "getScheme",
        "getHost",
        "getHostname",
        "getPort",
        "getEscapedPath",
    ] {
        b.m(f, 0, vec![url()], String);
    }
    b.m("getQuery", 0, vec![url()], map(String, list(String)));
}

/// Kubernetes `library.Quantity` (1.28).
fn k8s_quantity(b: &mut Builder) {
    use Type::{Bool, Double, Int, String};
    b.g("quantity", 28, vec![String], quantity());
    b.g("isQuantity", 28, vec![String], Bool);
    b.m("isInteger", 28, vec![quantity()], Bool);
    b.m("asInteger", 28, vec![quantity()], Int);
    b.m("asApproximateFloat", 28, vec![quantity()], Double);
    b.m("sign", 28, vec![quantity()], Int);
    for f in ["add", "sub"] {
        b.m(f, 28, vec![quantity(), quantity()], quantity());
        b.m(f, 28, vec![quantity(), Int], quantity());
    }
    b.m("isGreaterThan", 28, vec![quantity(), quantity()], Bool);
    b.m("isLessThan", 28, vec![quantity(), quantity()], Bool);
    b.m("compareTo", 28, vec![quantity(), quantity()], Int);
}

/// Kubernetes `library.IP` and `library.CIDR` (1.30).
fn k8s_net(b: &mut Builder) {
    use Type::{Bool, Int, String};
    b.g("ip", 30, vec![String], ip());
    b.g("isIP", 30, vec![String], Bool);
    b.g("ip.isCanonical", 30, vec![String], Bool);
    b.m("family", 30, vec![ip()], Int);
    for f in [
        "isUnspecified",
        "isLoopback",
        "isLinkLocalMulticast",
        "isLinkLocalUnicast",
        "isGlobalUnicast",
    ] {
        b.m(f, 30, vec![ip()], Bool);
    }
    b.g("string", 30, vec![ip()], String);
    b.g("cidr", 30, vec![String], cidr());
    b.g("isCIDR", 30, vec![String], Bool);
    b.m("containsIP", 30, vec![cidr(), String], Bool);
    b.m("containsIP", 30, vec![cidr(), ip()], Bool);
    b.m("containsCIDR", 30, vec![cidr(), String], Bool);
    b.m("containsCIDR", 30, vec![cidr(), cidr()], Bool);
    b.m("ip", 30, vec![cidr()], ip());
    b.m("masked", 30, vec![cidr()], cidr());
    b.m("prefixLength", 30, vec![cidr()], Int);
    b.g("string", 30, vec![cidr()], String);
}

/// Kubernetes `library.Format` (1.31).
fn k8s_format(b: &mut Builder) {
    use Type::String;
    for f in [
        "format.dns1123Label",
        "format.dns1123Subdomain",
        "format.dns1035Label",
        "format.qualifiedName",
        "format.dns1123LabelPrefix",
        "format.dns1123SubdomainPrefix",
        "format.dns1035LabelPrefix",
        "format.labelValue",
        "format.uri",
        "format.uuid",
        "format.byte",
        "format.date",
        "format.datetime",
    ] {
        b.g(f, 31, vec![], named_format());
    }
    b.g("format.named", 31, vec![String], opt(named_format()));
    b.m(
        "validate",
        31,
        vec![named_format(), String],
        opt(list(String)),
    );
}

/// Kubernetes `library.SemverLib(SemverVersion(1))` (1.33).
fn k8s_semver(b: &mut Builder) {
    use Type::{Bool, Int, String};
    b.g("semver", 33, vec![String], semver());
    b.g("semver", 33, vec![String, Bool], semver());
    b.g("isSemver", 33, vec![String], Bool);
    b.g("isSemver", 33, vec![String, Bool], Bool);
    for f in ["major", "minor", "patch"] {
        b.m(f, 33, vec![semver()], Int);
    }
    b.m("isGreaterThan", 33, vec![semver(), semver()], Bool);
    b.m("isLessThan", 33, vec![semver(), semver()], Bool);
    b.m("compareTo", 33, vec![semver(), semver()], Int);
}

/// Kubernetes `library.Authz` (1.27) and `AuthzSelectors` (1.31). CRD rules have no
/// `authorizer` variable, so these only shape the error a stray call gets.
fn k8s_authz(b: &mut Builder) {
    use Type::{Bool, String};
    let authorizer = || opaque("kubernetes.authorization.Authorizer");
    let path = || opaque("kubernetes.authorization.PathCheck");
    let group = || opaque("kubernetes.authorization.GroupCheck");
    let resource = || opaque("kubernetes.authorization.ResourceCheck");
    let decision = || opaque("kubernetes.authorization.Decision");
    b.m("path", 27, vec![authorizer(), String], path());
    b.m("group", 27, vec![authorizer(), String], group());
    b.m(
        "serviceAccount",
        27,
        vec![authorizer(), String, String],
        authorizer(),
    );
    b.m("resource", 27, vec![group(), String], resource());
    for f in ["subresource", "namespace", "name"] {
        b.m(f, 27, vec![resource(), String], resource());
    }
    for f in ["fieldSelector", "labelSelector"] {
        b.m(f, 31, vec![resource(), String], resource());
    }
    b.m("check", 27, vec![path(), String], decision());
    b.m("check", 27, vec![resource(), String], decision());
    b.m("allowed", 27, vec![decision()], Bool);
    b.m("reason", 27, vec![decision()], String);
    b.m("errored", 27, vec![decision()], Bool);
    b.m("error", 27, vec![decision()], String);
}

fn table() -> &'static HashMap<&'static str, Vec<Overload>> {
    static TABLE: OnceLock<HashMap<&'static str, Vec<Overload>>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut b = Builder::default();
        standard(&mut b);
        optional(&mut b);
        strings(&mut b);
        sets(&mut b);
        ext_lists(&mut b);
        two_var(&mut b);
        k8s_lists(&mut b);
        k8s_regex_urls(&mut b);
        k8s_quantity(&mut b);
        k8s_net(&mut b);
        k8s_format(&mut b);
        k8s_semver(&mut b);
        k8s_authz(&mut b);
        k8s_jsonpatch(&mut b);
        b.fns
    })
}

/// The overloads of function `name` declared under `compat`, or `None` when the function is
/// not declared at all (cel-go then reports `undeclared reference`).
pub(crate) fn lookup(name: &str, compat: Compat) -> Option<Vec<&'static Overload>> {
    let all = table().get(name)?;
    let visible: Vec<&Overload> = all.iter().filter(|o| compat.allows(o.since)).collect();
    (!visible.is_empty()).then_some(visible)
}

/// The type identifiers of the standard environment (`int`, `list`, `google.protobuf.Timestamp`
/// …) and the type value each denotes.
pub(crate) fn type_ident(name: &str) -> Option<Type> {
    let t = match name {
        "bool" => Type::Bool,
        "bytes" => Type::Bytes,
        "double" => Type::Double,
        "google.protobuf.Duration" => Type::Duration,
        "int" => Type::Int,
        "list" => list(Type::Dyn),
        "map" => map(Type::Dyn, Type::Dyn),
        "null_type" => Type::Null,
        "string" => Type::String,
        "google.protobuf.Timestamp" => Type::Timestamp,
        "type" => Type::TypeOf(Box::new(Type::Dyn)),
        "uint" => Type::Uint,
        "optional_type" => opt(Type::Dyn),
        _ => return None,
    };
    Some(Type::TypeOf(Box::new(t)))
}
