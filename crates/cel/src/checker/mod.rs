//! A CEL type checker for `x-kubernetes-validations` rules, modelled on cel-go's
//! `checker/checker.go` as Kubernetes configures it (apiserver `pkg/cel/environment/base.go`):
//! every expression gets a type, overloads resolve with type parameters, field selection is
//! checked against the schema's declared properties, and errors carry cel-go's texts and source
//! positions (`ERROR: <input>:1:6: found no matching overload for '_==_' applied to '(int, bool)'`
//! followed by cel-go's snippet lines ` | self == true` / ` | .....^`, which Kubernetes prints as
//! part of `issues.String()`).
//!
//! cel 0.13's parser drops source positions when parsing succeeds, so positions are recovered by
//! re-reading the source with a small parser of the same grammar and matching its tree against
//! the parsed one ([`positions`]).

// Wired in by the integrator; until then only the tests use the checker.

mod decls;
mod positions;
pub(crate) mod types;

#[cfg(test)]
mod tests;

use std::collections::HashMap;

use kube_cel::cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue};
use serde_json::{Value, json};

use self::decls::Overload;
pub(crate) use self::types::{Compat, Type};
use self::types::{SELF_TYPE_NAME, is_embedded, property_schema, schema_type};

/// The result of checking one expression: the type of every expression node and, for nodes
/// that denote a place in the object, the schema node there (for cost sizes and list-type
/// semantics).
#[derive(Debug)]
pub(crate) struct Checked {
    /// Every expression id → its type.
    pub types: HashMap<u64, Type>,
    /// Expression id → schema node it denotes (when it denotes one).
    pub schemas: HashMap<u64, Value>,
    /// Type of the whole expression.
    pub result: Type,
}

/// What a rule's expressions are checked against.
#[derive(Debug)]
// Each switch declares something independent of the others.
#[allow(clippy::struct_excessive_bools)]
pub(crate) struct Env<'a> {
    /// Variables of an admission expression (`object`, `oldObject`, `request`, ...), typed `dyn`.
    /// When non-empty, `self` and `oldSelf` are not declared.
    pub dyn_vars: &'a [&'a str],
    /// Schema node the rule sits on.
    pub self_schema: &'a Value,
    /// The node is the root or an `x-kubernetes-embedded-resource` (declares apiVersion, kind,
    /// metadata.name, metadata.generateName).
    pub resource_root: bool,
    /// Declare `oldSelf` (same type as `self`).
    pub old_self: bool,
    /// `oldSelf` is `optional_type(T)` (`optionalOldSelf: true`).
    pub optional_old_self: bool,
    /// `NewExpressions` (libraries gated at the compatibility version) or `StoredExpressions`.
    pub compat: Compat,
    /// Variables of an admission expression with precise types (an admission policy's type
    /// check: `object` typed by the matched kind's schema, `authorizer`, `variables`), looked up
    /// before `dyn_vars`; a dotted name (`authorizer.requestResource`) is a qualified identifier.
    pub typed_vars: &'a [(&'a str, Type)],
    /// A mutating admission policy's environment: `Object{...}` and `JSONPatch{...}`
    /// initializers and the `jsonpatch` library are declared.
    pub mutation: bool,
}

/// Kubernetes' error when a rule does not type to `bool` (apiextensions-apiserver
/// `compilation.go`).
pub(crate) const RULE_NOT_BOOL: &str = "cel expression must evaluate to a bool";
/// Kubernetes' error when a `messageExpression` does not type to `string`.
pub(crate) const MESSAGE_NOT_STRING: &str = "messageExpression must evaluate to a string";
/// The root type of a mutating admission policy's apply configurations.
pub(crate) const MUTATION_OBJECT: &str = "Object";
/// The element type of a mutating admission policy's JSON patches.
pub(crate) const JSON_PATCH: &str = "JSONPatch";

/// Kubernetes requires a rule's result type to be exactly `bool` (`dyn` is refused too).
pub(crate) fn require_bool(checked: &Checked) -> Result<(), String> {
    if checked.result == Type::Bool {
        Ok(())
    } else {
        Err(RULE_NOT_BOOL.to_string())
    }
}

/// Kubernetes requires a `messageExpression`'s result type to be exactly `string`.
pub(crate) fn require_string(checked: &Checked) -> Result<(), String> {
    if checked.result == Type::String {
        Ok(())
    } else {
        Err(MESSAGE_NOT_STRING.to_string())
    }
}

