//! Step 1 of a rule's pipeline: parse with the optional syntax Kubernetes enables (`.?`, `[?]`)
//! and expand the macros cel 0.13's parser leaves as calls into the comprehensions cel-go builds
//! for them (the two-variable comprehensions of `ext.TwoVarComprehensions`, Kubernetes 1.32).
//! `cel.bind` is not expanded: Kubernetes' environment does not include `ext.Bindings`.
//!
//! The result is the AST the checker, the cost estimator and the evaluator all read.

use kube_cel::cel::common::ast::{
    CallExpr, ComprehensionExpr, EntryExpr, Expr, IdedExpr, ListExpr, LiteralValue, MapExpr,
};
use kube_cel::cel::parser::Parser;

/// The accumulator variable cel-go names for macro results.
pub(crate) const ACCU: &str = "@result";

/// The internal map-building function cel-go's `transformMap` expansions call.
pub(crate) const MAP_INSERT: &str = "cel.@mapInsert";

/// Parses a rule and expands the macros the parser does not know. The error is the parser's
/// text (`ERROR: <input>:1:8: Syntax error: ...`).
pub(crate) fn parse(source: &str) -> Result<IdedExpr, String> {
    check_limits(source)?;
    // cel 0.13's recursion listener decrements its depth on rule exits that error recovery
    // produces without a matching entry, which overflows (a panic where overflow checks are on:
    // debug builds; found by the `cel` fuzz target). Such input is malformed either way.
    let parsed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        Parser::new().enable_optional_syntax(true).parse(source)
    }))
    .map_err(|_| no_location_error("Syntax error: the expression could not be parsed"))?;
    let mut expr = parsed.map_err(|errs| {
        errs.errors
            .iter()
            .map(|e| go_parse_error(source, e.pos, &e.msg))
            .collect::<Vec<_>>()
            .join("\n")
    })?;
    let mut ids = Ids(max_id(&expr));
    expand(&mut expr, &mut ids)?;
    Ok(expr)
}

/// cel-go's parser limits, at the defaults Kubernetes keeps: the size of an expression in code
/// points, and the recursion depth of the grammar's rules.
const EXPRESSION_SIZE_CODE_POINT_LIMIT: usize = 100_000;
const MAX_RECURSION_DEPTH: usize = 250;

/// An error without a location, as cel-go displays one (`ERROR: <input>:-1:0: ...`).
fn no_location_error(msg: &str) -> String {
    format!("ERROR: <input>:-1:0: {msg}")
}

