//! Step 4 of a rule's pipeline: lower the checked AST to what cel 0.13's interpreter runs, and
//! run it with Kubernetes' runtime cost accounting.
//!
//! Lowering is a set of named rewrites, each for something the interpreter lacks:
//! - [`instrument`]: every identifier, selection, literal aggregate and call charges its cost to
//!   the evaluation's [`Tracker`] (cel-go's runtime cost tracker), and an evaluation that passes
//!   the per-call limit stops with cel-go's `operation cancelled: actual cost limit exceeded`;
//! - [`list_semantics`]: `==`, `!=` and `+` on `x-kubernetes-list-type: set|map` lists follow the
//!   list type (order-insensitive equality, union and merge);
//! - [`two_variable`]: comprehensions with a second variable iterate over `(key, value)` pairs;
//! - [`absorbing_macros`]: `all` and `exists` keep an element's error while a later element may
//!   still decide the result, as cel-go's accumulator does (the interpreter stops at the first).
//!
//! `type()`, `dyn()`, type identifiers and cel-go's internal `cel.@mapInsert` are functions and
//! variables of the base context.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::Arc;

use kube_cel::KubeCelExt;
use kube_cel::cel::common::ast::{
    CallExpr, EntryExpr, Expr, IdedEntryExpr, IdedExpr, ListExpr, LiteralValue, MapEntryExpr,
    MapExpr,
};
use kube_cel::cel::extractors::This;
use kube_cel::cel::objects::{Key, Map, Opaque, OptionalValue};
use kube_cel::cel::{Context, ExecutionError, FunctionContext, ResolveResult, Value};
use serde_json::Value as Json;

use crate::checker::Checked;
use crate::checker::types::Type;
use crate::parse::{MAP_INSERT, children_mut};

/// cel-go's `SelectAndIdentCost`.
const SELECT_AND_IDENT_COST: i64 = 1;
/// cel-go's `ListCreateBaseCost`.
const LIST_CREATE_COST: i64 = 10;
/// cel-go's `MapCreateBaseCost`.
const MAP_CREATE_COST: i64 = 30;

/// The error text cel-go gives an evaluation stopped by its cost limit; Kubernetes matches on it.
pub(crate) const COST_LIMIT_EXCEEDED: &str = "operation cancelled: actual cost limit exceeded";

/// Namespaces of qualified functions (`sets.contains(...)`): their "target" is not a value.
pub(crate) const NAMESPACES: [&str; 9] = [
    "cel",
    "sets",
    "optional",
    "math",
    "strings",
    "base64",
    "format",
    "lists",
    "jsonpatch",
];

thread_local! {
    /// The running evaluation's cost and limit (evaluation is synchronous on one thread).
    static TRACKER: Tracker = const { Tracker { cost: Cell::new(0), limit: Cell::new(i64::MAX), exceeded: Cell::new(false) } };
}

/// The base context: Kubernetes' libraries plus this module's functions, built once. Shared by
/// every thread, so a scope of bound variables ([`scope`]) can outlive one call.
static BASE: std::sync::LazyLock<Context<'static>> = std::sync::LazyLock::new(base_context);

/// A scope over the base context, for variables bound once and read by several evaluations.
pub(crate) fn scope() -> Context<'static> {
    BASE.new_inner_scope()
}

/// The runtime cost of one evaluation, as cel-go's `CostTracker` counts it.
struct Tracker {
    cost: Cell<i64>,
    limit: Cell<i64>,
    exceeded: Cell<bool>,
}

fn charge(n: i64) -> Result<(), ExecutionError> {
    TRACKER.with(|t| {
        let cost = t.cost.get().saturating_add(n);
        t.cost.set(cost);
        if cost > t.limit.get() {
            t.exceeded.set(true);
            Err(ExecutionError::function_error("cost", COST_LIMIT_EXCEEDED))
        } else {
            Ok(())
        }
    })
}

/// A lowered expression, ready to run.
#[derive(Debug, Clone)]
pub(crate) struct Program {
    pub(crate) expr: IdedExpr,
}

/// Why an evaluation did not produce a value.
#[derive(Debug, PartialEq)]
pub(crate) enum EvalError {
    /// The per-call cost limit was passed.
    CostLimit,
    /// Any other runtime error, in cel-go's words (`no such key: x`, `no such overload`).
    Runtime(String),
}

/// Lowers a checked expression (its types and the schema nodes its expressions denote).
pub(crate) fn lower(mut expr: IdedExpr, checked: &Checked) -> Program {
    let mut next = max_id(&expr);
    initializers_to_maps(&mut expr, &mut next);
    list_semantics(&mut expr, &checked.schemas, &mut next);
    optional_select(&mut expr);
    request_resource(&mut expr);
    instrument(&mut expr, &mut next, &checked.types);
    string_conversions(&mut expr);
    two_variable(&mut expr, &mut next);
    absorbing_macros(&mut expr, &mut next);
    logic_operators(&mut expr);
    Program { expr }
}

/// The accumulator of the `all`, `exists` and `exists_one` macros as the parser expands them.
const MACRO_RESULT: &str = "@result";