/// Type-checks a parsed (macro-expanded) expression. `Err` is cel-go's error list as Kubernetes
/// prints it after `compilation failed: ` (errors sorted by position, joined by newlines, each
/// with its snippet lines).
pub(crate) fn check(expr: &IdedExpr, source: &str, env: &Env) -> Result<Checked, String> {
    let self_type = schema_type(
        env.self_schema,
        env.resource_root || is_embedded(env.self_schema),
        SELF_TYPE_NAME,
    )
    .unwrap_or(Type::Dyn);
    let mut c = Checker {
        env,
        self_type,
        types: HashMap::new(),
        schemas: HashMap::new(),
        subs: HashMap::new(),
        next_var: 0,
        scopes: Vec::new(),
        errors: Vec::new(),
    };
    c.check(expr);
    let mut types = HashMap::with_capacity(c.types.len());
    for (id, t) in &c.types {
        types.insert(*id, substitute(&c.subs, t, true));
    }
    if c.errors.is_empty() {
        // Kubernetes' AST validators (base.go, 1.29): literal arguments of duration(),
        // timestamp() and matches(), then homogeneous aggregate literals.
        literal_arguments(expr, &mut c.errors);
        homogeneous_literals(expr, &types, false, &mut c.errors);
    }
    if !c.errors.is_empty() {
        return Err(format_errors(expr, source, &c.errors));
    }
    let result = types.get(&expr.id).cloned().unwrap_or(Type::Error);
    let schemas = c.schemas.into_iter().map(|(id, (v, _))| (id, v)).collect();
    Ok(Checked {
        types,
        schemas,
        result,
    })
}

/// cel-go's display text of one error at a 1-based line and 0-based column (in characters):
/// `ERROR: <input>:L:C: msg` then the source line and a caret line.
pub(crate) fn display_error(source: &str, line: usize, column: usize, msg: &str) -> String {
    let mut out = format!("ERROR: <input>:{line}:{}: {msg}", column + 1);
    if let Some(snippet) = source.split('\n').nth(line.saturating_sub(1)) {
        let snippet = snippet.trim_end_matches('\r').replace('\t', " ");
        out.push_str("\n | ");
        out.push_str(&snippet);
        out.push_str("\n | ");
        let mut chars = snippet.chars();
        for _ in 0..column {
            match chars.next() {
                Some(c) if c.len_utf8() > 1 => out.push('\u{ff0e}'),
                Some(_) => out.push('.'),
                None => break,
            }
        }
        match chars.next() {
            Some(c) if c.len_utf8() > 1 => out.push('\u{ff3e}'),
            _ => out.push('^'),
        }
    }
    out
}