/// Rejects what cel-go's parser rejects before building a tree, so no later step (cel 0.13's
/// parser and visitor, expansion, checking, cost, evaluation; all recursive) meets a tree deep
/// enough to overflow a thread's stack: a `1+1+...+1` of a few thousand terms did.
///
/// cel-go counts the depth of each grammar rule, where every operator of a left-recursive chain
/// (`a+b+c`, `a<b<c`, `a.b.c`, `a[0][1]`) and every bracket adds one level, and fails past 250
/// with `expression recursion limit exceeded: 250`. This scan counts the same operators and
/// brackets along each nesting path, over all rules at once (so it is the stricter of the two
/// only for expressions that chain hundreds of operators of different kinds); `&&`, `||` and
/// `,` separate subtrees (both parsers build logical chains as balanced trees), so operators
/// before them do not count for what follows.
fn check_limits(source: &str) -> Result<(), String> {
    let size = source.chars().count();
    if size > EXPRESSION_SIZE_CODE_POINT_LIMIT {
        return Err(no_location_error(&format!(
            "expression code point size exceeds limit: size: {size}, limit {EXPRESSION_SIZE_CODE_POINT_LIMIT}"
        )));
    }
    let exceeded = || {
        no_location_error(&format!(
            "expression recursion limit exceeded: {MAX_RECURSION_DEPTH}"
        ))
    };
    let b = source.as_bytes();
    // Per open bracket: the operators of the chain in progress (a `&&`, `||`, `,` or `:` ends
    // it: what follows is a sibling subtree) and the ternaries, which nest. `depth` is the sum
    // over open brackets, plus one per bracket.
    let mut levels: Vec<(usize, usize)> = vec![(0, 0)];
    let mut depth = 0usize;
    // Whether the last token ends an operand (so a following `-` is binary, not a negation).
    let mut operand = false;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        let mut op = false;
        match c {
            b'/' if next == Some(b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'"' | b'\'' => {
                i = skip_string(b, i, i > 0 && matches!(b[i - 1], b'r' | b'R'));
                operand = true;
                continue;
            }
            b'(' | b'[' | b'{' => {
                // A call or an index continues a member chain.
                if operand && c != b'{' {
                    op = true;
                }
                levels.push((0, 0));
                depth += 1;
                operand = false;
            }
            b')' | b']' | b'}' => {
                if levels.len() > 1
                    && let Some((chain, nest)) = levels.pop()
                {
                    depth -= 1 + chain + nest;
                }
                operand = true;
            }
            b'0'..=b'9' => {
                // A number, with its fraction and exponent (its `.` is no selection).
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'.') {
                    let sign =
                        matches!(b[i], b'e' | b'E') && matches!(b.get(i + 1), Some(b'+' | b'-'));
                    i += if sign { 2 } else { 1 };
                }
                operand = true;
                continue;
            }
            b'.' | b'+' | b'*' | b'/' | b'%' => {
                op = true;
                operand = false;
            }
            b'-' => {
                op = operand;
                operand = false;
            }
            b'<' | b'>' | b'=' | b'!' => {
                if next == Some(b'=') {
                    i += 1;
                    op = true;
                } else {
                    op = c != b'!';
                }
                operand = false;
            }
            b'?' => {
                // `a ? b : c ? ...` nests; `.?` and `[?` are one token with their bracket or dot.
                if !(i > 0 && matches!(b[i - 1], b'.' | b'[')) {
                    depth += 1;
                    if let Some(top) = levels.last_mut() {
                        top.1 += 1;
                    }
                }
                operand = false;
            }
            b'&' | b'|' | b':' | b',' => {
                if let Some(top) = levels.last_mut() {
                    depth -= top.0;
                    top.0 = 0;
                }
                operand = false;
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                let word = &b[start..i];
                if word == b"in" {
                    op = true;
                    operand = false;
                } else {
                    operand = true;
                }
                if op {
                    depth += 1;
                    if let Some(top) = levels.last_mut() {
                        top.0 += 1;
                    }
                    if depth > MAX_RECURSION_DEPTH {
                        return Err(exceeded());
                    }
                }
                continue;
            }
            _ => {}
        }
        if op {
            depth += 1;
            if let Some(top) = levels.last_mut() {
                top.0 += 1;
            }
        }
        if depth > MAX_RECURSION_DEPTH {
            return Err(exceeded());
        }
        i += 1;
    }
    Ok(())
}

/// The index after the string or bytes literal opening at `start` (single, double or triple
/// quotes; raw literals have no escapes); the end of the source when it is not closed.
fn skip_string(b: &[u8], start: usize, raw: bool) -> usize {
    let q = b[start];
    let triple = b.get(start..start + 3) == Some(&[q, q, q][..]);
    let mut i = start + if triple { 3 } else { 1 };
    while i < b.len() {
        if b[i] == b'\\' && !raw {
            i += 2;
            continue;
        }
        if triple {
            if b.get(i..i + 3) == Some(&[q, q, q][..]) {
                return i + 3;
            }
        } else if b[i] == q {
            return i + 1;
        }
        i += 1;
    }
    b.len()
}

/// A parse error as cel-go displays it. cel 0.13 places `has()` argument errors on the argument;
/// cel-go on the macro call's `(`.
fn go_parse_error(source: &str, (line, column): (isize, isize), msg: &str) -> String {
    let line = usize::try_from(line).unwrap_or(1).max(1);
    let mut col0 = usize::try_from(column).unwrap_or(1).saturating_sub(1);
    if msg == "invalid argument to has() macro"
        && let Some(text) = source.split('\n').nth(line - 1)
        && let Some(head) = text.get(..col0)
        && let Some(i) = head.rfind("has(")
    {
        col0 = i + 3;
    }
    crate::checker::display_error(source, line, col0, msg)
}

