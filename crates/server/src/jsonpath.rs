//! The `JSONPath` of client-go (`k8s.io/client-go/util/jsonpath`), the dialect of printer columns:
//! kube-apiserver evaluates every `additionalPrinterColumns[].jsonPath` with it
//! (`{<path>}`, missing keys allowed) and shows the first result. Its syntax is Kubernetes' own,
//! not RFC 9535: escaped dots in field names (`.metadata.annotations.example\.com/x`), filters
//! as `[?(@.type=="Ready")]`, slices with negative bounds, unions, wildcards and recursive
//! descent; so no `JSONPath` crate fits and the parser and evaluator follow upstream's, quirks
//! included (a dict key `['a.b']` is re-read as `.a.b`; `[]` is `[0]`; a slice that selects
//! nothing from one input ends the step).
//!
//! Main items: [`JsonPath::parse`], [`JsonPath::first`], [`go_text`].
//!
//! Architecture Invariant: evaluation is pure and total: any path over any object gives results
//! or an error (an empty cell), never a panic.

use std::borrow::Cow;

use serde_json::Value;

/// A parsed path: the first action of the template `{<path>}`.
#[derive(Clone, Debug, PartialEq)]
pub struct JsonPath {
    nodes: Vec<Node>,
}

#[derive(Clone, Debug, PartialEq)]
enum Node {
    Field(String),
    Wildcard,
    Recursive,
    Slice([Param; 3]),
    Union(Vec<Vec<Node>>),
    Filter {
        left: Vec<Node>,
        op: String,
        right: Vec<Node>,
    },
    Text(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    Identifier(String),
}

/// One bound of a slice (upstream's `ParamsEntry`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Param {
    value: i64,
    known: bool,
    /// The end of `[N]`, derived as `N + 1`.
    derived: bool,
}

type Found<'a> = Cow<'a, Value>;

impl JsonPath {
    /// Parses a column path as kube-apiserver does: the template `{<path>}`. `Err` carries
    /// upstream's parse error.
    pub fn parse(path: &str) -> Result<Self, String> {
        Self::parse_nested(path, 0)
    }

    fn parse_nested(path: &str, depth: usize) -> Result<Self, String> {
        if depth > MAX_NESTING {
            return Err("jsonpath nesting too deep".into());
        }
        let text = format!("{{{path}}}");
        let mut p = Parser::new(&text, depth);
        let mut first = None;
        // Upstream parses the whole template (text between actions included) and fails if any
        // action fails; a column uses the first element.
        while let Some(i) = p.rest().find('{') {
            if i > 0 && first.is_none() {
                first = Some(vec![Node::Text(p.rest()[..i].to_owned())]);
            }
            p.pos += i + 1;
            p.start = p.pos;
            let nodes = p.inside_action()?;
            first.get_or_insert(nodes);
        }
        if !p.rest().is_empty() && first.is_none() {
            first = Some(vec![Node::Text(p.rest().to_owned())]);
        }
        Ok(JsonPath {
            nodes: first.unwrap_or_default(),
        })
    }

    /// Every result of the path over `obj`, in upstream's order (object members in key order,
    /// where Go's order is random). `Err` carries upstream's evaluation error.
    pub fn find<'a>(&self, obj: &'a Value) -> Result<Vec<Found<'a>>, String> {
        eval_list(&self.nodes, vec![Cow::Borrowed(obj)])
    }

    /// The first result, as a printer column shows it; `None` when there is none or the path
    /// fails on this object.
    pub fn first<'a>(&self, obj: &'a Value) -> Option<Found<'a>> {
        self.find(obj).ok()?.into_iter().next()
    }
}

struct Parser<'s> {
    input: &'s str,
    pos: usize,
    start: usize,
    /// How many filters and unions enclose this text.
    depth: usize,
}

const EOF: char = '\0';

/// Filters and unions nest their own paths; deeper than this is refused rather than allowed to
/// exhaust the stack.
const MAX_NESTING: usize = 32;