/// Rewrite (after [`instrument`], whose costs stay as they are): the loop step of an `all`
/// (`@result && p`) or `exists` (`@result || p`) macro becomes `@all_step(@result, p)` or
/// `@exists_step(@result, p)`, which hold an error of `p` in the accumulator ([`Absorbed`])
/// instead of stopping, and the result `@absorbed(@result)` raises it if no element decided.
/// cel-go's expansion does this with error values: `["abc", "10"].exists(s, int(s) > 5)` is
/// true, `["abc", "0"].all(s, int(s) > 0)` false, in either order.
fn absorbing_macros(e: &mut IdedExpr, next: &mut u64) {
    children_mut(e, &mut |c| absorbing_macros(c, next));
    let Expr::Comprehension(c) = &mut e.expr else {
        return;
    };
    if c.accu_var != MACRO_RESULT {
        return;
    }
    let Expr::Call(step) = &mut c.loop_step.expr else {
        return;
    };
    let on_result = matches!(
        step.args.first().map(|a| &a.expr),
        Some(Expr::Ident(n)) if n == MACRO_RESULT
    );
    let name = match step.func_name.as_str() {
        "_&&_" if on_result && step.args.len() == 2 => ALL_STEP,
        "_||_" if on_result && step.args.len() == 2 => EXISTS_STEP,
        _ => return,
    };
    step.func_name = name.into();
    let result = std::mem::take(&mut c.result);
    c.result = call(next, ABSORBED, None, vec![result]);
}

const ALL_STEP: &str = "@all_step";
const AND: &str = "@and";
const OR: &str = "@or";

/// Rewrite (after [`instrument`]): `a && b` and `a || b` become `@and(a, b)` and `@or(a, b)`,
/// which report the left operand's error when neither decides, as cel-go's `evalAnd` and
/// `evalOr` do (the interpreter reports the right one).
fn logic_operators(e: &mut IdedExpr) {
    children_mut(e, &mut logic_operators);
    if let Expr::Call(c) = &mut e.expr
        && c.target.is_none()
        && c.args.len() == 2
    {
        match c.func_name.as_str() {
            "_&&_" => c.func_name = AND.into(),
            "_||_" => c.func_name = OR.into(),
            _ => {}
        }
    }
}

/// `@and` (`decisive` false) and `@or` (`decisive` true): an operand equal to `decisive`
/// decides whatever the other is (an error included); otherwise the left operand's error
/// comes first, then the right's, then `no such overload` for a non-boolean.
fn logic(ftx: &FunctionContext, decisive: bool) -> ResolveResult {
    let operand = |i: usize| -> ResolveResult {
        let e = ftx
            .args
            .get(i)
            .ok_or(ExecutionError::MissingArgumentOrTarget)?;
        ftx.ptx.resolve(e)
    };
    let left = operand(0);
    if matches!(left, Ok(Value::Bool(b)) if b == decisive) {
        return left;
    }
    if left.is_err() && TRACKER.with(|t| t.exceeded.get()) {
        return left;
    }
    let right = operand(1);
    match (left, right) {
        (_, Ok(Value::Bool(b))) if b == decisive => Ok(Value::Bool(b)),
        (Ok(Value::Bool(_)), Ok(Value::Bool(b))) => Ok(Value::Bool(b)),
        (Err(e), _) | (Ok(Value::Bool(_)), Err(e)) => Err(e),
        _ => Err(ExecutionError::NoSuchOverload),
    }
}

/// `size(x)` and `x.size()`: code points of a string, bytes, list elements or map entries. The
/// interpreter's own reports an operand's error (`no such key: x`) as a missing argument.
fn size_of(ftx: &FunctionContext) -> ResolveResult {
    let v = match &ftx.this {
        Some(this) => this.clone(),
        None => arg(ftx, 0)?,
    };
    let n = match &v {
        Value::String(s) => s.chars().count(),
        Value::Bytes(b) => b.len(),
        Value::List(l) => l.len(),
        Value::Map(m) => m.map.len(),
        _ => return Err(ExecutionError::NoSuchOverload),
    };
    Ok(Value::Int(i64::try_from(n).unwrap_or(i64::MAX)))
}
const EXISTS_STEP: &str = "@exists_step";
const ABSORBED: &str = "@absorbed";

/// An element's error an `all` or `exists` accumulator holds while a later element may still
/// decide the result.
#[derive(Debug, PartialEq)]
struct Absorbed(ExecutionError);

impl Eq for Absorbed {}

impl Opaque for Absorbed {
    fn runtime_type_name(&self) -> &'static str {
        "error"
    }
}

/// One step of `all` (`decisive` false) or `exists` (`decisive` true): an element whose
/// predicate is `decisive` decides; an error is held unless one is held already (the first
/// stays, as cel-go's left operand does); the cost limit is never held.
fn logic_step(ftx: &FunctionContext, decisive: bool) -> ResolveResult {
    let acc = arg(ftx, 0)?;
    if acc == Value::Bool(decisive) {
        return Ok(acc);
    }
    let predicate = ftx
        .args
        .get(1)
        .ok_or(ExecutionError::MissingArgumentOrTarget)?;
    let error = match ftx.ptx.resolve(predicate) {
        Ok(Value::Bool(b)) if b == decisive => return Ok(Value::Bool(b)),
        Ok(Value::Bool(_)) => return Ok(acc),
        Ok(_) => ExecutionError::NoSuchOverload,
        Err(e) if TRACKER.with(|t| t.exceeded.get()) => return Err(e),
        Err(e) => e,
    };
    if matches!(&acc, Value::Opaque(o) if o.downcast_ref::<Absorbed>().is_some()) {
        return Ok(acc);
    }
    Ok(Value::Opaque(Arc::new(Absorbed(error))))
}

/// The function `string(x)` calls are lowered to: cel-go's conversions, with `string(bool)`
/// (`"true"`/`"false"`), which the interpreter's own `string` refuses.
const STRING_CONVERSION: &str = "@string";