fn format_errors(expr: &IdedExpr, source: &str, errors: &[(u64, String)]) -> String {
    let offsets = positions::offsets(expr, source);
    let mut located: Vec<(usize, usize, &str)> = errors
        .iter()
        .map(|(id, msg)| {
            let (line, col) = offsets
                .get(id)
                .map_or((1, 0), |&off| positions::line_col(source, off));
            (line, col, msg.as_str())
        })
        .collect();
    located.sort_by_key(|&(l, c, _)| (l, c));
    located
        .iter()
        .map(|&(l, c, m)| display_error(source, l, c, m))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A variable in scope: its type and the schema node it denotes (with whether that node is a
/// resource root).
type Var = (Type, Option<(Value, bool)>);

struct Checker<'a> {
    env: &'a Env<'a>,
    self_type: Type,
    types: HashMap<u64, Type>,
    schemas: HashMap<u64, (Value, bool)>,
    /// Type-variable bindings (cel-go's `mapping`).
    subs: HashMap<u32, Type>,
    next_var: u32,
    scopes: Vec<HashMap<String, Var>>,
    errors: Vec<(u64, String)>,
}

impl Checker<'_> {
    fn error(&mut self, id: u64, msg: String) {
        self.errors.push((id, msg));
    }

    fn set_type(&mut self, id: u64, t: Type) {
        self.types.insert(id, t);
    }

    fn get_type(&self, id: u64) -> Type {
        self.types.get(&id).cloned().unwrap_or(Type::Error)
    }

    fn fresh(&mut self) -> Type {
        let v = Type::Var(self.next_var);
        self.next_var += 1;
        v
    }

    fn check(&mut self, e: &IdedExpr) {
        match &e.expr {
            Expr::Literal(lit) => {
                let t = match lit {
                    LiteralValue::Boolean(_) => Type::Bool,
                    LiteralValue::Bytes(_) => Type::Bytes,
                    LiteralValue::Double(_) => Type::Double,
                    LiteralValue::Int(_) => Type::Int,
                    LiteralValue::Null => Type::Null,
                    LiteralValue::String(_) => Type::String,
                    LiteralValue::UInt(_) => Type::Uint,
                };
                self.set_type(e.id, t);
            }
            Expr::Ident(name) => self.check_ident(e.id, name),
            Expr::Select(sel) => {
                if !sel.test
                    && let Some(q) = qualified_name(e)
                    && let Some(t) = decls::type_ident(&q).or_else(|| {
                        self.env
                            .typed_vars
                            .iter()
                            .find(|(n, _)| *n == q)
                            .map(|(_, t)| t.clone())
                    })
                {
                    self.set_type(e.id, t);
                    return;
                }
                let t = self.check_select_field(e.id, &sel.operand, &sel.field, false);
                let t = if sel.test { Type::Bool } else { t };
                let t = substitute(&self.subs, &t, false);
                self.set_type(e.id, t);
            }
            Expr::Call(call) => self.check_call(e, call),
            Expr::List(list) => {
                let mut elems: Option<Type> = None;
                for (i, el) in list.elements.iter().enumerate() {
                    self.check(el);
                    let mut t = self.get_type(el.id);
                    if list.optional_indices.contains(&i) {
                        if let Type::Optional(inner) = t {
                            t = *inner;
                        } else if !t.is_dyn_or_error() {
                            self.error(
                                el.id,
                                format!(
                                    "expected type '{}' but found '{}'",
                                    Type::Optional(Box::new(t.clone())).name(),
                                    t.name()
                                ),
                            );
                        }
                    }
                    elems = Some(self.join_types(elems, t));
                }
                let elems = match elems {
                    Some(t) => t,
                    None => self.fresh(),
                };
                self.set_type(e.id, Type::List(Box::new(elems)));
            }
            Expr::Map(map) => {
                let (mut kt, mut vt): (Option<Type>, Option<Type>) = (None, None);
                for entry in &map.entries {
                    let EntryExpr::MapEntry(me) = &entry.expr else {
                        continue;
                    };
                    self.check(&me.key);
                    let k = self.get_type(me.key.id);
                    kt = Some(self.join_types(kt, k));
                    self.check(&me.value);
                    let mut v = self.get_type(me.value.id);
                    if me.optional {
                        if let Type::Optional(inner) = v {
                            v = *inner;
                        } else if !v.is_dyn_or_error() {
                            self.error(
                                me.value.id,
                                format!(
                                    "expected type '{}' but found '{}'",
                                    Type::Optional(Box::new(v.clone())).name(),
                                    v.name()
                                ),
                            );
                        }
                    }
                    vt = Some(self.join_types(vt, v));
                }
                let (k, v) = match (kt, vt) {
                    (Some(k), Some(v)) => (k, v),
                    _ => (self.fresh(), self.fresh()),
                };
                self.set_type(e.id, Type::Map(Box::new(k), Box::new(v)));
            }
            Expr::Struct(s) => self.check_struct(e.id, s),
            Expr::Comprehension(comp) => self.check_comprehension(e.id, comp),
            Expr::Unspecified => self.set_type(e.id, Type::Error),
        }
    }

    /// Object initializers of the mutation environment: `Object{...}` and its nested
    /// `Object.<field>...{...}` types (fields of any type), and `JSONPatch{op, path, from,
    /// value}`. Elsewhere every initializer names an undeclared type.
    fn check_struct(&mut self, id: u64, s: &kube_cel::cel::common::ast::StructExpr) {
        let name = s.type_name.as_str();
        let object = name == MUTATION_OBJECT || name.starts_with("Object.");
        if !self.env.mutation || !(object || name == JSON_PATCH) {
            for entry in &s.entries {
                if let EntryExpr::StructField(sf) = &entry.expr {
                    self.check(&sf.value);
                }
            }
            self.error(
                id,
                format!("undeclared reference to '{name}' (in container '')"),
            );
            self.set_type(id, Type::Error);
            return;
        }
        for entry in &s.entries {
            let EntryExpr::StructField(sf) = &entry.expr else {
                continue;
            };
            self.check(&sf.value);
            if object {
                continue;
            }
            let want = match sf.field.as_str() {
                "op" | "path" | "from" => Type::String,
                "value" => Type::Dyn,
                other => {
                    self.error(entry.id, format!("undefined field '{other}'"));
                    continue;
                }
            };
            let got = substitute(&self.subs, &self.get_type(sf.value.id), false);
            if !self.is_assignable(&want, &got) {
                self.error(
                    sf.value.id,
                    format!(
                        "expected type of field '{}' is '{}' but provided type is '{}'",
                        sf.field,
                        want.name(),
                        got.name()
                    ),
                );
            }
        }
        let t = match name {
            MUTATION_OBJECT => Type::Opaque(MUTATION_OBJECT, Vec::new()),
            JSON_PATCH => Type::Opaque(JSON_PATCH, Vec::new()),
            // Nested initializers are typed by name at run time (`CheckTypeNamesMatchFieldPathNames`).
            _ => Type::Dyn,
        };
        self.set_type(id, t);
    }

    fn lookup_var(&self, name: &str) -> Option<Var> {
        for scope in self.scopes.iter().rev() {
            if let Some(v) = scope.get(name) {
                return Some(v.clone());
            }
        }
        if let Some((_, t)) = self.env.typed_vars.iter().find(|(n, _)| *n == name) {
            return Some((t.clone(), None));
        }
        if !self.env.dyn_vars.is_empty() {
            if self.env.dyn_vars.contains(&name) {
                return Some((Type::Dyn, None));
            }
            return decls::type_ident(name).map(|t| (t, None));
        }
        let root = self.env.resource_root || is_embedded(self.env.self_schema);
        let schema = Some((self.env.self_schema.clone(), root));
        match name {
            "self" => Some((self.self_type.clone(), schema)),
            "oldSelf" if self.env.old_self => {
                let t = if self.env.optional_old_self {
                    Type::Optional(Box::new(self.self_type.clone()))
                } else {
                    self.self_type.clone()
                };
                Some((t, schema))
            }
            _ => decls::type_ident(name).map(|t| (t, None)),
        }
    }

    fn check_ident(&mut self, id: u64, name: &str) {
        if let Some((t, schema)) = self.lookup_var(name) {
            self.set_type(id, t);
            if let Some(s) = schema {
                self.schemas.insert(id, s);
            }
            return;
        }
        self.set_type(id, Type::Error);
        self.error(
            id,
            format!("undeclared reference to '{name}' (in container '')"),
        );
    }

    /// cel-go `checkSelectField`: the type of `operand.field` (optional when the operand is
    /// optional or `optional` is set), recording the schema node the selection denotes.
    fn check_select_field(
        &mut self,
        id: u64,
        operand: &IdedExpr,
        field: &str,
        optional: bool,
    ) -> Type {
        self.check(operand);
        let operand_type = substitute(&self.subs, &self.get_type(operand.id), false);
        let (target, is_opt) = match operand_type {
            Type::Optional(inner) => (*inner, true),
            t => (t, false),
        };
        let operand_schema = self.schemas.get(&operand.id).cloned();
        let result = match &target {
            Type::Map(_, v) => {
                if let Some((s, _)) = &operand_schema
                    && let Some(ap) = s.get("additionalProperties").filter(|a| a.is_object())
                {
                    self.schemas.insert(id, (ap.clone(), is_embedded(ap)));
                }
                (**v).clone()
            }
            Type::Object(obj) => {
                if let Some((prop, t)) = obj.fields.get(field) {
                    if let Some((s, root)) = &operand_schema
                        && let Some(ps) = property_schema(s, prop, *root)
                    {
                        let r = is_embedded(&ps);
                        self.schemas.insert(id, (ps, r));
                    }
                    t.clone()
                } else {
                    self.error(id, format!("undefined field '{field}'"));
                    Type::Error
                }
            }
            Type::Var(_) => {
                self.is_assignable(&Type::Dyn, &target);
                Type::Dyn
            }
            t => {
                if !t.is_dyn_or_error() {
                    self.error(
                        id,
                        format!("type '{}' does not support field selection", t.name()),
                    );
                }
                Type::Dyn
            }
        };
        if is_opt || optional {
            Type::Optional(Box::new(result))
        } else {
            result
        }
    }

    fn check_call(&mut self, e: &IdedExpr, call: &kube_cel::cel::common::ast::CallExpr) {
        let name = call.func_name.as_str();
        if name == "_?._" && call.target.is_none() {
            self.check_opt_select(e, call);
            return;
        }
        if matches!(name, "optMap" | "optFlatMap")
            && let Some(target) = &call.target
            && let [var, body] = call.args.as_slice()
            && let Expr::Ident(v) = &var.expr
            && self.env.compat.allows(28)
        {
            self.check_opt_map(e.id, target, v, body, name == "optFlatMap");
            return;
        }
        for arg in &call.args {
            self.check(arg);
        }
        let Some(target) = &call.target else {
            match decls::lookup(name, self.env.compat) {
                Some(overloads) => self.resolve(e.id, name, &overloads, None, &call.args),
                None => self.undeclared(e.id, name),
            }
            if matches!(name, "_[_]" | "_[?_]")
                && let Some(container) = call.args.first()
            {
                self.index_schema(e.id, container);
            }
            return;
        };
        if let Some(prefix) = qualified_name(target)
            && (self.env.mutation || prefix != "jsonpatch")
            && let Some(overloads) = decls::lookup(&format!("{prefix}.{name}"), self.env.compat)
        {
            let full = format!("{prefix}.{name}");
            self.resolve(e.id, &full, &overloads, None, &call.args);
            return;
        }
        self.check(target);
        match decls::lookup(name, self.env.compat) {
            Some(overloads) => self.resolve(e.id, name, &overloads, Some(target), &call.args),
            None => self.undeclared(e.id, name),
        }
        if matches!(name, "value" | "orValue")
            && let Some(s) = self.schemas.get(&target.id).cloned()
        {
            self.schemas.insert(e.id, s);
        }
    }

    /// Records the schema node `container[i]` denotes: the list's items or the map's values.
    fn index_schema(&mut self, id: u64, container: &IdedExpr) {
        let Some((s, _)) = self.schemas.get(&container.id) else {
            return;
        };
        let t = substitute(&self.subs, &self.get_type(container.id), false);
        let t = match t {
            Type::Optional(inner) => *inner,
            t => t,
        };
        let key = match t {
            Type::List(_) => "items",
            Type::Map(_, _) => "additionalProperties",
            _ => return,
        };
        if let Some(n) = s.get(key).filter(|n| n.is_object()) {
            let entry = (n.clone(), is_embedded(n));
            self.schemas.insert(id, entry);
        }
    }

    fn undeclared(&mut self, id: u64, name: &str) {
        self.set_type(id, Type::Error);
        self.error(
            id,
            format!("undeclared reference to '{name}' (in container '')"),
        );
    }

    fn check_opt_select(&mut self, e: &IdedExpr, call: &kube_cel::cel::common::ast::CallExpr) {
        let [operand, field] = call.args.as_slice() else {
            self.error(
                e.id,
                format!("incorrect signature. argument count: {}", call.args.len()),
            );
            self.set_type(e.id, Type::Error);
            return;
        };
        let Expr::Literal(LiteralValue::String(s)) = &field.expr else {
            self.error(field.id, "unsupported optional field selection".to_string());
            self.set_type(e.id, Type::Error);
            return;
        };
        let field_name: &str = s.as_ref();
        let t = self.check_select_field(e.id, operand, field_name, true);
        let t = substitute(&self.subs, &t, false);
        self.set_type(e.id, t);
    }

    /// `opt.optMap(v, expr)` / `opt.optFlatMap(v, expr)` (cel-go optional-library macros): `v`
    /// is bound to the optional's value type while checking `expr`.
    fn check_opt_map(
        &mut self,
        id: u64,
        target: &IdedExpr,
        var: &str,
        body: &IdedExpr,
        flat: bool,
    ) {
        self.check(target);
        let t = substitute(&self.subs, &self.get_type(target.id), false);
        let inner = match t {
            Type::Optional(inner) => *inner,
            Type::Var(_) | Type::Dyn | Type::Error => Type::Dyn,
            other => {
                self.error(
                    id,
                    format!(
                        "found no matching overload for '{}' applied to '{}.(dyn)'",
                        if flat { "optFlatMap" } else { "optMap" },
                        other.name()
                    ),
                );
                self.set_type(id, Type::Error);
                return;
            }
        };
        let mut scope = HashMap::new();
        scope.insert(
            var.to_string(),
            (inner, self.schemas.get(&target.id).cloned()),
        );
        self.scopes.push(scope);
        self.check(body);
        self.scopes.pop();
        let bt = substitute(&self.subs, &self.get_type(body.id), false);
        let result = if flat {
            match bt {
                Type::Optional(_) => bt,
                Type::Dyn | Type::Error | Type::Var(_) => Type::Optional(Box::new(Type::Dyn)),
                other => {
                    self.error(
                        body.id,
                        format!(
                            "expected type '{}' but found '{}'",
                            Type::Optional(Box::new(other.clone())).name(),
                            other.name()
                        ),
                    );
                    Type::Error
                }
            }
        } else {
            Type::Optional(Box::new(bt))
        };
        self.set_type(id, result);
    }

    /// cel-go `resolveOverload`: the first matching overload determines the result type (several
    /// matching with different results give `dyn`); none gives `found no matching overload`.
    fn resolve(
        &mut self,
        id: u64,
        name: &str,
        overloads: &[&Overload],
        target: Option<&IdedExpr>,
        args: &[IdedExpr],
    ) {
        let mut arg_types: Vec<Type> = Vec::with_capacity(args.len() + 1);
        if let Some(t) = target {
            arg_types.push(self.get_type(t.id));
        }
        arg_types.extend(args.iter().map(|a| self.get_type(a.id)));

        if name == "_&&_" || name == "_||_" {
            let mut failed = false;
            for (i, at) in arg_types.iter().enumerate() {
                if !self.is_assignable(at, &Type::Bool) {
                    let arg_id = args.get(i).map_or(id, |a| a.id);
                    let found = substitute(&self.subs, at, true);
                    self.error(
                        arg_id,
                        format!("expected type 'bool' but found '{}'", found.name()),
                    );
                    failed = true;
                }
            }
            self.set_type(id, if failed { Type::Error } else { Type::Bool });
            return;
        }

        let mut result: Option<Type> = None;
        for ov in overloads {
            if ov.member != target.is_some() || ov.args.len() != arg_types.len() {
                continue;
            }
            let (cand_args, cand_result) = if ov.is_generic() {
                let mut fresh: HashMap<&'static str, Type> = HashMap::new();
                let args: Vec<Type> = ov
                    .args
                    .iter()
                    .map(|t| self.instantiate(t, &mut fresh))
                    .collect();
                let res = self.instantiate(&ov.result, &mut fresh);
                (args, res)
            } else {
                (ov.args.clone(), ov.result.clone())
            };
            if self.is_assignable_list(&arg_types, &cand_args) {
                let fn_result = substitute(&self.subs, &cand_result, false);
                result = Some(match result {
                    None => fn_result,
                    Some(r) if r == Type::Dyn || r == fn_result => r,
                    Some(_) => Type::Dyn,
                });
            }
        }
        if let Some(r) = result {
            self.set_type(id, r);
            return;
        }
        let shown: Vec<String> = arg_types
            .iter()
            .map(|t| substitute(&self.subs, t, true).name())
            .collect();
        let signature = if target.is_some() {
            format!("{}.({})", shown[0], shown[1..].join(", "))
        } else {
            format!("({})", shown.join(", "))
        };
        self.error(
            id,
            format!("found no matching overload for '{name}' applied to '{signature}'"),
        );
        self.set_type(id, Type::Error);
        // Indexing an object's list/map still denotes no schema node on error.
    }

    fn instantiate(&mut self, t: &Type, fresh: &mut HashMap<&'static str, Type>) -> Type {
        if let Type::Param(p) = t {
            if let Some(v) = fresh.get(p) {
                return v.clone();
            }
            let v = self.fresh();
            fresh.insert(p, v.clone());
            return v;
        }
        let ps = t.params();
        if ps.is_empty() {
            return t.clone();
        }
        let new: Vec<Type> = ps.into_iter().map(|p| self.instantiate(p, fresh)).collect();
        t.with_params(new)
    }

    fn check_comprehension(
        &mut self,
        id: u64,
        comp: &kube_cel::cel::common::ast::ComprehensionExpr,
    ) {
        self.check(&comp.iter_range);
        self.check(&comp.accu_init);
        let range_type = substitute(&self.subs, &self.get_type(comp.iter_range.id), false);
        let accu_type = self.get_type(comp.accu_init.id);
        let range_schema = self.schemas.get(&comp.iter_range.id).cloned();

        let mut accu_scope = HashMap::new();
        accu_scope.insert(
            comp.accu_var.clone(),
            (
                accu_type.clone(),
                self.schemas.get(&comp.accu_init.id).cloned(),
            ),
        );
        self.scopes.push(accu_scope);

        let two = comp.iter_var2.is_some();
        let sub = |key: &str| -> Option<(Value, bool)> {
            let (s, _) = range_schema.as_ref()?;
            let n = s.get(key).filter(|n| n.is_object())?;
            Some((n.clone(), is_embedded(n)))
        };
        let (var1, var2): (Var, Var) = match &range_type {
            Type::List(elem) => {
                let elem_var = ((**elem).clone(), sub("items"));
                if two {
                    ((Type::Int, None), elem_var)
                } else {
                    (elem_var, (Type::Error, None))
                }
            }
            Type::Map(k, v) => (
                // Upstream sizes a schema map's keys at 0 (its `SchemaDeclType` keys are the
                // shared `StringType`, which has no maximum size), so functions of a key cost
                // nothing per byte: `self.all(k, k.startsWith('x'))` fits any map.
                (
                    (**k).clone(),
                    range_schema
                        .as_ref()
                        .map(|_| (json!({"type": "string", "maxLength": 0}), false)),
                ),
                ((**v).clone(), sub("additionalProperties")),
            ),
            Type::Dyn | Type::Error | Type::Var(_) => {
                self.is_assignable(&Type::Dyn, &range_type);
                ((Type::Dyn, None), (Type::Dyn, None))
            }
            other => {
                self.error(
                    comp.iter_range.id,
                    format!(
                        "expression of type '{}' cannot be range of a comprehension (must be list, map, or dynamic)",
                        other.name()
                    ),
                );
                ((Type::Error, None), (Type::Error, None))
            }
        };
        let mut loop_scope = HashMap::new();
        loop_scope.insert(comp.iter_var.clone(), var1);
        if let Some(v2) = &comp.iter_var2 {
            loop_scope.insert(v2.clone(), var2);
        }
        self.scopes.push(loop_scope);
        self.check(&comp.loop_cond);
        self.assert_type(&comp.loop_cond, &Type::Bool);
        self.check(&comp.loop_step);
        self.assert_type(&comp.loop_step, &accu_type);
        self.scopes.pop();
        self.check(&comp.result);
        self.scopes.pop();
        let t = substitute(&self.subs, &self.get_type(comp.result.id), false);
        self.set_type(id, t);
        if let Some(s) = self.schemas.get(&comp.result.id).cloned() {
            self.schemas.insert(id, s);
        }
    }

    fn assert_type(&mut self, e: &IdedExpr, t: &Type) {
        let actual = self.get_type(e.id);
        if !self.is_assignable(t, &actual) {
            let expected = substitute(&self.subs, t, true);
            let found = substitute(&self.subs, &actual, true);
            self.error(
                e.id,
                format!(
                    "expected type '{}' but found '{}'",
                    expected.name(),
                    found.name()
                ),
            );
        }
    }

    /// cel-go `joinTypes` with dynamic aggregate literals (homogeneity is checked afterwards,
    /// as Kubernetes' `HomogeneousAggregateLiterals` validator does).
    fn join_types(&mut self, previous: Option<Type>, current: Type) -> Type {
        let Some(prev) = previous else {
            return current;
        };
        if self.is_assignable(&prev, &current) {
            most_general(&prev, &current)
        } else {
            Type::Dyn
        }
    }

    fn is_assignable(&mut self, t1: &Type, t2: &Type) -> bool {
        let mut m = self.subs.clone();
        if internal_is_assignable(&mut m, t1, t2) {
            self.subs = m;
            true
        } else {
            false
        }
    }

    fn is_assignable_list(&mut self, l1: &[Type], l2: &[Type]) -> bool {
        if l1.len() != l2.len() {
            return false;
        }
        let mut m = self.subs.clone();
        for (a, b) in l1.iter().zip(l2) {
            if !internal_is_assignable(&mut m, a, b) {
                return false;
            }
        }
        self.subs = m;
        true
    }
}