/// At most this many values in flight: recursive descent over recursive descent multiplies
/// them, and a path is refused rather than allowed to exhaust memory.
const MAX_RESULTS: usize = 1 << 20;

impl<'s> Parser<'s> {
    fn new(input: &'s str, depth: usize) -> Self {
        Parser {
            input,
            pos: 0,
            start: 0,
            depth,
        }
    }

    fn rest(&self) -> &'s str {
        &self.input[self.pos..]
    }

    fn next(&mut self) -> char {
        match self.rest().chars().next() {
            Some(c) => {
                self.pos += c.len_utf8();
                c
            }
            None => EOF,
        }
    }

    fn peek(&self) -> char {
        self.rest().chars().next().unwrap_or(EOF)
    }

    fn backup(&mut self, c: char) {
        if c != EOF {
            self.pos -= c.len_utf8();
        }
    }

    fn consume(&mut self) -> &'s str {
        let text = &self.input[self.start..self.pos];
        self.start = self.pos;
        text
    }

    /// Upstream's `parseInsideAction`, as a loop: the nodes up to the closing `}`.
    fn inside_action(&mut self) -> Result<Vec<Node>, String> {
        let mut nodes = Vec::new();
        loop {
            let rest = self.rest();
            if rest.starts_with('}') {
                self.pos += 1;
                self.consume();
                return Ok(nodes);
            }
            if rest.starts_with("[?(") {
                nodes.push(self.filter()?);
                continue;
            }
            if rest.starts_with("..") {
                if nodes.last() == Some(&Node::Recursive) {
                    return Err("invalid multiple recursive descent".into());
                }
                self.pos += 2;
                self.consume();
                nodes.push(Node::Recursive);
                if is_alphanumeric(self.peek()) {
                    nodes.push(self.field());
                }
                continue;
            }
            match self.next() {
                EOF | '\r' | '\n' => return Err("unclosed action".into()),
                ' ' | '@' | '$' => {
                    self.consume();
                }
                '[' => nodes.push(self.array()?),
                q @ ('"' | '\'') => nodes.push(self.quote(q)?),
                '.' => nodes.push(self.field()),
                c if c == '+' || c == '-' || c.is_ascii_digit() => {
                    self.backup(c);
                    nodes.push(self.number()?);
                }
                c if is_alphanumeric(c) => {
                    self.backup(c);
                    nodes.push(self.identifier());
                }
                c => {
                    return Err(format!(
                        "unrecognized character in action: U+{:04X} '{c}'",
                        c as u32
                    ));
                }
            }
        }
    }

    fn field(&mut self) -> Node {
        self.consume();
        loop {
            let c = self.next();
            if c == '\\' {
                self.next();
            } else if is_terminator(c) {
                self.backup(c);
                break;
            }
        }
        match self.consume() {
            "*" => Node::Wildcard,
            name => Node::Field(name.replace('\\', "")),
        }
    }

    fn identifier(&mut self) -> Node {
        loop {
            let c = self.next();
            if is_terminator(c) {
                self.backup(c);
                break;
            }
        }
        match self.consume() {
            "true" => Node::Bool(true),
            "false" => Node::Bool(false),
            name => Node::Identifier(name.to_owned()),
        }
    }

    fn number(&mut self) -> Result<Node, String> {
        if matches!(self.peek(), '+' | '-') {
            self.next();
        }
        loop {
            let c = self.next();
            if c != '.' && !c.is_ascii_digit() {
                self.backup(c);
                break;
            }
        }
        let text = self.consume();
        if let Some(i) = go_atoi(text) {
            return Ok(Node::Int(i));
        }
        text.parse::<f64>()
            .ok()
            .filter(|_| !text.is_empty() && text != "+" && text != "-")
            .map(Node::Float)
            .ok_or_else(|| format!("cannot parse number {text}"))
    }

    fn quote(&mut self, end: char) -> Result<Node, String> {
        loop {
            match self.next() {
                EOF | '\n' => return Err("unterminated quoted string".into()),
                c if c == end && self.input.as_bytes()[self.pos - 2] != b'\\' => break,
                _ => {}
            }
        }
        let text = self.consume();
        unquote(text)
            .map(Node::Text)
            .ok_or_else(|| format!("unquote string {text} error invalid syntax"))
    }

    fn array(&mut self) -> Result<Node, String> {
        loop {
            match self.next() {
                EOF | '\n' => return Err("unterminated array".into()),
                ']' => break,
                _ => {}
            }
        }
        let text = self.consume();
        let mut text = &text[1..text.len() - 1];
        if text == "*" {
            text = ":";
        }
        let parts: Vec<&str> = text.split(',').collect();
        if parts.len() > 1 {
            let lists = parts
                .iter()
                .map(|part| parse_action(&format!("[{}]", part.trim_matches(' ')), self.depth))
                .collect::<Result<_, _>>()?;
            return Ok(Node::Union(lists));
        }
        if let Some(key) = text
            .strip_prefix('\'')
            .and_then(|t| t.strip_suffix('\''))
            .filter(|k| !k.contains('\''))
        {
            // Upstream re-reads a dict key as a field path (`.` + key), splitting it at dots.
            let nodes = parse_action(&format!(".{key}"), self.depth)?;
            return Ok(match <[Node; 1]>::try_from(nodes) {
                Ok([node]) => node,
                Err(nodes) => Node::Union(vec![nodes]),
            });
        }
        slice(text).map(Node::Slice)
    }

    fn filter(&mut self) -> Result<Node, String> {
        self.pos += 3;
        self.consume();
        let (mut begin, mut end, mut pair) = (false, false, EOF);
        loop {
            match self.next() {
                EOF | '\n' => return Err("unterminated filter".into()),
                q @ ('"' | '\'') => {
                    if !begin {
                        begin = true;
                        pair = q;
                        continue;
                    }
                    if self.input.as_bytes()[self.pos - 2] != b'\\' && q == pair {
                        end = true;
                    }
                }
                ')' if begin == end => break,
                _ => {}
            }
        }
        if self.next() != ']' {
            return Err("unclosed array expect ]".into());
        }
        let text = self.consume();
        let text = &text[..text.len() - 2];
        Ok(match split_comparison(text) {
            None => Node::Filter {
                left: parse_action(text, self.depth)?,
                op: "exists".into(),
                right: Vec::new(),
            },
            Some((left, op, right)) => Node::Filter {
                left: parse_action(left, self.depth)?,
                op: op.to_owned(),
                right: parse_action(right, self.depth)?,
            },
        })
    }
}