/// Rewrite: global `string(x)` calls (after [`instrument`], so the cost model still sees
/// `string`) call [`STRING_CONVERSION`].
fn string_conversions(e: &mut IdedExpr) {
    children_mut(e, &mut string_conversions);
    if let Expr::Call(c) = &mut e.expr
        && c.func_name == "string"
        && c.target.is_none()
        && c.args.len() == 1
    {
        c.func_name = STRING_CONVERSION.into();
    }
}

/// `string(x)`: a bool as `true`/`false`, anything else by the interpreter's `string` (with
/// the Kubernetes libraries' IP and CIDR overloads), on the value bound once.
fn string_conversion(ftx: &FunctionContext) -> ResolveResult {
    let v = arg(ftx, 0)?;
    // The scalars whose text the interpreter's `string` gives by `to_string` (and a string,
    // itself) need no scope and no call by name: what a rule such as
    // `duration(string(self) + 's')` pays per object.
    match v {
        Value::Bool(b) => return Ok(Value::String(Arc::new(b.to_string()))),
        Value::Int(i) => return Ok(Value::String(Arc::new(i.to_string()))),
        Value::UInt(u) => return Ok(Value::String(Arc::new(u.to_string()))),
        Value::String(_) => return Ok(v),
        _ => {}
    }
    let mut scope = ftx.ptx.new_inner_scope();
    scope.add_variable_from_value("@sv", v);
    let call = IdedExpr {
        id: 0,
        expr: Expr::Call(CallExpr {
            func_name: "string".into(),
            target: None,
            args: vec![IdedExpr {
                id: 0,
                expr: Expr::Ident("@sv".into()),
            }],
        }),
    };
    scope.resolve(&call)
}

/// The key under which a lowered `Object.<path>{...}` initializer keeps its type name, for
/// [`crate::mutation::object_value`] to check and remove (no CEL field name or Kubernetes map
/// key can spell it).
pub(crate) const TYPE_NAME_KEY: &str = "\u{0}type";

/// Lowers the mutation environment's object initializers (`Object.spec{a: 1}`,
/// `JSONPatch{op: "add"}`) to map literals keyed by field name; `Object` types keep their name
/// under [`TYPE_NAME_KEY`] (the checker refused initializers anywhere else).
fn initializers_to_maps(e: &mut IdedExpr, next: &mut u64) {
    children_mut(e, &mut |c| initializers_to_maps(c, next));
    let Expr::Struct(st) = &mut e.expr else {
        return;
    };
    let mut entries = Vec::with_capacity(st.entries.len() + 1);
    if st.type_name != crate::checker::JSON_PATCH {
        let key = string(next, TYPE_NAME_KEY);
        let value = string(next, &st.type_name);
        *next += 1;
        entries.push(IdedEntryExpr {
            id: *next,
            expr: EntryExpr::MapEntry(MapEntryExpr {
                key,
                value,
                optional: false,
            }),
        });
    }
    for entry in std::mem::take(&mut st.entries) {
        if let EntryExpr::StructField(sf) = entry.expr {
            entries.push(IdedEntryExpr {
                id: entry.id,
                expr: EntryExpr::MapEntry(MapEntryExpr {
                    key: string(next, &sf.field),
                    value: sf.value,
                    optional: sf.optional,
                }),
            });
        }
    }
    e.expr = Expr::Map(MapExpr { entries });
}

fn max_id(e: &IdedExpr) -> u64 {
    let mut max = e.id;
    let mut e = e.clone();
    children_mut(&mut e, &mut |c| max = max.max(max_id(c)));
    max
}

fn node(next: &mut u64, expr: Expr) -> IdedExpr {
    *next += 1;
    IdedExpr { id: *next, expr }
}

fn call(next: &mut u64, func: &str, target: Option<IdedExpr>, args: Vec<IdedExpr>) -> IdedExpr {
    node(
        next,
        Expr::Call(CallExpr {
            func_name: func.into(),
            target: target.map(Box::new),
            args,
        }),
    )
}

fn string(next: &mut u64, s: &str) -> IdedExpr {
    node(next, Expr::Literal(LiteralValue::String(s.into())))
}

fn int(next: &mut u64, i: i64) -> IdedExpr {
    node(next, Expr::Literal(LiteralValue::Int(i.into())))
}

/// Rewrite: `==`, `!=` and `+` whose left operand is a set or map list use the list type's
/// semantics (Kubernetes' `unstructuredSetList` / `unstructuredMapList`).
fn list_semantics(e: &mut IdedExpr, schemas: &HashMap<u64, Json>, next: &mut u64) {
    children_mut(e, &mut |c| list_semantics(c, schemas, next));
    let Expr::Call(c) = &mut e.expr else {
        return;
    };
    let op = match c.func_name.as_str() {
        "_==_" => "@listEq",
        "_!=_" => "@listNe",
        "_+_" => "@listAdd",
        _ => return,
    };
    let Some(schema) = c.args.first().and_then(|l| schemas.get(&l.id)) else {
        return;
    };
    let list_type = schema
        .get("x-kubernetes-list-type")
        .and_then(Json::as_str)
        .unwrap_or("atomic");
    if c.args.len() != 2 || !matches!(list_type, "set" | "map") {
        return;
    }
    let keys: Vec<IdedExpr> = schema
        .get("x-kubernetes-list-map-keys")
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
        .filter_map(Json::as_str)
        .map(|k| string(next, k))
        .collect::<Vec<_>>();
    let keys = node(next, Expr::List(ListExpr::new(keys)));
    c.func_name = op.into();
    c.args.push(keys);
}