/// The dotted name a Select/Ident chain spells (`google.protobuf.Timestamp`, `sets`), if any.
fn qualified_name(e: &IdedExpr) -> Option<String> {
    match &e.expr {
        Expr::Ident(name) => Some(name.clone()),
        Expr::Select(sel) if !sel.test => {
            Some(format!("{}.{}", qualified_name(&sel.operand)?, sel.field))
        }
        _ => None,
    }
}

/// Replaces bound type variables (cel-go `substitute`); unbound ones become `dyn` when
/// `to_dyn`.
fn substitute(m: &HashMap<u32, Type>, t: &Type, to_dyn: bool) -> Type {
    if let Type::Var(n) = t {
        return match m.get(n) {
            Some(sub) if !matches!(sub, Type::Var(k) if k == n) => substitute(m, sub, to_dyn),
            _ if to_dyn => Type::Dyn,
            _ => t.clone(),
        };
    }
    let ps = t.params();
    if ps.is_empty() {
        return t.clone();
    }
    let new = ps.into_iter().map(|p| substitute(m, p, to_dyn)).collect();
    t.with_params(new)
}

fn is_nullable(t: &Type) -> bool {
    matches!(
        t,
        Type::Null | Type::Object(_) | Type::Timestamp | Type::Duration | Type::Dyn
    )
}

