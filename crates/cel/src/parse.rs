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
    let mut expr = Parser::new()
        .enable_optional_syntax(true)
        .parse(source)
        .map_err(|errs| {
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