/// Rewrite: `x.?f` is `optional.none()` when `x` has no field `f` (cel 0.13's interpreter
/// raises `no such key` instead).
fn optional_select(e: &mut IdedExpr) {
    children_mut(e, &mut optional_select);
    if let Expr::Call(c) = &mut e.expr
        && c.func_name == "_?._"
    {
        c.func_name = "@optSelect".into();
    }
}

/// Rewrite: `authorizer.requestResource` (upstream declares it as a variable of its own) is a
/// call that builds the request's `ResourceCheck` from the `authorizer` value.
fn request_resource(e: &mut IdedExpr) {
    children_mut(e, &mut request_resource);
    let Expr::Select(s) = &e.expr else {
        return;
    };
    if s.test
        || s.field != "requestResource"
        || !matches!(&s.operand.expr, Expr::Ident(n) if n == "authorizer")
    {
        return;
    }
    let Expr::Select(s) = std::mem::take(&mut e.expr) else {
        return;
    };
    e.expr = Expr::Call(CallExpr {
        func_name: crate::authz::REQUEST_RESOURCE.into(),
        target: None,
        args: vec![*s.operand],
    });
}

/// Rewrite: charge cel-go's runtime costs. Costs that do not depend on values (identifiers and
/// selections 1, list and map literals 10 and 30, most calls 1) are summed per evaluation region
/// and charged once per region: the whole expression, and each comprehension iteration (on its
/// loop condition). Calls whose cost depends on operand sizes (string and list operations) are
/// wrapped in `@c`, which charges what [`crate::cost::call`] says for the evaluated operands.
/// Short-circuited branches are charged as if taken: an upper bound, never an undercount.
fn instrument(e: &mut IdedExpr, next: &mut u64, types: &HashMap<u64, Type>) {
    let mut region = 0i64;
    instrument_in(e, next, types, &mut region);
    charge_region(e, next, region);
}

/// Wraps `e` as `@t(n, e)`: `e`, charging `n`.
fn charge_region(e: &mut IdedExpr, next: &mut u64, n: i64) {
    if n == 0 {
        return;
    }
    let inner = std::mem::take(e);
    let n = int(next, n);
    *e = node(
        next,
        Expr::Call(CallExpr {
            func_name: "@t".into(),
            target: None,
            args: vec![n, inner],
        }),
    );
}

/// Whether a call's cost depends on the sizes of its operands.
fn size_dependent(c: &CallExpr, types: &HashMap<u64, Type>) -> bool {
    if !crate::cost::size_dependent(crate::cost::list_concat_name(c, types)) {
        return false;
    }
    c.target
        .as_deref()
        .into_iter()
        .chain(&c.args)
        .any(|a| !crate::cost::sizeless(types.get(&a.id)))
}

fn instrument_in(e: &mut IdedExpr, next: &mut u64, types: &HashMap<u64, Type>, region: &mut i64) {
    // Namespace targets (`sets.contains`) are names, not values: leave them as they are.
    let namespace_target = matches!(&e.expr, Expr::Call(c)
        if matches!(c.target.as_deref(), Some(IdedExpr { expr: Expr::Ident(n), .. }) if NAMESPACES.contains(&n.as_str())));
    match &mut e.expr {
        Expr::Comprehension(c) => {
            instrument_in(&mut c.iter_range, next, types, region);
            instrument_in(&mut c.accu_init, next, types, region);
            instrument_in(&mut c.result, next, types, region);
            let mut iteration = 0i64;
            instrument_in(&mut c.loop_cond, next, types, &mut iteration);
            instrument_in(&mut c.loop_step, next, types, &mut iteration);
            charge_region(&mut c.loop_cond, next, iteration);
            return;
        }
        Expr::Call(c) if namespace_target => {
            c.args
                .iter_mut()
                .for_each(|a| instrument_in(a, next, types, region));
        }
        _ => children_mut(e, &mut |c| instrument_in(c, next, types, region)),
    }
    match &e.expr {
        // Presence tests cost nothing in Kubernetes (`PresenceTestHasCost(false)`).
        Expr::Select(s) if s.test => return,
        Expr::Ident(_) | Expr::Select(_) => *region += SELECT_AND_IDENT_COST,
        Expr::List(_) => *region += LIST_CREATE_COST,
        Expr::Map(_) => *region += MAP_CREATE_COST,
        Expr::Call(c) if matches!(c.func_name.as_str(), "_&&_" | "_||_" | "_?_:_") => {}
        // A fixed cost: 1 for most calls, an authorization `check` far more.
        Expr::Call(c) if !size_dependent(c, types) => {
            *region = region.saturating_add(
                i64::try_from(crate::cost::call(&c.func_name, Some(0), &[0, 0])).unwrap_or(1),
            );
        }
        _ => {}
    }
    let Expr::Call(c) = &e.expr else {
        return;
    };
    if matches!(c.func_name.as_str(), "_&&_" | "_||_" | "_?_:_") || !size_dependent(c, types) {
        return;
    }
    let Expr::Call(c) = std::mem::take(&mut e.expr) else {
        return;
    };
    // @c(name, template, has_target, [target,] args...): the template is the call over
    // variables @tg and @a0.. that @c binds to the evaluated operands.
    let name = c.func_name.clone();
    let mut operands = Vec::new();
    let target = match c.target {
        Some(t) if namespace_target => Some(*t),
        Some(t) => {
            operands.push(*t);
            Some(node(next, Expr::Ident("@tg".into())))
        }
        None => None,
    };
    let has_target = target.is_some() && !namespace_target;
    let vars = (0..c.args.len())
        .map(|i| node(next, Expr::Ident(format!("@a{i}"))))
        .collect();
    operands.extend(c.args);
    let template = call(next, &name, target, vars);
    let name = string(next, &name);
    let flag = node(
        next,
        Expr::Literal(LiteralValue::Boolean(has_target.into())),
    );
    let mut args = vec![name, template, flag];
    args.extend(operands);
    e.expr = Expr::Call(CallExpr {
        func_name: "@c".into(),
        target: None,
        args,
    });
}