/// Upstream's `parseAction`: the first action of `{text}`.
fn parse_action(text: &str, depth: usize) -> Result<Vec<Node>, String> {
    JsonPath::parse_nested(text, depth + 1).map(|p| p.nodes)
}

/// `^([^!<>=]+)([!<>=]+)(.+?)$`
fn split_comparison(text: &str) -> Option<(&str, &str, &str)> {
    let is_op = |c: char| matches!(c, '!' | '<' | '>' | '=');
    let i = text.find(is_op)?;
    if i == 0 {
        return None;
    }
    let j = text[i..].find(|c| !is_op(c)).map_or(text.len(), |j| i + j);
    (j < text.len()).then(|| (&text[..i], &text[i..j], &text[j..]))
}

/// `^(-?[\d]*)(:-?[\d]*)?(:-?[\d]*)?$` and upstream's reading of the three parameters.
fn slice(text: &str) -> Result<[Param; 3], String> {
    let invalid = || format!("invalid array index {text}");
    let parts: Vec<&str> = text.split(':').collect();
    if parts.len() > 3 {
        return Err(invalid());
    }
    let well_formed = |p: &str| {
        let digits = p.strip_prefix('-').unwrap_or(p);
        digits.bytes().all(|b| b.is_ascii_digit())
    };
    if !parts.iter().all(|p| well_formed(p)) {
        return Err(invalid());
    }
    let mut params = [Param::default(); 3];
    for i in 0..3 {
        match parts.get(i) {
            // Present but empty: unknown.
            Some(&"") => {}
            Some(p) => {
                params[i].known = true;
                params[i].value =
                    go_atoi(p).ok_or_else(|| format!("array index {p} is not a number"))?;
            }
            None if i == 1 => {
                params[1] = Param {
                    value: params[0].value + 1,
                    known: true,
                    derived: true,
                };
            }
            None => {}
        }
    }
    Ok(params)
}