/// Whether `t2` is assignable to `t1`, binding type variables in `m` (cel-go
/// `internalIsAssignable`).
fn internal_is_assignable(m: &mut HashMap<u32, Type>, t1: &Type, t2: &Type) -> bool {
    if let Type::Var(_) = t2 {
        let (valid, has_sub) = is_valid_type_substitution(m, t1, t2);
        if valid {
            return true;
        }
        if has_sub {
            return false;
        }
    }
    if let Type::Var(_) = t1 {
        return is_valid_type_substitution(m, t2, t1).0;
    }
    if t1.is_dyn_or_error() || t2.is_dyn_or_error() {
        return true;
    }
    if matches!(t1, Type::Null) {
        return is_nullable(t2);
    }
    if matches!(t2, Type::Null) {
        return is_nullable(t1);
    }
    match (t1, t2) {
        (Type::TypeOf(_), Type::TypeOf(_)) => true,
        (Type::List(a), Type::List(b)) | (Type::Optional(a), Type::Optional(b)) => {
            internal_is_assignable(m, a, b)
        }
        (Type::Map(k1, v1), Type::Map(k2, v2)) => {
            internal_is_assignable(m, k1, k2) && internal_is_assignable(m, v1, v2)
        }
        (Type::Opaque(n1, p1), Type::Opaque(n2, p2)) => {
            n1 == n2
                && p1.len() == p2.len()
                && p1
                    .iter()
                    .zip(p2)
                    .all(|(a, b)| internal_is_assignable(m, a, b))
        }
        _ => t1 == t2,
    }
}