/// Rewrite: a comprehension with two variables iterates over `@pairs(range)` (`[key, value]`
/// lists) with its variables replaced by `@itN[0]` and `@itN[1]`.
fn two_variable(e: &mut IdedExpr, next: &mut u64) {
    children_mut(e, &mut |c| two_variable(c, next));
    let Expr::Comprehension(c) = &mut e.expr else {
        return;
    };
    let Some(second) = c.iter_var2.take() else {
        return;
    };
    let first = std::mem::replace(&mut c.iter_var, format!("@it{}", e.id));
    let range = std::mem::take(&mut c.iter_range);
    c.iter_range = call(next, "@pairs", None, vec![range]);
    for part in [&mut c.loop_cond, &mut c.loop_step] {
        substitute(part, &first, &c.iter_var, 0, next);
        substitute(part, &second, &c.iter_var, 1, next);
    }
}

/// Replaces identifier `name` by `pair[index]`, except below a comprehension that rebinds it.
fn substitute(e: &mut IdedExpr, name: &str, pair: &str, index: i64, next: &mut u64) {
    if let Expr::Comprehension(c) = &e.expr
        && (c.iter_var == name || c.iter_var2.as_deref() == Some(name) || c.accu_var == name)
    {
        if let Expr::Comprehension(c) = &mut e.expr {
            substitute(&mut c.iter_range, name, pair, index, next);
            substitute(&mut c.accu_init, name, pair, index, next);
        }
        return;
    }
    if matches!(&e.expr, Expr::Ident(n) if n == name) {
        let p = node(next, Expr::Ident(pair.into()));
        let i = int(next, index);
        e.expr = Expr::Call(CallExpr {
            func_name: "_[_]".into(),
            target: None,
            args: vec![p, i],
        });
        return;
    }
    children_mut(e, &mut |c| substitute(c, name, pair, index, next));
}

/// A CEL type value (`int`, `type(x)`), for `type()` comparisons.
#[derive(Debug, PartialEq, Eq)]
struct TypeValue(String);

impl Opaque for TypeValue {
    fn runtime_type_name(&self) -> &'static str {
        "type"
    }
}

fn type_name(v: &Value) -> String {
    match v {
        Value::List(_) => "list".into(),
        Value::Map(_) => "map".into(),
        Value::Function(..) => "function".into(),
        Value::Int(_) => "int".into(),
        Value::UInt(_) => "uint".into(),
        Value::Float(_) => "double".into(),
        Value::String(_) => "string".into(),
        Value::Bytes(_) => "bytes".into(),
        Value::Bool(_) => "bool".into(),
        Value::Duration(_) => "google.protobuf.Duration".into(),
        Value::Timestamp(_) => "google.protobuf.Timestamp".into(),
        Value::Opaque(o) => o.runtime_type_name().into(),
        Value::Null => "null_type".into(),
    }
}

fn arg(ftx: &FunctionContext, i: usize) -> ResolveResult {
    let e = ftx
        .args
        .get(i)
        .ok_or(ExecutionError::MissingArgumentOrTarget)?;
    ftx.ptx.resolve(e)
}