fn go_atoi(text: &str) -> Option<i64> {
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.strip_prefix('+').unwrap_or(text).parse().ok()
}

/// Go's `strconv.Unquote`, extended to single quotes (upstream's `UnquoteExtend`), for the
/// escapes a path can hold.
fn unquote(text: &str) -> Option<String> {
    let quote = text.chars().next()?;
    let inner = text.strip_prefix(quote)?.strip_suffix(quote)?;
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c == quote {
            return None;
        }
        if c != '\\' {
            out.push(c);
            continue;
        }
        out.push(match chars.next()? {
            'n' => '\n',
            't' => '\t',
            'r' => '\r',
            'a' => '\u{7}',
            'b' => '\u{8}',
            'f' => '\u{c}',
            'v' => '\u{b}',
            '\\' => '\\',
            c @ ('"' | '\'') if c == quote => c,
            _ => return None,
        });
    }
    Some(out)
}

fn is_terminator(c: char) -> bool {
    matches!(
        c,
        ' ' | '\t' | '\r' | '\n' | EOF | '.' | ',' | '[' | ']' | '$' | '@' | '{' | '}'
    )
}

fn is_alphanumeric(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

fn eval_list<'a>(nodes: &[Node], input: Vec<Found<'a>>) -> Result<Vec<Found<'a>>, String> {
    nodes.iter().try_fold(input, |cur, node| {
        let next = eval(node, cur)?;
        if next.len() > MAX_RESULTS {
            return Err(format!("more than {MAX_RESULTS} results"));
        }
        Ok(next)
    })
}

/// The members of an object or the elements of an array (a string's bytes as numbers, as Go's
/// reflection walks them); nothing for the rest.
fn children<'a>(v: &Found<'a>) -> Vec<Found<'a>> {
    match v {
        Cow::Borrowed(Value::Object(m)) => m.values().map(Cow::Borrowed).collect(),
        Cow::Borrowed(Value::Array(a)) => a.iter().map(Cow::Borrowed).collect(),
        Cow::Owned(Value::Object(m)) => m.values().cloned().map(Cow::Owned).collect(),
        Cow::Owned(Value::Array(a)) => a.iter().cloned().map(Cow::Owned).collect(),
        _ => match v.as_ref() {
            Value::String(s) => s.bytes().map(|b| Cow::Owned(Value::from(b))).collect(),
            _ => Vec::new(),
        },
    }
}

fn eval<'a>(node: &Node, input: Vec<Found<'a>>) -> Result<Vec<Found<'a>>, String> {
    match node {
        Node::Text(t) => Ok(vec![Cow::Owned(Value::String(t.clone()))]),
        Node::Int(i) => Ok(input.iter().map(|_| Cow::Owned(Value::from(*i))).collect()),
        Node::Float(f) => Ok(input.iter().map(|_| Cow::Owned(Value::from(*f))).collect()),
        Node::Bool(b) => Ok(input.iter().map(|_| Cow::Owned(Value::Bool(*b))).collect()),
        Node::Identifier(name) => Err(format!("unrecognized identifier {name}")),
        Node::Field(name) => Ok(input
            .into_iter()
            .filter_map(|v| match v {
                Cow::Borrowed(Value::Object(m)) => m.get(name).map(Cow::Borrowed),
                Cow::Owned(Value::Object(mut m)) => m.remove(name).map(Cow::Owned),
                _ => None,
            })
            .collect()),
        Node::Wildcard => Ok(input
            .iter()
            .filter(|v| !v.is_null())
            .flat_map(children)
            .collect()),
        Node::Recursive => {
            let mut out = Vec::new();
            recurse(input, &mut out)?;
            Ok(out)
        }
        Node::Union(lists) => {
            let mut out = Vec::new();
            for list in lists {
                out.extend(eval_list(list, input.clone())?);
            }
            Ok(out)
        }
        Node::Slice(params) => eval_slice(*params, input),
        Node::Filter { left, op, right } => eval_filter(left, op, right, input),
    }
}

