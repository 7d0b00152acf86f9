//! Source positions for expression ids. cel 0.13's parser keeps them only for parse errors, so
//! the source is read again by a small parser of the same grammar (CEL's `CEL.g4`, with cel
//! 0.13's choices: balanced `&&`/`||` trees, one `!_`/`-_` per run of operators, `-1` as a
//! literal), giving each node the offset cel-go would record (the operator token for operators,
//! `(` for calls, `.` for selections, `[`/`{` for literals and indexing). That tree is then
//! matched against the parsed one; nodes produced by macro expansion take the macro call's
//! position, as in cel-go.

use std::collections::HashMap;

use kube_cel::cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue};

/// 1-based line and 0-based column (in characters) of a byte offset.
pub(super) fn line_col(source: &str, offset: usize) -> (usize, usize) {
    let mut line = 1;
    let mut line_start = 0;
    for (i, c) in source.char_indices() {
        if i >= offset {
            break;
        }
        if c == '\n' {
            line += 1;
            line_start = i + 1;
        }
    }
    let col = source
        .get(line_start..offset.min(source.len()))
        .map_or(0, |s| s.chars().count());
    (line, col)
}

/// Byte offset of every expression id of `expr` that could be placed in `source`.
pub(super) fn offsets(expr: &IdedExpr, source: &str) -> HashMap<u64, usize> {
    let tokens = lex(source);
    let mut p = Parser { tokens, pos: 0 };
    let mut out = HashMap::new();
    if let Some(shadow) = p.expr(0) {
        assign(expr, &shadow, &mut out);
    }
    out
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    /// A literal: `i` int, `u` uint, `d` double, `s` string, `b` bytes, `t`/`f` bools, `n` null.
    Lit(char),
    Punct(&'static str),
}

const PUNCTS: [&str; 24] = [
    "==", "!=", "<=", ">=", "&&", "||", "<", ">", "!", "+", "-", "*", "/", "%", "?", ":", ".", ",",
    "(", ")", "[", "]", "{", "}",
];

fn lex(src: &str) -> Vec<(Tok, usize)> {
    let bs = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bs.len() {
        let ch = bs[i];
        if ch.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if ch == b'/' && bs.get(i + 1) == Some(&b'/') {
            while i < bs.len() && bs[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        let start = i;
        // String and bytes literals, with r/b prefixes.
        let mut after = i;
        let mut raw = false;
        let mut bytes = false;
        while after < bs.len() && after - i < 2 && matches!(bs[after], b'r' | b'R' | b'b' | b'B') {
            if matches!(bs[after], b'r' | b'R') {
                raw = true;
            } else {
                bytes = true;
            }
            after += 1;
        }
        if after < bs.len() && (bs[after] == b'"' || bs[after] == b'\'') {
            let quote = bs[after];
            let triple = bs.get(after + 1) == Some(&quote) && bs.get(after + 2) == Some(&quote);
            let mut end = if triple { after + 3 } else { after + 1 };
            loop {
                if end >= bs.len() {
                    break;
                }
                if bs[end] == b'\\' && !raw {
                    end += 2;
                    continue;
                }
                if bs[end] == quote {
                    if !triple {
                        end += 1;
                        break;
                    }
                    if bs.get(end + 1) == Some(&quote) && bs.get(end + 2) == Some(&quote) {
                        end += 3;
                        break;
                    }
                }
                end += 1;
            }
            out.push((Tok::Lit(if bytes { 'b' } else { 's' }), start));
            i = end;
            continue;
        }
        if ch.is_ascii_alphabetic() || ch == b'_' {
            while i < bs.len() && (bs[i].is_ascii_alphanumeric() || bs[i] == b'_') {
                i += 1;
            }
            let word = &src[start..i];
            let tok = match word {
                "true" => Tok::Lit('t'),
                "false" => Tok::Lit('f'),
                "null" => Tok::Lit('n'),
                _ => Tok::Ident(word.to_string()),
            };
            out.push((tok, start));
            continue;
        }
        if ch.is_ascii_digit() || (ch == b'.' && bs.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            let mut kind = 'i';
            if ch == b'0' && matches!(bs.get(i + 1), Some(b'x' | b'X')) {
                i += 2;
                while i < bs.len() && bs[i].is_ascii_hexdigit() {
                    i += 1;
                }
            } else {
                while i < bs.len() && bs[i].is_ascii_digit() {
                    i += 1;
                }
                if i < bs.len() && bs[i] == b'.' && bs.get(i + 1).is_some_and(u8::is_ascii_digit) {
                    kind = 'd';
                    i += 1;
                    while i < bs.len() && bs[i].is_ascii_digit() {
                        i += 1;
                    }
                }
                if i < bs.len() && matches!(bs[i], b'e' | b'E') {
                    let mut end = i + 1;
                    if end < bs.len() && matches!(bs[end], b'+' | b'-') {
                        end += 1;
                    }
                    if end < bs.len() && bs[end].is_ascii_digit() {
                        kind = 'd';
                        i = end;
                        while i < bs.len() && bs[i].is_ascii_digit() {
                            i += 1;
                        }
                    }
                }
            }
            if kind == 'i' && i < bs.len() && matches!(bs[i], b'u' | b'U') {
                kind = 'u';
                i += 1;
            }
            out.push((Tok::Lit(kind), start));
            continue;
        }
        if let Some(punct) = PUNCTS
            .iter()
            .find(|punct| src.get(i..).is_some_and(|rest| rest.starts_with(**punct)))
        {
            out.push((Tok::Punct(punct), start));
            i += punct.len();
            continue;
        }
        // Unknown character: skip it (the parser accepted the source, so this is rare).
        i += src
            .get(i..)
            .and_then(|rest| rest.chars().next())
            .map_or(1, char::len_utf8);
    }
    out
}

/// A node of the re-read source, shaped like cel 0.13's (unexpanded) AST.
#[derive(Debug)]
enum Kind {
    Lit(char),
    Ident(String),
    Select(String),
    /// A call: function name and whether the first child is a receiver.
    Call(String, bool),
    List,
    /// Map literal; children alternate key, value.
    Map,
    Other,
}

#[derive(Debug)]
struct Node {
    kind: Kind,
    pos: usize,
    kids: Vec<Node>,
}

fn node(kind: Kind, pos: usize, kids: Vec<Node>) -> Node {
    Node { kind, pos, kids }
}

struct Parser {
    tokens: Vec<(Tok, usize)>,
    pos: usize,
}

const MAX_DEPTH: usize = 250;

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.tokens.get(self.pos).map(|(t, _)| t)
    }
    fn offset(&self) -> usize {
        self.tokens.get(self.pos).map_or(0, |(_, o)| *o)
    }
    fn is(&self, p: &str) -> bool {
        matches!(self.peek(), Some(Tok::Punct(q)) if *q == p)
    }
    fn eat(&mut self, p: &str) -> Option<usize> {
        if self.is(p) {
            let o = self.offset();
            self.pos += 1;
            Some(o)
        } else {
            None
        }
    }

    fn expr(&mut self, depth: usize) -> Option<Node> {
        if depth > MAX_DEPTH {
            return None;
        }
        let cond = self.logic(depth, "||", "_||_")?;
        if let Some(q) = self.eat("?") {
            let a = self.logic(depth, "||", "_||_")?;
            self.eat(":")?;
            let b = self.expr(depth + 1)?;
            return Some(node(Kind::Call("_?_:_".into(), false), q, vec![cond, a, b]));
        }
        Some(cond)
    }

    /// `&&`/`||` chains, balanced as cel 0.13's `LogicManager` builds them.
    fn logic(&mut self, depth: usize, op: &str, name: &str) -> Option<Node> {
        let sub = |p: &mut Parser| {
            if op == "||" {
                p.logic(depth, "&&", "_&&_")
            } else {
                p.relation(depth)
            }
        };
        let first = sub(self)?;
        let mut terms = vec![first];
        let mut ops = Vec::new();
        while let Some(o) = self.eat(op) {
            terms.push(sub(self)?);
            ops.push(o);
        }
        if ops.is_empty() {
            return terms.pop();
        }
        let mut slots: Vec<Option<Node>> = terms.into_iter().map(Some).collect();
        balanced(&mut slots, &ops, name, 0, ops.len() - 1)
    }

    fn relation(&mut self, depth: usize) -> Option<Node> {
        let mut lhs = self.calc(depth, 0)?;
        loop {
            let name = match self.peek() {
                Some(Tok::Punct("<")) => "_<_",
                Some(Tok::Punct("<=")) => "_<=_",
                Some(Tok::Punct(">")) => "_>_",
                Some(Tok::Punct(">=")) => "_>=_",
                Some(Tok::Punct("==")) => "_==_",
                Some(Tok::Punct("!=")) => "_!=_",
                Some(Tok::Ident(w)) if w == "in" => "@in",
                _ => return Some(lhs),
            };
            let o = self.offset();
            self.pos += 1;
            let rhs = self.calc(depth, 0)?;
            lhs = node(Kind::Call(name.into(), false), o, vec![lhs, rhs]);
        }
    }

    /// Level 0: `+ -`; level 1: `* / %`.
    fn calc(&mut self, depth: usize, level: u8) -> Option<Node> {
        let mut lhs = if level == 0 {
            self.calc(depth, 1)?
        } else {
            self.unary(depth)?
        };
        loop {
            let name = match (level, self.peek()) {
                (0, Some(Tok::Punct("+"))) => "_+_",
                (0, Some(Tok::Punct("-"))) => "_-_",
                (1, Some(Tok::Punct("*"))) => "_*_",
                (1, Some(Tok::Punct("/"))) => "_/_",
                (1, Some(Tok::Punct("%"))) => "_%_",
                _ => return Some(lhs),
            };
            let o = self.offset();
            self.pos += 1;
            let rhs = if level == 0 {
                self.calc(depth, 1)?
            } else {
                self.unary(depth)?
            };
            lhs = node(Kind::Call(name.into(), false), o, vec![lhs, rhs]);
        }
    }

    fn unary(&mut self, depth: usize) -> Option<Node> {
        for (op, name) in [("!", "!_"), ("-", "-_")] {
            if !self.is(op) {
                continue;
            }
            let first = self.offset();
            let mut count = 0;
            while self.is(op) {
                self.pos += 1;
                count += 1;
            }
            if op == "-" && count == 1 && matches!(self.peek(), Some(Tok::Lit('i' | 'd'))) {
                // `-1` is an int literal with its sign.
                let member = self.member(depth)?;
                if let Kind::Lit(k) = member.kind
                    && member.kids.is_empty()
                {
                    return Some(node(Kind::Lit(k), first, vec![]));
                }
                return Some(node(Kind::Call(name.into(), false), first, vec![member]));
            }
            let member = self.member(depth)?;
            return Some(node(Kind::Call(name.into(), false), first, vec![member]));
        }
        self.member(depth)
    }

    fn member(&mut self, depth: usize) -> Option<Node> {
        let mut e = self.primary(depth)?;
        loop {
            if let Some(dot) = self.eat(".") {
                let optional = self.eat("?").is_some();
                let Some(Tok::Ident(field)) = self.peek().cloned() else {
                    return None;
                };
                self.pos += 1;
                if optional {
                    let lit = node(Kind::Lit('s'), dot, vec![]);
                    e = node(Kind::Call("_?._".into(), false), dot, vec![e, lit]);
                } else if let Some(open) = self.eat("(") {
                    let mut kids = vec![e];
                    kids.extend(self.args(depth, ")")?);
                    e = node(Kind::Call(field, true), open, kids);
                } else {
                    e = node(Kind::Select(field), dot, vec![e]);
                }
            } else if let Some(open) = self.eat("[") {
                let optional = self.eat("?").is_some();
                let index = self.expr(depth + 1)?;
                self.eat("]")?;
                let name = if optional { "_[?_]" } else { "_[_]" };
                e = node(Kind::Call(name.into(), false), open, vec![e, index]);
            } else if self.is("{") && matches!(e.kind, Kind::Ident(_) | Kind::Select(_)) {
                let open = self.offset();
                self.skip_balanced("{", "}");
                e = node(Kind::Other, open, vec![]);
            } else {
                return Some(e);
            }
        }
    }

    fn skip_balanced(&mut self, open: &str, close: &str) {
        let mut level = 0usize;
        while let Some(t) = self.peek() {
            if matches!(t, Tok::Punct(p) if *p == open) {
                level += 1;
            } else if matches!(t, Tok::Punct(p) if *p == close) {
                level = level.saturating_sub(1);
                if level == 0 {
                    self.pos += 1;
                    return;
                }
            }
            self.pos += 1;
        }
    }

    /// Comma-separated expressions up to `close` (consumed); `?` markers are skipped.
    fn args(&mut self, depth: usize, close: &str) -> Option<Vec<Node>> {
        let mut out = Vec::new();
        if self.eat(close).is_some() {
            return Some(out);
        }
        loop {
            self.eat("?");
            out.push(self.expr(depth + 1)?);
            if self.eat(",").is_some() {
                if self.eat(close).is_some() {
                    return Some(out);
                }
                continue;
            }
            self.eat(close)?;
            return Some(out);
        }
    }

    fn primary(&mut self, depth: usize) -> Option<Node> {
        let o = self.offset();
        match self.peek()?.clone() {
            Tok::Lit(k) => {
                self.pos += 1;
                Some(node(Kind::Lit(k), o, vec![]))
            }
            Tok::Ident(name) => {
                self.pos += 1;
                if let Some(open) = self.eat("(") {
                    let kids = self.args(depth, ")")?;
                    return Some(node(Kind::Call(name, false), open, kids));
                }
                Some(node(Kind::Ident(name), o, vec![]))
            }
            Tok::Punct(".") => {
                self.pos += 1;
                let Some(Tok::Ident(name)) = self.peek().cloned() else {
                    return None;
                };
                let name = format!(".{name}");
                let at = self.offset();
                self.pos += 1;
                if let Some(open) = self.eat("(") {
                    let kids = self.args(depth, ")")?;
                    return Some(node(Kind::Call(name, false), open, kids));
                }
                Some(node(Kind::Ident(name), at, vec![]))
            }
            Tok::Punct("(") => {
                self.pos += 1;
                let e = self.expr(depth + 1)?;
                self.eat(")")?;
                Some(e)
            }
            Tok::Punct("[") => {
                self.pos += 1;
                let kids = self.args(depth, "]")?;
                Some(node(Kind::List, o, kids))
            }
            Tok::Punct("{") => {
                self.pos += 1;
                let mut kids = Vec::new();
                if self.eat("}").is_none() {
                    loop {
                        self.eat("?");
                        kids.push(self.expr(depth + 1)?);
                        self.eat(":")?;
                        kids.push(self.expr(depth + 1)?);
                        if self.eat(",").is_some() {
                            if self.eat("}").is_some() {
                                break;
                            }
                            continue;
                        }
                        self.eat("}")?;
                        break;
                    }
                }
                Some(node(Kind::Map, o, kids))
            }
            Tok::Punct(_) => None,
        }
    }
}

fn balanced(
    terms: &mut [Option<Node>],
    ops: &[usize],
    name: &str,
    lo: usize,
    hi: usize,
) -> Option<Node> {
    let mid = (lo + hi).div_ceil(2);
    let left = if mid == lo {
        terms.get_mut(mid)?.take()?
    } else {
        balanced(terms, ops, name, lo, mid - 1)?
    };
    let right = if mid == hi {
        terms.get_mut(mid + 1)?.take()?
    } else {
        balanced(terms, ops, name, mid + 1, hi)?
    };
    Some(node(
        Kind::Call(name.into(), false),
        *ops.get(mid)?,
        vec![left, right],
    ))
}

fn lit_kind(l: &LiteralValue) -> char {
    match l {
        LiteralValue::Boolean(b) => {
            if **b {
                't'
            } else {
                'f'
            }
        }
        LiteralValue::Bytes(_) => 'b',
        LiteralValue::Double(_) => 'd',
        LiteralValue::Int(_) => 'i',
        LiteralValue::Null => 'n',
        LiteralValue::String(_) => 's',
        LiteralValue::UInt(_) => 'u',
    }
}

/// Whether a parsed node has the shape of a re-read one (used to find macro arguments inside
/// their expansion).
fn same(e: &IdedExpr, s: &Node) -> bool {
    match (&e.expr, &s.kind) {
        (Expr::Literal(l), Kind::Lit(k)) => lit_kind(l) == *k,
        (Expr::Ident(a), Kind::Ident(b)) => a == b,
        (Expr::Select(sel), Kind::Select(f)) => {
            !sel.test && sel.field == *f && s.kids.first().is_some_and(|k| same(&sel.operand, k))
        }
        (Expr::Select(sel), Kind::Call(name, false)) if sel.test && name == "has" => s
            .kids
            .first()
            .and_then(|k| k.kids.first())
            .is_some_and(|k| same(&sel.operand, k)),
        (Expr::Call(c), Kind::Call(name, member)) => {
            c.func_name == *name
                && c.target.is_some() == *member
                && c.target.iter().map(|t| &**t).chain(&c.args).count() == s.kids.len()
                && c.target
                    .iter()
                    .map(|t| &**t)
                    .chain(&c.args)
                    .zip(&s.kids)
                    .all(|(a, b)| same(a, b))
        }
        (Expr::Comprehension(c), Kind::Call(_, member)) => {
            !*member || s.kids.first().is_some_and(|k| same(&c.iter_range, k))
        }
        (Expr::List(l), Kind::List) => {
            l.elements.len() == s.kids.len()
                && l.elements.iter().zip(&s.kids).all(|(a, b)| same(a, b))
        }
        (Expr::Map(m), Kind::Map) => m.entries.len() * 2 == s.kids.len(),
        _ => false,
    }
}

fn assign_all(e: &IdedExpr, pos: usize, out: &mut HashMap<u64, usize>) {
    out.entry(e.id).or_insert(pos);
    for c in children(e) {
        assign_all(c, pos, out);
    }
}

/// The direct sub-expressions of an expression, in source-like order.
pub(super) fn children(e: &IdedExpr) -> Vec<&IdedExpr> {
    match &e.expr {
        Expr::Call(c) => c.target.iter().map(|t| &**t).chain(&c.args).collect(),
        Expr::Select(s) => vec![&*s.operand],
        Expr::List(l) => l.elements.iter().collect(),
        Expr::Map(m) => m
            .entries
            .iter()
            .flat_map(|entry| match &entry.expr {
                EntryExpr::MapEntry(me) => vec![&me.key, &me.value],
                EntryExpr::StructField(_) => vec![],
            })
            .collect(),
        Expr::Struct(s) => s
            .entries
            .iter()
            .filter_map(|entry| match &entry.expr {
                EntryExpr::StructField(sf) => Some(&sf.value),
                EntryExpr::MapEntry(_) => None,
            })
            .collect(),
        Expr::Comprehension(c) => vec![
            &c.iter_range,
            &c.accu_init,
            &c.loop_cond,
            &c.loop_step,
            &c.result,
        ],
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => vec![],
    }
}

/// Pre-order search for the first not-yet-placed node shaped like `s`.
fn find<'e>(e: &'e IdedExpr, s: &Node, out: &HashMap<u64, usize>) -> Option<&'e IdedExpr> {
    if !out.contains_key(&e.id) && same(e, s) {
        return Some(e);
    }
    children(e).into_iter().find_map(|c| find(c, s, out))
}