/// Fresh expression ids above every id the parser assigned.
struct Ids(u64);

impl Ids {
    fn node(&mut self, expr: Expr) -> IdedExpr {
        self.0 += 1;
        IdedExpr { id: self.0, expr }
    }
}

fn max_id(e: &IdedExpr) -> u64 {
    let mut max = e.id;
    children(e, &mut |c| max = max.max(max_id(c)));
    max
}

/// Calls `f` on every direct child of `e`.
pub(crate) fn children<'a>(e: &'a IdedExpr, f: &mut dyn FnMut(&'a IdedExpr)) {
    match &e.expr {
        Expr::Call(c) => {
            if let Some(t) = &c.target {
                f(t);
            }
            c.args.iter().for_each(f);
        }
        Expr::Comprehension(c) => {
            f(&c.iter_range);
            f(&c.accu_init);
            f(&c.loop_cond);
            f(&c.loop_step);
            f(&c.result);
        }
        Expr::List(l) => l.elements.iter().for_each(f),
        Expr::Map(m) => {
            for entry in &m.entries {
                if let EntryExpr::MapEntry(me) = &entry.expr {
                    f(&me.key);
                    f(&me.value);
                }
            }
        }
        Expr::Struct(s) => {
            for entry in &s.entries {
                if let EntryExpr::StructField(sf) = &entry.expr {
                    f(&sf.value);
                }
            }
        }
        Expr::Select(s) => f(&s.operand),
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
    }
}

/// Calls `f` on every direct child of `e`, mutably.
pub(crate) fn children_mut(e: &mut IdedExpr, f: &mut dyn FnMut(&mut IdedExpr)) {
    match &mut e.expr {
        Expr::Call(c) => {
            if let Some(t) = &mut c.target {
                f(t);
            }
            c.args.iter_mut().for_each(f);
        }
        Expr::Comprehension(c) => {
            f(&mut c.iter_range);
            f(&mut c.accu_init);
            f(&mut c.loop_cond);
            f(&mut c.loop_step);
            f(&mut c.result);
        }
        Expr::List(l) => l.elements.iter_mut().for_each(f),
        Expr::Map(m) => {
            for entry in &mut m.entries {
                if let EntryExpr::MapEntry(me) = &mut entry.expr {
                    f(&mut me.key);
                    f(&mut me.value);
                }
            }
        }
        Expr::Struct(s) => {
            for entry in &mut s.entries {
                if let EntryExpr::StructField(sf) = &mut entry.expr {
                    f(&mut sf.value);
                }
            }
        }
        Expr::Select(s) => f(&mut s.operand),
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
    }
}

fn ident_of(e: &IdedExpr, what: &str) -> Result<String, String> {
    match &e.expr {
        Expr::Ident(name) => Ok(name.clone()),
        _ => Err(format!(
            "ERROR: <input>:1:1: {what} must be a simple identifier"
        )),
    }
}

fn call(ids: &mut Ids, func: &str, args: Vec<IdedExpr>) -> IdedExpr {
    ids.node(Expr::Call(CallExpr {
        func_name: func.to_string(),
        target: None,
        args,
    }))
}

fn ident(ids: &mut Ids, name: &str) -> IdedExpr {
    ids.node(Expr::Ident(name.to_string()))
}

fn boolean(ids: &mut Ids, b: bool) -> IdedExpr {
    ids.node(Expr::Literal(LiteralValue::Boolean(b.into())))
}