/// Upstream's `evalRecursive`: every value with children (objects, arrays, non-empty strings),
/// each before its descendants.
fn recurse<'a>(input: Vec<Found<'a>>, out: &mut Vec<Found<'a>>) -> Result<(), String> {
    for v in input {
        let (container, text) = match v.as_ref() {
            Value::Object(m) => (!m.is_empty(), false),
            Value::Array(a) => (!a.is_empty(), false),
            // A string's children are its bytes, which have none: the string alone is found.
            Value::String(s) => (false, !s.is_empty()),
            _ => (false, false),
        };
        if out.len() >= MAX_RESULTS {
            return Err(format!("more than {MAX_RESULTS} results"));
        }
        if text {
            out.push(v);
        } else if container {
            let kids = children(&v);
            out.push(v);
            recurse(kids, out)?;
        }
    }
    Ok(())
}

fn eval_slice(params: [Param; 3], input: Vec<Found<'_>>) -> Result<Vec<Found<'_>>, String> {
    let mut out = Vec::new();
    for v in input {
        if v.is_null() {
            continue;
        }
        let Value::Array(items) = v.as_ref() else {
            return Err(format!("{} is not array or slice", go_type(&v)));
        };
        let len = items.len() as i64;
        let [mut start, mut end, step] = params;
        if !start.known {
            start.value = 0;
        }
        if start.value < 0 {
            start.value += len;
        }
        if !end.known {
            end.value = len;
        }
        if end.value < 0 || (end.value == 0 && end.derived) {
            end.value += len;
        }
        if end.value == start.value {
            // Upstream returns what it has: the inputs after this one are not read.
            return Ok(out);
        }
        if start.value >= len || start.value < 0 {
            return Err(format!(
                "array index out of bounds: index {}, length {len}",
                start.value
            ));
        }
        if end.value > len || end.value < 0 {
            return Err(format!(
                "array index out of bounds: index {}, length {len}",
                end.value - 1
            ));
        }
        if start.value > end.value {
            return Err(format!(
                "starting index {} is greater than ending index {}",
                start.value, end.value
            ));
        }
        let step = if step.known {
            if step.value <= 0 {
                return Err("step must be > 0".into());
            }
            step.value as usize
        } else {
            1
        };
        let (from, to) = (start.value as usize, end.value as usize);
        match v {
            Cow::Borrowed(Value::Array(a)) => {
                out.extend(a[from..to].iter().step_by(step).map(Cow::Borrowed));
            }
            Cow::Owned(Value::Array(a)) => {
                out.extend(a[from..to].iter().step_by(step).cloned().map(Cow::Owned));
            }
            _ => {}
        }
    }
    Ok(out)
}

fn eval_filter<'a>(
    left: &[Node],
    op: &str,
    right: &[Node],
    input: Vec<Found<'a>>,
) -> Result<Vec<Found<'a>>, String> {
    let mut out = Vec::new();
    for v in input {
        let items: Vec<Found<'a>> = match v {
            Cow::Borrowed(Value::Array(a)) => a.iter().map(Cow::Borrowed).collect(),
            Cow::Owned(Value::Array(a)) => a.into_iter().map(Cow::Owned).collect(),
            other => {
                return Err(format!(
                    "{} is not array or slice and cannot be filtered",
                    other.as_ref()
                ));
            }
        };
        for item in items {
            let lefts = eval_list(left, vec![item.clone()]);
            if op == "exists" {
                if lefts.is_ok_and(|l| !l.is_empty()) {
                    out.push(item);
                }
                continue;
            }
            let lefts = lefts?;
            let l = match lefts.as_slice() {
                [] => continue,
                [l] => l,
                _ => return Err("can only compare one element at a time".into()),
            };
            let rights = eval_list(right, vec![item.clone()])?;
            let r = match rights.as_slice() {
                [] => continue,
                [r] => r,
                _ => return Err("can only compare one element at a time".into()),
            };
            if compare(l, op, r)? {
                out.push(item);
            }
        }
    }
    Ok(out)
}