fn is_valid_type_substitution(m: &mut HashMap<u32, Type>, t1: &Type, t2: &Type) -> (bool, bool) {
    let Type::Var(n) = t2 else {
        return (false, false);
    };
    if t1 == t2 {
        return (true, true);
    }
    if let Some(sub) = m.get(n).cloned() {
        if *t1 == sub {
            return (true, true);
        }
        if internal_is_assignable(m, t1, &sub) {
            let new = most_general(t1, &sub);
            if not_referenced_in(m, *n, &new) {
                m.insert(*n, new);
            }
            return (true, true);
        }
        return (false, true);
    }
    if not_referenced_in(m, *n, t1) {
        m.insert(*n, t1.clone());
        return (true, false);
    }
    (false, false)
}

fn not_referenced_in(m: &HashMap<u32, Type>, var: u32, t: &Type) -> bool {
    match t {
        Type::Var(k) if *k == var => false,
        Type::Var(k) => m.get(k).is_none_or(|sub| not_referenced_in(m, var, sub)),
        _ => t.params().into_iter().all(|p| not_referenced_in(m, var, p)),
    }
}

fn is_equal_or_less_specific(t1: &Type, t2: &Type) -> bool {
    if matches!(t1, Type::Dyn | Type::Var(_)) {
        return true;
    }
    if matches!(t2, Type::Dyn | Type::Var(_)) {
        return false;
    }
    match (t1, t2) {
        (Type::List(_), Type::List(_))
        | (Type::Map(_, _), Type::Map(_, _))
        | (Type::Optional(_), Type::Optional(_))
        | (Type::TypeOf(_), Type::TypeOf(_))
        | (Type::Opaque(_, _), Type::Opaque(_, _)) => t1
            .params()
            .into_iter()
            .zip(t2.params())
            .all(|(a, b)| is_equal_or_less_specific(a, b)),
        _ => t1 == t2,
    }
}