/// Expands macros bottom-up.
fn expand(e: &mut IdedExpr, ids: &mut Ids) -> Result<(), String> {
    let mut result = Ok(());
    children_mut(e, &mut |c| {
        if result.is_ok() {
            result = expand(c, ids);
        }
    });
    result?;
    let Expr::Call(c) = &mut e.expr else {
        return Ok(());
    };
    let Some(target) = c.target.as_deref() else {
        return Ok(());
    };
    let _ = target;
    let expansion = match (c.func_name.as_str(), c.args.len()) {
        (
            "all" | "exists" | "existsOne" | "exists_one" | "transformList" | "transformMap"
            | "transformMapEntry",
            3,
        )
        | ("transformList" | "transformMap", 4) => {
            let func = c.func_name.clone();
            let i = ident_of(&c.args[0], &format!("{func}() first variable name"))?;
            let v = ident_of(&c.args[1], &format!("{func}() second variable name"))?;
            let Some(range) = c.target.take() else {
                return Ok(());
            };
            let mut rest = std::mem::take(&mut c.args).into_iter().skip(2);
            let (first, second) = (rest.next(), rest.next());
            let Some(first) = first else {
                return Ok(());
            };
            two_var(ids, &func, *range, i, v, first, second)
        }
        _ => return Ok(()),
    };
    e.expr = Expr::Comprehension(Box::new(expansion));
    Ok(())
}