fn assign(e: &IdedExpr, s: &Node, out: &mut HashMap<u64, usize>) {
    match (&e.expr, &s.kind) {
        (Expr::Select(sel), Kind::Call(name, false)) if sel.test && name == "has" => {
            out.insert(e.id, s.pos);
            if let Some(inner) = s.kids.first().and_then(|k| k.kids.first()) {
                assign(&sel.operand, inner, out);
            }
        }
        (Expr::Comprehension(c), Kind::Call(_, member)) => {
            out.insert(e.id, s.pos);
            let mut args = s.kids.iter();
            if *member
                && let Some(t) = args.next()
                && same(&c.iter_range, t)
            {
                assign(&c.iter_range, t, out);
            }
            // The leading arguments name the variables (one, or two for two-variable forms).
            let n_vars = if c.iter_var2.is_some() { 2 } else { 1 };
            for (i, arg) in args.enumerate() {
                if i < n_vars && matches!(arg.kind, Kind::Ident(_)) {
                    continue;
                }
                let parts = [
                    &c.accu_init,
                    &c.loop_cond,
                    &c.loop_step,
                    &c.result,
                    &c.iter_range,
                ];
                if let Some(hit) = parts.iter().find_map(|p| find(p, arg, out)) {
                    assign(hit, arg, out);
                }
            }
            assign_all(e, s.pos, out);
        }
        (Expr::Call(c), Kind::Call(_, _)) => {
            out.insert(e.id, s.pos);
            let kids = c.target.iter().map(|t| &**t).chain(&c.args);
            for (k, sk) in kids.zip(&s.kids) {
                assign(k, sk, out);
            }
        }
        (Expr::Select(sel), Kind::Select(_)) => {
            out.insert(e.id, s.pos);
            if let Some(k) = s.kids.first() {
                assign(&sel.operand, k, out);
            }
        }
        (Expr::List(l), Kind::List) => {
            out.insert(e.id, s.pos);
            for (k, sk) in l.elements.iter().zip(&s.kids) {
                assign(k, sk, out);
            }
        }
        (Expr::Map(m), Kind::Map) => {
            out.insert(e.id, s.pos);
            let mut kids = s.kids.iter();
            for entry in &m.entries {
                if let EntryExpr::MapEntry(me) = &entry.expr {
                    if let Some(k) = kids.next() {
                        assign(&me.key, k, out);
                    }
                    if let Some(v) = kids.next() {
                        assign(&me.value, v, out);
                    }
                }
            }
        }
        _ => assign_all(e, s.pos, out),
    }
}