fn most_general(a: &Type, b: &Type) -> Type {
    if is_equal_or_less_specific(a, b) {
        a.clone()
    } else {
        b.clone()
    }
}

/// cel-go's `ValidateHomogeneousAggregateLiterals` (enabled by Kubernetes): every element of a
/// list literal, and every key and value of a map literal, must have the same type as the
/// first, except anywhere below a `format()` call (the exemption ext strings configures).
fn homogeneous_literals(
    e: &IdedExpr,
    types: &HashMap<u64, Type>,
    in_format: bool,
    errors: &mut Vec<(u64, String)>,
) {
    let ty = |id: u64| types.get(&id).cloned().unwrap_or(Type::Error);
    let mismatch = |errors: &mut Vec<(u64, String)>, id: u64, want: &Type, got: &Type| {
        errors.push((
            id,
            format!("expected type '{}' but found '{}'", want.name(), got.name()),
        ));
    };
    match &e.expr {
        Expr::List(list) => {
            if !in_format {
                let mut first: Option<Type> = None;
                for (i, el) in list.elements.iter().enumerate() {
                    let mut t = ty(el.id);
                    if list.optional_indices.contains(&i)
                        && let Type::Optional(inner) = t
                    {
                        t = *inner;
                    }
                    match &first {
                        None => first = Some(t),
                        Some(f) if *f != t => {
                            mismatch(errors, el.id, f, &t);
                            break;
                        }
                        Some(_) => {}
                    }
                }
            }
            for el in &list.elements {
                homogeneous_literals(el, types, in_format, errors);
            }
        }
        Expr::Map(map) => {
            let mut first: Option<(Type, Type)> = None;
            for entry in &map.entries {
                let EntryExpr::MapEntry(me) = &entry.expr else {
                    continue;
                };
                if !in_format {
                    let kt = ty(me.key.id);
                    let mut vt = ty(me.value.id);
                    if me.optional
                        && let Type::Optional(inner) = vt
                    {
                        vt = *inner;
                    }
                    match &first {
                        None => first = Some((kt, vt)),
                        Some((fk, fv)) => {
                            if *fk != kt {
                                mismatch(errors, me.key.id, fk, &kt);
                            }
                            if *fv != vt {
                                mismatch(errors, me.value.id, fv, &vt);
                            }
                        }
                    }
                }
                homogeneous_literals(&me.key, types, in_format, errors);
                homogeneous_literals(&me.value, types, in_format, errors);
            }
        }
        Expr::Call(call) => {
            let exempt = in_format || call.func_name == "format";
            if let Some(t) = &call.target {
                homogeneous_literals(t, types, exempt, errors);
            }
            for a in &call.args {
                homogeneous_literals(a, types, exempt, errors);
            }
        }
        Expr::Select(sel) => homogeneous_literals(&sel.operand, types, in_format, errors),
        Expr::Comprehension(c) => {
            for part in [
                &c.iter_range,
                &c.accu_init,
                &c.loop_cond,
                &c.loop_step,
                &c.result,
            ] {
                homogeneous_literals(part, types, in_format, errors);
            }
        }
        Expr::Struct(_) | Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
    }
}