/// The comprehension cel-go's `ext.TwoVarComprehensions` builds for `range.func(i, v, ...)`.
fn two_var(
    ids: &mut Ids,
    func: &str,
    range: IdedExpr,
    i: String,
    v: String,
    first: IdedExpr,
    second: Option<IdedExpr>,
) -> ComprehensionExpr {
    let accu = |ids: &mut Ids| ident(ids, ACCU);
    let (init, cond, step) = match func {
        "all" => {
            let init = boolean(ids, true);
            let a = accu(ids);
            let cond = call(ids, "@not_strictly_false", vec![a]);
            let a = accu(ids);
            let step = call(ids, "_&&_", vec![a, first]);
            (init, cond, step)
        }
        "exists" => {
            let init = boolean(ids, false);
            let a = accu(ids);
            let not = call(ids, "!_", vec![a]);
            let cond = call(ids, "@not_strictly_false", vec![not]);
            let a = accu(ids);
            let step = call(ids, "_||_", vec![a, first]);
            (init, cond, step)
        }
        "existsOne" | "exists_one" => {
            let init = ids.node(Expr::Literal(LiteralValue::Int(0.into())));
            let cond = boolean(ids, true);
            let a = accu(ids);
            let one = ids.node(Expr::Literal(LiteralValue::Int(1.into())));
            let plus = call(ids, "_+_", vec![a, one]);
            let a = accu(ids);
            let step = call(ids, "_?_:_", vec![first, plus, a]);
            (init, cond, step)
        }
        "transformList" => {
            let init = ids.node(Expr::List(ListExpr::new(Vec::new())));
            let cond = boolean(ids, true);
            let (filter, value) = match second {
                Some(value) => (Some(first), value),
                None => (None, first),
            };
            let a = accu(ids);
            let one = ids.node(Expr::List(ListExpr::new(vec![value])));
            let append = call(ids, "_+_", vec![a, one]);
            let step = match filter {
                Some(f) => {
                    let a = accu(ids);
                    call(ids, "_?_:_", vec![f, append, a])
                }
                None => append,
            };
            (init, cond, step)
        }
        _ => {
            // transformMap(k, v, [filter,] value) and transformMapEntry(k, v, entry).
            let init = ids.node(Expr::Map(MapExpr::default()));
            let cond = boolean(ids, true);
            let (filter, args) = match (func, second) {
                ("transformMapEntry", _) => {
                    let a = accu(ids);
                    (None, vec![a, first])
                }
                (_, Some(value)) => {
                    let a = accu(ids);
                    let k = ident(ids, &i);
                    (Some(first), vec![a, k, value])
                }
                (_, None) => {
                    let a = accu(ids);
                    let k = ident(ids, &i);
                    (None, vec![a, k, first])
                }
            };
            let insert = call(ids, MAP_INSERT, args);
            let step = match filter {
                Some(f) => {
                    let a = accu(ids);
                    call(ids, "_?_:_", vec![f, insert, a])
                }
                None => insert,
            };
            (init, cond, step)
        }
    };
    let result = if matches!(func, "existsOne" | "exists_one") {
        let a = accu(ids);
        let one = ids.node(Expr::Literal(LiteralValue::Int(1.into())));
        call(ids, "_==_", vec![a, one])
    } else {
        accu(ids)
    };
    ComprehensionExpr {
        iter_range: range,
        iter_var: i,
        iter_var2: Some(v),
        accu_var: ACCU.into(),
        accu_init: init,
        loop_cond: cond,
        loop_step: step,
        result,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(e: &IdedExpr) -> String {
        match &e.expr {
            Expr::Comprehension(c) => format!(
                "fold({}, {}{}, {}={}, {}, {}, {})",
                shape(&c.iter_range),
                c.iter_var,
                c.iter_var2
                    .as_ref()
                    .map(|v| format!(",{v}"))
                    .unwrap_or_default(),
                c.accu_var,
                shape(&c.accu_init),
                shape(&c.loop_cond),
                shape(&c.loop_step),
                shape(&c.result)
            ),
            Expr::Call(c) => format!(
                "{}{}({})",
                c.target
                    .as_ref()
                    .map(|t| format!("{}.", shape(t)))
                    .unwrap_or_default(),
                c.func_name,
                c.args.iter().map(shape).collect::<Vec<_>>().join(", ")
            ),
            Expr::Ident(n) => n.clone(),
            Expr::Literal(LiteralValue::Boolean(b)) => format!("{}", *b.inner()),
            Expr::Literal(LiteralValue::Int(i)) => format!("{}", *i.inner()),
            Expr::List(l) => format!(
                "[{}]",
                l.elements.iter().map(shape).collect::<Vec<_>>().join(", ")
            ),
            Expr::Map(_) => "{}".into(),
            Expr::Select(s) => format!("{}.{}", shape(&s.operand), s.field),
            other => format!("{other:?}"),
        }
    }

    #[test]
    fn macros_expand_as_cel_go_expands_them() {
        let cases = [
            (
                "self.l.all(i, v, v > i)",
                "fold(self.l, i,v, @result=true, @not_strictly_false(@result), _&&_(@result, _>_(v, i)), @result)",
            ),
            (
                "self.m.exists(k, v, v == k)",
                "fold(self.m, k,v, @result=false, @not_strictly_false(!_(@result)), _||_(@result, _==_(v, k)), @result)",
            ),
            (
                "self.l.existsOne(i, v, v == 1)",
                "fold(self.l, i,v, @result=0, true, _?_:_(_==_(v, 1), _+_(@result, 1), @result), _==_(@result, 1))",
            ),
            (
                "self.l.transformList(i, v, i > 0, v)",
                "fold(self.l, i,v, @result=[], true, _?_:_(_>_(i, 0), _+_(@result, [v]), @result), @result)",
            ),
            (
                "self.m.transformMap(k, v, v + 1)",
                "fold(self.m, k,v, @result={}, true, cel.@mapInsert(@result, k, _+_(v, 1)), @result)",
            ),
            (
                "self.m.transformMapEntry(k, v, {v: k})",
                "fold(self.m, k,v, @result={}, true, cel.@mapInsert(@result, {}), @result)",
            ),
            // Untouched: one-variable macros are the parser's own, and plain calls stay calls.
            ("self.l.size() > 0", "_>_(self.l.size(), 0)"),
        ];
        for (src, want) in cases {
            let got = parse(src).map(|e| shape(&e));
            assert_eq!(got.as_deref(), Ok(want), "{src}");
        }
    }

    #[test]
    fn optional_syntax_parses_and_errors_keep_the_parser_text() {
        assert!(parse("self.?a.orValue(1) == 1").is_ok());
        assert!(parse("self.m[?'k'].hasValue()").is_ok());
        let err = parse("self.a >").unwrap_err();
        assert!(err.starts_with("ERROR: <input>:1:"), "{err}");
        let err = parse("self.l.all(1, v, true)").unwrap_err();
        assert!(err.contains("must be a simple identifier"), "{err}");
    }
}