fn base_context() -> Context<'static> {
    let mut ctx = Context::default().with_all();
    for t in [
        "int",
        "uint",
        "double",
        "bool",
        "string",
        "bytes",
        "list",
        "map",
        "null_type",
        "type",
    ] {
        ctx.add_variable_from_value(t, Value::Opaque(Arc::new(TypeValue(t.into()))));
    }
    ctx.add_function("type", |ftx: &FunctionContext| -> ResolveResult {
        let v = arg(ftx, 0)?;
        Ok(Value::Opaque(Arc::new(TypeValue(type_name(&v)))))
    });
    ctx.add_function("dyn", |ftx: &FunctionContext| -> ResolveResult {
        arg(ftx, 0)
    });
    ctx.add_function("@t", |ftx: &FunctionContext| -> ResolveResult {
        let n = match ftx.args.first().map(|a| &a.expr) {
            Some(Expr::Literal(LiteralValue::Int(n))) => *n.inner(),
            _ => 0,
        };
        let v = arg(ftx, 1)?;
        charge(n)?;
        Ok(v)
    });
    ctx.add_function("@c", call_with_cost);
    ctx.add_function("size", size_of);
    ctx.add_function(AND, |ftx: &FunctionContext| logic(ftx, false));
    ctx.add_function(OR, |ftx: &FunctionContext| logic(ftx, true));
    ctx.add_function(ALL_STEP, |ftx: &FunctionContext| logic_step(ftx, false));
    ctx.add_function(EXISTS_STEP, |ftx: &FunctionContext| logic_step(ftx, true));
    ctx.add_function(ABSORBED, |ftx: &FunctionContext| -> ResolveResult {
        match arg(ftx, 0)? {
            Value::Opaque(o) => match o.downcast_ref::<Absorbed>() {
                Some(Absorbed(e)) => Err(e.clone()),
                None => Ok(Value::Opaque(o)),
            },
            v => Ok(v),
        }
    });
    ctx.add_function(STRING_CONVERSION, string_conversion);
    crate::authz::register(&mut ctx);
    ctx.add_function(
        "jsonpatch.escapeKey",
        |ftx: &FunctionContext| -> ResolveResult {
            let Value::String(k) = arg(ftx, 0)? else {
                return Err(ExecutionError::NoSuchOverload);
            };
            Ok(Value::String(Arc::new(
                k.replace('~', "~0").replace('/', "~1"),
            )))
        },
    );
    ctx.add_function("@pairs", |ftx: &FunctionContext| -> ResolveResult {
        Ok(match arg(ftx, 0)? {
            Value::List(l) => Value::List(Arc::new(
                l.iter()
                    .enumerate()
                    .map(|(i, v)| Value::List(Arc::new(vec![Value::Int(i as i64), v.clone()])))
                    .collect(),
            )),
            Value::Map(m) => Value::List(Arc::new(
                m.map
                    .iter()
                    .map(|(k, v)| Value::List(Arc::new(vec![key_value(k), v.clone()])))
                    .collect(),
            )),
            _ => return Err(ExecutionError::NoSuchOverload),
        })
    });
    ctx.add_function(MAP_INSERT, |ftx: &FunctionContext| -> ResolveResult {
        let Value::Map(m) = arg(ftx, 0)? else {
            return Err(ExecutionError::NoSuchOverload);
        };
        let mut map = (*m.map).clone();
        let entries: Vec<(Value, Value)> = if ftx.args.len() == 3 {
            vec![(arg(ftx, 1)?, arg(ftx, 2)?)]
        } else {
            let Value::Map(entry) = arg(ftx, 1)? else {
                return Err(ExecutionError::NoSuchOverload);
            };
            entry
                .map
                .iter()
                .map(|(k, v)| (key_value(k), v.clone()))
                .collect()
        };
        for (k, v) in entries {
            let key = value_key(k)?;
            if map.contains_key(&key) {
                return Err(ExecutionError::function_error(
                    MAP_INSERT,
                    format!("insert failed: key {key:?} already exists"),
                ));
            }
            map.insert(key, v);
        }
        Ok(Value::Map(Map { map: Arc::new(map) }))
    });
    ctx.add_function("@listEq", |ftx: &FunctionContext| -> ResolveResult {
        list_eq(ftx).map(Value::Bool)
    });
    ctx.add_function("@listNe", |ftx: &FunctionContext| -> ResolveResult {
        list_eq(ftx).map(|b| Value::Bool(!b))
    });
    ctx.add_function("@listAdd", list_add);
    ctx.add_function("matches", matches);
    ctx.add_function("@optSelect", |ftx: &FunctionContext| -> ResolveResult {
        let operand = arg(ftx, 0)?;
        let Value::String(field) = arg(ftx, 1)? else {
            return Err(ExecutionError::NoSuchOverload);
        };
        let inner = match &operand {
            Value::Opaque(o) => match o.downcast_ref::<OptionalValue>() {
                Some(opt) => opt.value().cloned(),
                None => return Err(ExecutionError::NoSuchOverload),
            },
            other => Some(other.clone()),
        };
        let found = match inner {
            None => None,
            Some(Value::Map(m)) => m.map.get(&Key::String(field)).cloned(),
            Some(_) => return Err(ExecutionError::NoSuchOverload),
        };
        let opt = match found {
            Some(v) => OptionalValue::of(v),
            None => OptionalValue::none(),
        };
        Ok(Value::Opaque(Arc::new(opt)))
    });
    ctx
}

fn key_value(k: &Key) -> Value {
    match k {
        Key::Int(i) => Value::Int(*i),
        Key::Uint(u) => Value::UInt(*u),
        Key::Bool(b) => Value::Bool(*b),
        Key::String(s) => Value::String(s.clone()),
    }
}

fn value_key(v: Value) -> Result<Key, ExecutionError> {
    Ok(match v {
        Value::Int(i) => Key::Int(i),
        Value::UInt(u) => Key::Uint(u),
        Value::Bool(b) => Key::Bool(b),
        Value::String(s) => Key::String(s),
        other => return Err(ExecutionError::UnsupportedKeyType(other)),
    })
}

/// `string.matches(regex)` with compiled patterns cached per thread: cel 0.13 compiles the
/// pattern on every call, which dominated evaluation time.
#[allow(clippy::needless_pass_by_value)] // cel's argument extractors hand over owned values
fn matches(
    ftx: &FunctionContext,
    This(this): This<Arc<String>>,
    pattern: Arc<String>,
) -> Result<bool, ExecutionError> {
    thread_local! {
        static CACHE: std::cell::RefCell<HashMap<String, regex::Regex>> = std::cell::RefCell::new(HashMap::new());
    }
    CACHE.with(|cache| {
        let mut cache = cache.borrow_mut();
        if let Some(re) = cache.get(pattern.as_str()) {
            return Ok(re.is_match(&this));
        }
        let re = regex::Regex::new(&pattern)
            .map_err(|e| ftx.error(format!("'{pattern}' not a valid regex:\n{e}")))?;
        let hit = re.is_match(&this);
        if cache.len() >= 256 {
            cache.clear();
        }
        cache.insert(pattern.to_string(), re);
        Ok(hit)
    })
}

/// The names [`call_with_cost`] binds its first operands to (`@a0`, …), without a `format!` per
/// call.
const ARG_NAMES: [&str; 4] = ["@a0", "@a1", "@a2", "@a3"];