/// cel-go's `ValidateDurationLiterals`, `ValidateTimestampLiterals` and `ValidateRegexLiterals`:
/// a literal first argument of `duration()`, `timestamp()` or `matches()` must be valid
/// (`invalid duration argument`, …). As upstream, the first argument of the global
/// `matches(s, re)` is the one checked.
fn literal_arguments(e: &IdedExpr, errors: &mut Vec<(u64, String)>) {
    if let Expr::Call(call) = &e.expr
        && let Some(arg) = call.args.first()
        && let Expr::Literal(LiteralValue::String(s)) = &arg.expr
    {
        let text: &str = s.as_ref();
        let valid = match call.func_name.as_str() {
            "duration" => crd_core::time::parse_go_duration(text).is_ok(),
            "timestamp" => valid_timestamp(text),
            "matches" => valid_regex(text),
            _ => true,
        };
        if !valid {
            errors.push((arg.id, format!("invalid {} argument", call.func_name)));
        }
    }
    for child in positions::children(e) {
        literal_arguments(child, errors);
    }
}

/// Whether a string is an RFC 3339 timestamp Go's `time.Parse(time.RFC3339, _)` accepts, within
/// CEL's range (years 1 through 9999).
fn valid_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    let digits = |from: usize, len: usize| -> Option<u32> {
        let part = s.get(from..from + len)?;
        if !part.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        part.parse().ok()
    };
    let (Some(year), Some(month), Some(day), Some(hour), Some(min), Some(sec)) = (
        digits(0, 4),
        digits(5, 2),
        digits(8, 2),
        digits(11, 2),
        digits(14, 2),
        digits(17, 2),
    ) else {
        return false;
    };
    if b.get(4) != Some(&b'-')
        || b.get(7) != Some(&b'-')
        || !matches!(b.get(10), Some(b'T' | b't'))
        || b.get(13) != Some(&b':')
        || b.get(16) != Some(&b':')
    {
        return false;
    }
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    if year == 0 || day == 0 || day > days || hour > 23 || min > 59 || sec > 59 {
        return false;
    }
    let mut i = 19;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == start {
            return false;
        }
    }
    match b.get(i) {
        Some(b'Z' | b'z') => i + 1 == b.len(),
        Some(b'+' | b'-') => {
            b.get(i + 3) == Some(&b':')
                && digits(i + 1, 2).is_some_and(|h| h < 24)
                && digits(i + 4, 2).is_some_and(|m| m < 60)
                && i + 6 == b.len()
        }
        _ => false,
    }
}

/// Whether a pattern compiles as a regular expression (RE2 syntax; checked with the regex
/// engine cel 0.13's `matches` runs).
fn valid_regex(pattern: &str) -> bool {
    let Ok(program) = kube_cel::cel::Program::compile("''.matches(p)") else {
        return true;
    };
    let mut ctx = kube_cel::cel::Context::default();
    if ctx.add_variable("p", pattern).is_err() {
        return true;
    }
    program.execute(&ctx).is_ok()
}