/// A value's kind for Go's template comparisons (`basicKind`).
enum Basic<'v> {
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    Str(&'v str),
}

fn basic(v: &Value) -> Result<Basic<'_>, String> {
    match v {
        Value::Bool(b) => Ok(Basic::Bool(*b)),
        Value::String(s) => Ok(Basic::Str(s)),
        Value::Number(n) => Ok(match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Basic::Int(i),
            (None, Some(u)) => Basic::Uint(u),
            _ => Basic::Float(n.as_f64().unwrap_or(f64::NAN)),
        }),
        _ => Err("invalid type for comparison".into()),
    }
}

/// The comparisons of client-go's forked `text/template` (`Equal`, `Less`, ...): values of
/// different kinds do not compare, except signed and unsigned integers.
fn compare(left: &Value, op: &str, right: &Value) -> Result<bool, String> {
    use std::cmp::Ordering;
    // The operator is checked first, as upstream's `switch` on it is.
    let holds: fn(Ordering) -> bool = match op {
        "==" => Ordering::is_eq,
        "!=" => Ordering::is_ne,
        "<" => Ordering::is_lt,
        ">" => Ordering::is_gt,
        "<=" => Ordering::is_le,
        ">=" => Ordering::is_ge,
        _ => return Err(format!("unrecognized filter operator {op}")),
    };
    let ordering = match (basic(left)?, basic(right)?) {
        (Basic::Int(x), Basic::Int(y)) => x.cmp(&y),
        (Basic::Uint(x), Basic::Uint(y)) => x.cmp(&y),
        (Basic::Int(x), Basic::Uint(y)) => i128::from(x).cmp(&i128::from(y)),
        (Basic::Uint(x), Basic::Int(y)) => i128::from(x).cmp(&i128::from(y)),
        (Basic::Str(x), Basic::Str(y)) => x.cmp(y),
        (Basic::Float(x), Basic::Float(y)) => match x.partial_cmp(&y) {
            Some(o) => o,
            // NaN: only `!=` holds.
            None => return Ok(op == "!="),
        },
        // Booleans are equal or not; they have no order.
        (Basic::Bool(x), Basic::Bool(y)) if matches!(op, "==" | "!=") => x.cmp(&y),
        (Basic::Bool(_), Basic::Bool(_)) => return Err("invalid type for comparison".into()),
        _ => return Err("incompatible types for comparison".into()),
    };
    Ok(holds(ordering))
}

fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Object(_) => "map[string]interface {}",
        Value::String(_) => "string",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float64",
        Value::Number(_) => "int64",
        Value::Array(_) => "[]interface {}",
        Value::Null => "interface {}",
    }
}

/// How a string column prints a value: Go's `fmt.Fprint` of the decoded JSON, as client-go's
/// `PrintResults` does (`<no value>` for null, `map[k:v]` for objects, `[a b]` for arrays,
/// floats in `%v`'s shortest form).
pub fn go_text(v: &Value) -> String {
    match v {
        Value::Null => "<no value>".into(),
        other => crd_schema::validate::gofmt::value_v(other),
    }
}

#[cfg(test)]
mod tests;