/// `@c(name, template, has_target, operands...)`: evaluates the operands, runs the template
/// with them bound, and charges the call's cost.
fn call_with_cost(ftx: &FunctionContext) -> ResolveResult {
    let name = match ftx.args.first().map(|a| &a.expr) {
        Some(Expr::Literal(LiteralValue::String(s))) => s.inner(),
        _ => "",
    };
    let has_target = matches!(
        ftx.args.get(2).map(|a| &a.expr),
        Some(Expr::Literal(LiteralValue::Boolean(b))) if *b.inner()
    );
    let template = ftx
        .args
        .get(1)
        .ok_or(ExecutionError::MissingArgumentOrTarget)?;
    let mut values = Vec::with_capacity(ftx.args.len().saturating_sub(3));
    for e in ftx.args.iter().skip(3) {
        values.push(ftx.ptx.resolve(e)?);
    }
    let mut scope = ftx.ptx.new_inner_scope();
    let (target, args) = if has_target && !values.is_empty() {
        let (t, rest) = values.split_at(1);
        (t.first(), rest)
    } else {
        (None, values.as_slice())
    };
    if let Some(t) = target {
        scope.add_variable_from_value("@tg", t.clone());
    }
    for (i, v) in args.iter().enumerate() {
        match ARG_NAMES.get(i) {
            Some(&n) => scope.add_variable_from_value(n, v.clone()),
            None => scope.add_variable_from_value(format!("@a{i}"), v.clone()),
        }
    }
    let result = scope.resolve(template)?;
    let sizes: Vec<u64> = args.iter().map(size).collect();
    let cost = crate::cost::call(name, target.map(size), &sizes);
    charge(i64::try_from(cost).unwrap_or(i64::MAX))?;
    Ok(result)
}

/// The size the cost model charges for: string and bytes lengths, list and map lengths.
fn size(v: &Value) -> u64 {
    match v {
        Value::String(s) => s.len() as u64,
        Value::Bytes(b) => b.len() as u64,
        Value::List(l) => l.len() as u64,
        Value::Map(m) => m.map.len() as u64,
        _ => 0,
    }
}

/// The list-type keys of `@listEq(a, b, keys)`: empty for sets.
fn list_keys(ftx: &FunctionContext) -> Result<Vec<String>, ExecutionError> {
    Ok(match arg(ftx, 2)? {
        Value::List(l) => l
            .iter()
            .filter_map(|k| match k {
                Value::String(s) => Some(s.to_string()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    })
}

fn key_of(item: &Value, keys: &[String]) -> Vec<Option<Value>> {
    keys.iter()
        .map(|k| match item {
            Value::Map(m) => m.map.get(&Key::String(Arc::new(k.clone()))).cloned(),
            _ => None,
        })
        .collect()
}

/// Set lists are equal when they hold the same elements; map lists when they hold the same
/// items by key, in any order.
fn list_eq(ftx: &FunctionContext) -> Result<bool, ExecutionError> {
    let (a, b) = (arg(ftx, 0)?, arg(ftx, 1)?);
    let keys = list_keys(ftx)?;
    let (Value::List(a), Value::List(b)) = (&a, &b) else {
        return Ok(a == b);
    };
    if a.len() != b.len() {
        return Ok(false);
    }
    Ok(if keys.is_empty() {
        a.iter().all(|x| b.contains(x)) && b.iter().all(|x| a.contains(x))
    } else {
        a.iter().all(|x| {
            let k = key_of(x, &keys);
            b.iter().find(|y| key_of(y, &keys) == k) == Some(x)
        })
    })
}

/// `X + Y` on a set list is a union keeping X's order; on a map list a merge where Y's items
/// replace X's items with the same keys in place and the rest are appended.
fn list_add(ftx: &FunctionContext) -> ResolveResult {
    let (a, b) = (arg(ftx, 0)?, arg(ftx, 1)?);
    let keys = list_keys(ftx)?;
    let (Value::List(a), Value::List(b)) = (&a, &b) else {
        return Err(ExecutionError::NoSuchOverload);
    };
    let mut out: Vec<Value> = a.to_vec();
    for y in b.iter() {
        if keys.is_empty() {
            if !out.contains(y) {
                out.push(y.clone());
            }
        } else {
            let k = key_of(y, &keys);
            match out.iter().position(|x| key_of(x, &keys) == k) {
                Some(i) => out[i] = y.clone(),
                None => out.push(y.clone()),
            }
        }
    }
    Ok(Value::List(Arc::new(out)))
}

/// Runs a program with variables bound, under a cost limit; returns the value (or the error)
/// and the actual cost.
pub(crate) fn run(
    program: &Program,
    vars: &[(&str, Value)],
    limit: i64,
) -> (Result<Value, EvalError>, i64) {
    let mut ctx = scope();
    for (name, v) in vars {
        ctx.add_variable_from_value(*name, v.clone());
    }
    run_in(program, &ctx, limit)
}

/// Evaluates `program` in `ctx` (a [`scope`] with the variables bound) under `limit`; returns
/// the result and the cost charged. Binding a variable converts its whole value to the
/// interpreter's representation, so a scope bound once serves every expression of a request.
pub(crate) fn run_in(
    program: &Program,
    ctx: &Context<'_>,
    limit: i64,
) -> (Result<Value, EvalError>, i64) {
    TRACKER.with(|t| {
        t.cost.set(0);
        t.limit.set(limit);
        t.exceeded.set(false);
    });
    let result = ctx.resolve(&program.expr);
    let (cost, exceeded) = TRACKER.with(|t| (t.cost.get(), t.exceeded.get()));
    let result = match result {
        Ok(v) => Ok(v),
        Err(_) if exceeded => Err(EvalError::CostLimit),
        Err(e) => Err(EvalError::Runtime(go_error(&e))),
    };
    (result, cost)
}

/// cel 0.13's runtime errors in cel-go's words, which Kubernetes matches on and prints.
fn go_error(e: &ExecutionError) -> String {
    match e {
        ExecutionError::NoSuchKey(k) => format!("no such key: {k}"),
        ExecutionError::NoSuchOverload
        | ExecutionError::UnsupportedBinaryOperator(..)
        | ExecutionError::UnsupportedUnaryOperator(..)
        | ExecutionError::ValuesNotComparable(..)
        | ExecutionError::UnsupportedTargetType { .. }
        | ExecutionError::NotSupportedAsMethod { .. }
        | ExecutionError::UnexpectedType { .. } => "no such overload".into(),
        ExecutionError::DivisionByZero(_) => "division by zero".into(),
        ExecutionError::RemainderByZero(_) => "modulus by zero".into(),
        ExecutionError::Overflow(..) => "integer overflow".into(),
        ExecutionError::IndexOutOfBounds(i) => format!("index out of bounds: {}", plain(i)),
        // cel-go's `String.ConvertToType` says which conversion failed, not why.
        ExecutionError::FunctionError { function, message }
            if message.starts_with("string parse error")
                && matches!(function.as_str(), "int" | "uint" | "double") =>
        {
            format!("type conversion error from 'string' to '{function}'")
        }
        ExecutionError::FunctionError { message, .. } => message.clone(),
        other => other.to_string(),
    }
}

fn plain(v: &Value) -> String {
    match v {
        Value::Int(i) => i.to_string(),
        Value::UInt(u) => u.to_string(),
        other => format!("{other:?}"),
    }
}

/// The CEL value of a JSON value under its schema (Kubernetes' `UnstructuredToVal`): declared
/// properties only, under their escaped names; `null` properties absent; formats typed.
/// `resource` adds what the root and embedded resources expose of their type and metadata.
pub(crate) fn to_cel(v: &Json, schema: &Json, resource: bool) -> Value {
    let int_or_string = schema
        .get("x-kubernetes-int-or-string")
        .and_then(Json::as_bool)
        == Some(true);
    let ty = schema.get("type").and_then(Json::as_str).unwrap_or("");
    match v {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => match (ty, n.as_i64()) {
            ("number", _) | (_, None) => n.as_f64().map_or(Value::Null, Value::Float),
            (_, Some(i)) => Value::Int(i),
        },
        Json::String(s) if !int_or_string => string_value(s, schema),
        Json::String(s) => Value::String(Arc::new(s.clone())),
        Json::Array(items) => {
            let item_schema = schema.get("items").unwrap_or(&Json::Null);
            Value::List(Arc::new(
                items
                    .iter()
                    .map(|i| to_cel(i, item_schema, embedded(item_schema)))
                    .collect(),
            ))
        }
        Json::Object(m) => {
            let mut out = HashMap::new();
            if let Some(props) = schema.get("properties").and_then(Json::as_object) {
                for (k, s) in props {
                    if let (Some(v), Some(name)) = (m.get(k), crate::checker::types::escape(k))
                        && !v.is_null()
                    {
                        out.insert(Key::String(Arc::new(name)), to_cel(v, s, embedded(s)));
                    }
                }
            } else if let Some(ap) = schema.get("additionalProperties").filter(|a| a.is_object()) {
                for (k, v) in m {
                    out.insert(
                        Key::String(Arc::new(k.clone())),
                        to_cel(v, ap, embedded(ap)),
                    );
                }
            }
            if resource {
                for k in ["apiVersion", "kind"] {
                    if let Some(Json::String(s)) = m.get(k) {
                        out.insert(
                            Key::String(Arc::new(k.into())),
                            Value::String(Arc::new(s.clone())),
                        );
                    }
                }
                let mut meta = HashMap::new();
                for k in ["name", "generateName"] {
                    if let Some(Json::String(s)) = m.get("metadata").and_then(|md| md.get(k)) {
                        meta.insert(
                            Key::String(Arc::new(k.into())),
                            Value::String(Arc::new(s.clone())),
                        );
                    }
                }
                if m.contains_key("metadata") {
                    out.insert(
                        Key::String(Arc::new("metadata".into())),
                        Value::Map(Map {
                            map: Arc::new(meta),
                        }),
                    );
                }
            }
            Value::Map(Map { map: Arc::new(out) })
        }
    }
}

fn embedded(schema: &Json) -> bool {
    schema
        .get("x-kubernetes-embedded-resource")
        .and_then(Json::as_bool)
        == Some(true)
}

fn string_value(s: &str, schema: &Json) -> Value {
    use kube_cel::cel::functions::time;
    let format = schema.get("format").and_then(Json::as_str).unwrap_or("");
    let text = Arc::new(s.to_string());
    let typed = match format {
        "date-time" | "datetime" => time::timestamp(text.clone()).ok(),
        "date" => time::timestamp(Arc::new(format!("{s}T00:00:00Z"))).ok(),
        "duration" => time::duration(text.clone()).ok(),
        "byte" => {
            use base64::Engine;
            base64::engine::general_purpose::STANDARD
                .decode(s)
                .ok()
                .map(|b| Value::Bytes(Arc::new(b)))
        }
        _ => None,
    };
    typed.unwrap_or(Value::String(text))
}
