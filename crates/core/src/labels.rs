//! Label selectors (apimachinery `pkg/labels/selector.go`): the `labelSelector` query parameter
//! and `metav1.LabelSelector` objects.
//!
//! The parser is a faithful port of upstream's byte lexer and recursive-descent parser, so that
//! every accepted string, the canonical [`Display`](std::fmt::Display) form and every error
//! message are the ones Kubernetes produces (the server returns parse errors verbatim in a 400
//! `BadRequest`). Keys and values are validated as label keys and label values with upstream's
//! messages.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::Value;

use crate::field::{ErrorList, FieldError, Path, go_quote};

/// A selector operator (upstream's `selection.Operator`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operator {
    /// `key=value`.
    Equals,
    /// `key==value`, the same as [`Operator::Equals`] but printed back as `==`.
    DoubleEquals,
    /// `key!=value`; also true when the label is absent.
    NotEquals,
    /// `key in (a,b)`.
    In,
    /// `key notin (a,b)`; also true when the label is absent.
    NotIn,
    /// `key`: the label exists.
    Exists,
    /// `!key`: the label does not exist.
    DoesNotExist,
    /// `key>n`: the label is an integer greater than `n`.
    GreaterThan,
    /// `key<n`: the label is an integer less than `n`.
    LessThan,
}

impl Operator {
    /// Upstream's string value of the operator (`in`, `notin`, `=`, `==`, `!=`, `gt`, `lt`,
    /// `exists`, `!`), as used in its error messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::In => "in",
            Operator::NotIn => "notin",
            Operator::Exists => "exists",
            Operator::DoesNotExist => "!",
            Operator::GreaterThan => "gt",
            Operator::LessThan => "lt",
        }
    }
}

/// One term of a selector: a key, an operator and the values it relates them to.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Requirement {
    key: String,
    op: Operator,
    values: Vec<String>,
}

impl Requirement {
    /// Builds a validated requirement, as upstream's `NewRequirement` with no field path: the key
    /// must be a label key, each value a label value, and the number of values must suit the
    /// operator (`Gt`/`Lt` values must be integers). The error is the aggregated field-error
    /// message Kubernetes prints.
    pub fn new(key: &str, op: Operator, values: Vec<String>) -> Result<Requirement, String> {
        let mut errs = ErrorList::new();
        let key_errs = label_key_errors(key);
        if !key_errs.is_empty() {
            errs.push(FieldError::invalid(
                &Path::new("key"),
                key,
                key_errs.join("; "),
            ));
        }
        let values_path = Path::new("values");
        let values_json = || {
            // Upstream passes a Go slice; an empty one is nil there and prints as `null`.
            if values.is_empty() {
                Value::Null
            } else {
                Value::from(values.clone())
            }
        };
        match op {
            Operator::In | Operator::NotIn if values.is_empty() => {
                errs.push(FieldError::invalid(
                    &values_path,
                    values_json(),
                    "for 'in', 'notin' operators, values set can't be empty",
                ));
            }
            Operator::Equals | Operator::DoubleEquals | Operator::NotEquals
                if values.len() != 1 =>
            {
                errs.push(FieldError::invalid(
                    &values_path,
                    values_json(),
                    "exact-match compatibility requires one single value",
                ));
            }
            Operator::Exists | Operator::DoesNotExist if !values.is_empty() => {
                errs.push(FieldError::invalid(
                    &values_path,
                    values_json(),
                    "values set must be empty for exists and does not exist",
                ));
            }
            Operator::GreaterThan | Operator::LessThan => {
                if values.len() != 1 {
                    errs.push(FieldError::invalid(
                        &values_path,
                        values_json(),
                        "for 'Gt', 'Lt' operators, exactly one value is required",
                    ));
                }
                for (i, v) in values.iter().enumerate() {
                    if v.parse::<i64>().is_err() {
                        errs.push(FieldError::invalid(
                            &values_path.index(i),
                            v.as_str(),
                            "for 'Gt', 'Lt' operators, the value must be an integer",
                        ));
                    }
                }
            }
            _ => {}
        }
        for (i, v) in values.iter().enumerate() {
            let value_errs = label_value_errors(v);
            if !value_errs.is_empty() {
                errs.push(FieldError::invalid(
                    &values_path.index(i).key(key),
                    v.as_str(),
                    value_errs.join("; "),
                ));
            }
        }
        if errs.is_empty() {
            Ok(Requirement {
                key: key.to_string(),
                op,
                values,
            })
        } else {
            Err(errs.aggregate())
        }
    }

    /// The label key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The operator.
    pub fn operator(&self) -> Operator {
        self.op
    }

    /// The values, as given (the parser yields them sorted and without duplicates).
    pub fn values(&self) -> &[String] {
        &self.values
    }

    /// Whether a label set (seen through `get`) satisfies this requirement, with upstream's
    /// rules: `!=` and `notin` hold when the label is absent; `>`/`<` need an integer label.
    fn matches_with<'a>(&self, get: &impl Fn(&str) -> Option<&'a str>) -> bool {
        let actual = get(&self.key);
        let has = |v: &str| self.values.iter().any(|x| x == v);
        match self.op {
            Operator::In | Operator::Equals | Operator::DoubleEquals => actual.is_some_and(has),
            Operator::NotIn | Operator::NotEquals => actual.is_none_or(|v| !has(v)),
            Operator::Exists => actual.is_some(),
            Operator::DoesNotExist => actual.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let Some(Ok(label)) = actual.map(str::parse::<i64>) else {
                    return false;
                };
                let [wanted] = self.values.as_slice() else {
                    return false;
                };
                let Ok(wanted) = wanted.parse::<i64>() else {
                    return false;
                };
                if self.op == Operator::GreaterThan {
                    label > wanted
                } else {
                    label < wanted
                }
            }
        }
    }
}

impl fmt::Display for Requirement {
    /// Upstream's `Requirement.String()`: `!k`, `k`, `k=v`, `k==v`, `k!=v`, `k>n`, `k<n`,
    /// `k in (a,b)`, `k notin (a,b)`, with set values sorted.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.op == Operator::DoesNotExist {
            f.write_str("!")?;
        }
        f.write_str(&self.key)?;
        let (op, set) = match self.op {
            Operator::Exists | Operator::DoesNotExist => return Ok(()),
            Operator::Equals => ("=", false),
            Operator::DoubleEquals => ("==", false),
            Operator::NotEquals => ("!=", false),
            Operator::GreaterThan => (">", false),
            Operator::LessThan => ("<", false),
            Operator::In => (" in ", true),
            Operator::NotIn => (" notin ", true),
        };
        f.write_str(op)?;
        if set {
            f.write_str("(")?;
        }
        if let [only] = self.values.as_slice() {
            f.write_str(only)?;
        } else {
            let mut sorted: Vec<&str> = self.values.iter().map(String::as_str).collect();
            sorted.sort_unstable();
            f.write_str(&sorted.join(","))?;
        }
        if set {
            f.write_str(")")?;
        }
        Ok(())
    }
}

/// A label selector: the AND of its requirements, kept sorted by key as upstream does.
///
/// The default value selects everything; [`Selector::nothing`] (a null `LabelSelector`)
/// selects nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Selector {
    requirements: Vec<Requirement>,
    nothing: bool,
}

impl Selector {
    /// The selector that matches every label set (an empty `labelSelector`).
    pub fn everything() -> Self {
        Selector::default()
    }

    /// The selector that matches nothing, which upstream returns for a null `LabelSelector`.
    pub fn nothing() -> Self {
        Selector {
            requirements: Vec::new(),
            nothing: true,
        }
    }

    /// Parses a `labelSelector` string as upstream's `labels.Parse` does, e.g.
    /// `app=web,tier!=db,env in (prod,staging),!canary,replicas>2`.
    ///
    /// The error is upstream's exact message, for example
    /// `unable to parse requirement: found '', expected: in, notin, =, ==, !=, gt, lt` or
    /// `found ')', expected: !, identifier, or 'end of string'`.
    pub fn parse(s: &str) -> Result<Selector, String> {
        let mut parser = Parser {
            items: Lexer::new(s).scan(),
            position: 0,
        };
        let mut requirements = parser.parse()?;
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(Selector {
            requirements,
            nothing: false,
        })
    }

    /// Converts a `metav1.LabelSelector` JSON object (`{matchLabels, matchExpressions}` with the
    /// operators `In`, `NotIn`, `Exists`, `DoesNotExist`), as upstream's
    /// `LabelSelectorAsSelector`: `null` selects nothing, an empty object everything.
    ///
    /// Invalid keys, values and operators give upstream's messages (`"Foo" is not a valid pod
    /// selector operator`, `values: Invalid value: null: for 'in', 'notin' operators, values set
    /// can't be empty`, ...). A value of the wrong JSON type gives a decoding-style message.
    pub fn from_label_selector_json(v: &Value) -> Result<Selector, String> {
        let obj = match v {
            Value::Null => return Ok(Selector::nothing()),
            Value::Object(obj) => obj,
            other => {
                return Err(type_error("LabelSelector", "object", other));
            }
        };
        let match_labels: BTreeMap<&str, &str> = match obj.get("matchLabels") {
            None | Some(Value::Null) => BTreeMap::new(),
            Some(Value::Object(m)) => m
                .iter()
                .map(|(k, v)| match v {
                    Value::String(s) => Ok((k.as_str(), s.as_str())),
                    other => Err(type_error("LabelSelector.matchLabels", "string", other)),
                })
                .collect::<Result<_, _>>()?,
            Some(other) => {
                return Err(type_error(
                    "LabelSelector.matchLabels",
                    "map[string]string",
                    other,
                ));
            }
        };
        let expressions: &[Value] = match obj.get("matchExpressions") {
            None | Some(Value::Null) => &[],
            Some(Value::Array(a)) => a,
            Some(other) => {
                return Err(type_error(
                    "LabelSelector.matchExpressions",
                    "[]LabelSelectorRequirement",
                    other,
                ));
            }
        };
        if match_labels.is_empty() && expressions.is_empty() {
            return Ok(Selector::everything());
        }
        let mut requirements = Vec::with_capacity(match_labels.len() + expressions.len());
        for (k, v) in match_labels {
            requirements.push(Requirement::new(k, Operator::Equals, vec![v.to_string()])?);
        }
        for expr in expressions {
            let (key, operator, values) = decode_expression(expr)?;
            let op = match operator {
                "In" => Operator::In,
                "NotIn" => Operator::NotIn,
                "Exists" => Operator::Exists,
                "DoesNotExist" => Operator::DoesNotExist,
                other => {
                    return Err(format!(
                        "{} is not a valid pod selector operator",
                        go_quote(other)
                    ));
                }
            };
            requirements.push(Requirement::new(key, op, values)?);
        }
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(Selector {
            requirements,
            nothing: false,
        })
    }

    /// Whether the selector places no restriction (upstream's `Empty()`); false for
    /// [`Selector::nothing`].
    pub fn is_empty(&self) -> bool {
        !self.nothing && self.requirements.is_empty()
    }

    /// The requirements, sorted by key.
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// Whether a label set matches every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.matches_with(&|k: &str| labels.get(k).map(String::as_str))
    }

    /// Whether an object's `metadata.labels` JSON matches. As upstream's unstructured
    /// `GetLabels`, an absent or non-object value, or an object holding any non-string value,
    /// counts as no labels at all.
    pub fn matches_json(&self, labels: Option<&Value>) -> bool {
        let map = match labels {
            Some(Value::Object(m)) if m.values().all(Value::is_string) => Some(m),
            _ => None,
        };
        self.matches_with(&|k: &str| map.and_then(|m| m.get(k)).and_then(Value::as_str))
    }

    /// The single value the selector requires for `key` (upstream's `RequiresExactMatch`): the
    /// first requirement on that key decides, and only `=`, `==` or a one-value `in` count.
    pub fn requires_exact_match(&self, key: &str) -> Option<&str> {
        let r = self.requirements.iter().find(|r| r.key == key)?;
        match (r.op, r.values.as_slice()) {
            (Operator::Equals | Operator::DoubleEquals | Operator::In, [only]) => Some(only),
            _ => None,
        }
    }

    fn matches_with<'a>(&self, get: &impl Fn(&str) -> Option<&'a str>) -> bool {
        !self.nothing && self.requirements.iter().all(|r| r.matches_with(get))
    }
}

impl fmt::Display for Selector {
    /// The canonical form (upstream's `String()`): requirements sorted by key, joined by `,`.
    /// Both the empty and the nothing selector print as the empty string.
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

/// A decoding error for a `LabelSelector` field of the wrong JSON type, worded like Go's
/// `encoding/json` errors.
fn type_error(field: &str, want: &str, got: &Value) -> String {
    let got = crate::go_decode::json_kind(got);
    format!("json: cannot unmarshal {got} into Go struct field {field} of type {want}")
}

/// Reads one `LabelSelectorRequirement` object: `(key, operator, values)`, absent strings
/// reading as `""` and absent values as none.
fn decode_expression(expr: &Value) -> Result<(&str, &str, Vec<String>), String> {
    let Value::Object(obj) = expr else {
        return Err(type_error(
            "LabelSelector.matchExpressions",
            "LabelSelectorRequirement",
            expr,
        ));
    };
    let string_field = |name: &str| match obj.get(name) {
        None | Some(Value::Null) => Ok(""),
        Some(Value::String(s)) => Ok(s.as_str()),
        Some(other) => Err(type_error(
            &format!("LabelSelectorRequirement.{name}"),
            "string",
            other,
        )),
    };
    let key = string_field("key")?;
    let operator = string_field("operator")?;
    let values = match obj.get("values") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| match v {
                Value::String(s) => Ok(s.clone()),
                other => Err(type_error(
                    "LabelSelectorRequirement.values",
                    "string",
                    other,
                )),
            })
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err(type_error(
                "LabelSelectorRequirement.values",
                "[]string",
                other,
            ));
        }
    };
    Ok((key, operator, values))
}

// ---------------------------------------------------------------------------------------------
// Label key and value validation: the apimachinery helpers in `validation.rs`; a key with more
// than one '/' is worded as a label key, as `pkg/api/validate/content` words it.

fn label_key_errors(key: &str) -> Vec<String> {
    crate::validation::qualified_name_errors(key, "a valid label key")
}

fn label_value_errors(value: &str) -> Vec<String> {
    crate::validation::is_valid_label_value(value)
}

// ---------------------------------------------------------------------------------------------
// Lexer and parser, ported from upstream token by token (including its quirks: a NUL byte ends
// the input, `in`/`notin` are identifiers where a value is expected, some messages quote an
// earlier token).

/// A lexer token (upstream's `Token`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Token {
    Error,
    EndOfString,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

/// Upstream's `string2token`.
fn keyword(s: &[u8]) -> Option<Token> {
    Some(match s {
        b")" => Token::ClosedPar,
        b"," => Token::Comma,
        b"!" => Token::DoesNotExist,
        b"==" => Token::DoubleEquals,
        b"=" => Token::Equals,
        b">" => Token::GreaterThan,
        b"in" => Token::In,
        b"<" => Token::LessThan,
        b"!=" => Token::NotEquals,
        b"notin" => Token::NotIn,
        b"(" => Token::OpenPar,
        _ => return None,
    })
}

fn is_whitespace(ch: u8) -> bool {
    matches!(ch, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special_symbol(ch: u8) -> bool {
    matches!(ch, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

/// Upstream's byte-oriented `Lexer`; a 0 byte reads as end of input.
struct Lexer<'a> {
    s: &'a [u8],
    pos: usize,
}

impl<'a> Lexer<'a> {
    fn new(s: &'a str) -> Self {
        Lexer {
            s: s.as_bytes(),
            pos: 0,
        }
    }

    fn read(&mut self) -> u8 {
        match self.s.get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                b
            }
            None => 0,
        }
    }

    fn unread(&mut self) {
        self.pos = self.pos.saturating_sub(1);
    }

    fn scan_id_or_keyword(&mut self) -> (Token, String) {
        let mut buf = Vec::new();
        loop {
            let ch = self.read();
            if ch == 0 {
                break;
            }
            if is_special_symbol(ch) || is_whitespace(ch) {
                self.unread();
                break;
            }
            buf.push(ch);
        }
        let tok = keyword(&buf).unwrap_or(Token::Identifier);
        (tok, String::from_utf8_lossy(&buf).into_owned())
    }

    fn scan_special_symbol(&mut self) -> (Token, String) {
        let mut last: Option<(Token, usize)> = None;
        let mut buf = Vec::new();
        loop {
            let ch = self.read();
            if ch == 0 {
                break;
            }
            if !is_special_symbol(ch) {
                self.unread();
                break;
            }
            buf.push(ch);
            if let Some(tok) = keyword(&buf) {
                last = Some((tok, buf.len()));
            } else if last.is_some() {
                self.unread();
                break;
            }
        }
        match last {
            Some((tok, len)) => (tok, String::from_utf8_lossy(&buf[..len]).into_owned()),
            None => (
                Token::Error,
                format!(
                    "error expected: keyword found '{}'",
                    String::from_utf8_lossy(&buf)
                ),
            ),
        }
    }

    fn lex(&mut self) -> (Token, String) {
        let mut ch = self.read();
        while is_whitespace(ch) {
            ch = self.read();
        }
        if ch == 0 {
            return (Token::EndOfString, String::new());
        }
        self.unread();
        if is_special_symbol(ch) {
            self.scan_special_symbol()
        } else {
            self.scan_id_or_keyword()
        }
    }

    /// All tokens up to and including the end-of-string token.
    fn scan(mut self) -> Vec<(Token, String)> {
        let mut items = Vec::new();
        loop {
            let item = self.lex();
            let end = item.0 == Token::EndOfString;
            items.push(item);
            if end {
                return items;
            }
        }
    }
}

/// Whether `in`/`notin` are keywords (after a key) or plain identifiers (anywhere else).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    KeyAndOperator,
    Values,
}

/// Upstream's recursive-descent `Parser` over the scanned tokens.
struct Parser {
    items: Vec<(Token, String)>,
    position: usize,
}

/// The operators upstream lists in its "expected:" message (`binaryOperators`).
const BINARY_OPERATORS: &str = "in, notin, =, ==, !=, gt, lt";

impl Parser {
    fn lookahead(&self, ctx: Context) -> (Token, &str) {
        let (tok, lit) = self
            .items
            .get(self.position)
            .map_or((Token::EndOfString, ""), |(t, l)| (*t, l.as_str()));
        (Self::in_context(tok, ctx), lit)
    }

    fn consume(&mut self, ctx: Context) -> (Token, String) {
        let (tok, lit) = self
            .items
            .get(self.position)
            .cloned()
            .unwrap_or((Token::EndOfString, String::new()));
        self.position += 1;
        (Self::in_context(tok, ctx), lit)
    }

    fn in_context(tok: Token, ctx: Context) -> Token {
        match tok {
            Token::In | Token::NotIn if ctx == Context::Values => Token::Identifier,
            t => t,
        }
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, String> {
        let mut requirements = Vec::new();
        loop {
            let (tok, lit) = self.lookahead(Context::Values);
            match tok {
                Token::Identifier | Token::DoesNotExist => {
                    let r = self
                        .parse_requirement()
                        .map_err(|e| format!("unable to parse requirement: {e}"))?;
                    requirements.push(r);
                    let (t, l) = self.consume(Context::Values);
                    match t {
                        Token::EndOfString => return Ok(requirements),
                        Token::Comma => {
                            let (t2, l2) = self.lookahead(Context::Values);
                            if t2 != Token::Identifier && t2 != Token::DoesNotExist {
                                return Err(format!(
                                    "found '{l2}', expected: identifier after ','"
                                ));
                            }
                        }
                        _ => {
                            return Err(format!("found '{l}', expected: ',' or 'end of string'"));
                        }
                    }
                }
                Token::EndOfString => return Ok(requirements),
                _ => {
                    return Err(format!(
                        "found '{lit}', expected: !, identifier, or 'end of string'"
                    ));
                }
            }
        }
    }

    fn parse_requirement(&mut self) -> Result<Requirement, String> {
        let (key, op) = self.parse_key_and_infer_operator()?;
        if let Some(op @ (Operator::Exists | Operator::DoesNotExist)) = op {
            return Requirement::new(&key, op, Vec::new());
        }
        let op = self.parse_operator()?;
        let values = match op {
            Operator::In | Operator::NotIn => self.parse_values()?,
            _ => self.parse_exact_value()?,
        };
        Requirement::new(&key, op, values.into_iter().collect())
    }

    fn parse_key_and_infer_operator(&mut self) -> Result<(String, Option<Operator>), String> {
        let mut op = None;
        let (mut tok, mut lit) = self.consume(Context::Values);
        if tok == Token::DoesNotExist {
            op = Some(Operator::DoesNotExist);
            (tok, lit) = self.consume(Context::Values);
        }
        if tok != Token::Identifier {
            return Err(format!("found '{lit}', expected: identifier"));
        }
        let key_errs = label_key_errors(&lit);
        if !key_errs.is_empty() {
            return Err(
                FieldError::invalid(&Path::root(), lit.as_str(), key_errs.join("; ")).to_string(),
            );
        }
        let (next, _) = self.lookahead(Context::Values);
        if matches!(next, Token::EndOfString | Token::Comma) && op.is_none() {
            op = Some(Operator::Exists);
        }
        Ok((lit, op))
    }

    fn parse_operator(&mut self) -> Result<Operator, String> {
        let (tok, lit) = self.consume(Context::KeyAndOperator);
        Ok(match tok {
            Token::In => Operator::In,
            Token::Equals => Operator::Equals,
            Token::DoubleEquals => Operator::DoubleEquals,
            Token::GreaterThan => Operator::GreaterThan,
            Token::LessThan => Operator::LessThan,
            Token::NotIn => Operator::NotIn,
            Token::NotEquals => Operator::NotEquals,
            _ => return Err(format!("found '{lit}', expected: {BINARY_OPERATORS}")),
        })
    }

    fn parse_values(&mut self) -> Result<BTreeSet<String>, String> {
        let (tok, lit) = self.consume(Context::Values);
        if tok != Token::OpenPar {
            return Err(format!("found '{lit}' expected: '('"));
        }
        let (tok, lit) = self.lookahead(Context::Values);
        let lit = lit.to_string();
        match tok {
            Token::Identifier | Token::Comma => {
                let set = self.parse_identifiers_list()?;
                let (tok, _) = self.consume(Context::Values);
                if tok != Token::ClosedPar {
                    return Err(format!("found '{lit}', expected: ')'"));
                }
                Ok(set)
            }
            Token::ClosedPar => {
                self.consume(Context::Values);
                Ok(BTreeSet::from([String::new()]))
            }
            _ => Err(format!("found '{lit}', expected: ',', ')' or identifier")),
        }
    }

    fn parse_identifiers_list(&mut self) -> Result<BTreeSet<String>, String> {
        let mut set = BTreeSet::new();
        loop {
            let (tok, lit) = self.consume(Context::Values);
            match tok {
                Token::Identifier => {
                    set.insert(lit);
                    let (tok2, lit2) = self.lookahead(Context::Values);
                    match tok2 {
                        Token::Comma => {}
                        Token::ClosedPar => return Ok(set),
                        _ => return Err(format!("found '{lit2}', expected: ',' or ')'")),
                    }
                }
                Token::Comma => {
                    if set.is_empty() {
                        set.insert(String::new());
                    }
                    let (tok2, _) = self.lookahead(Context::Values);
                    if tok2 == Token::ClosedPar {
                        set.insert(String::new());
                        return Ok(set);
                    }
                    if tok2 == Token::Comma {
                        self.consume(Context::Values);
                        set.insert(String::new());
                    }
                }
                _ => return Err(format!("found '{lit}', expected: ',', or identifier")),
            }
        }
    }

    fn parse_exact_value(&mut self) -> Result<BTreeSet<String>, String> {
        let (tok, _) = self.lookahead(Context::Values);
        if matches!(tok, Token::EndOfString | Token::Comma) {
            return Ok(BTreeSet::from([String::new()]));
        }
        let (tok, lit) = self.consume(Context::Values);
        if tok == Token::Identifier {
            Ok(BTreeSet::from([lit]))
        } else {
            Err(format!("found '{lit}', expected: identifier"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const NAME_PART_REGEX: &str = "name part must consist of alphanumeric characters, '-', '_' \
        or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or \
        'my.name',  or '123-abc', regex used for validation is \
        '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    const VALUE_REGEX: &str = "a valid label must be an empty string or consist of alphanumeric \
        characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. \
        'MyValue',  or 'my_value',  or '12345', regex used for validation is \
        '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
    const SUBDOMAIN_REGEX: &str = "a lowercase RFC 1123 subdomain must consist of lower case \
        alphanumeric characters, '-' or '.', and must start and end with an alphanumeric \
        character (e.g. 'example.com', regex used for validation is \
        '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
            .collect()
    }

    /// A match-table row: (selector, labels, expected match).
    type MatchCase<'a> = (&'a str, &'a [(&'a str, &'a str)], bool);

    #[test]
    fn matches_label_sets() {
        let foo_baz = [("foo", "bar"), ("baz", "blah")];
        let cases: &[MatchCase] = &[
            ("", &[("x", "y")], true),
            ("", &[], true),
            ("x=y", &[("x", "y")], true),
            ("x==y", &[("x", "y")], true),
            ("x=y,z=w", &[("x", "y"), ("z", "w")], true),
            ("x!=y,z!=w", &[("x", "z"), ("z", "a")], true),
            ("notin=in", &[("notin", "in")], true),
            ("x", &[("x", "z")], true),
            ("x", &[("x", "")], true),
            ("!x", &[("y", "z")], true),
            ("x>1", &[("x", "2")], true),
            ("x<1", &[("x", "0")], true),
            ("x<1", &[("x", "-5")], true),
            ("x=z", &[], false),
            ("x=y", &[("x", "z")], false),
            ("x=y,z=w", &[("x", "w"), ("z", "w")], false),
            ("x!=y,z!=w", &[("x", "z"), ("z", "w")], false),
            ("x", &[("y", "z")], false),
            ("!x", &[("x", "z")], false),
            ("x>1", &[("x", "0")], false),
            ("x>1", &[("x", "1")], false),
            ("x<1", &[("x", "2")], false),
            // `>`/`<` need the label to be an integer and to exist.
            ("x>1", &[("x", "v2")], false),
            ("x>1", &[], false),
            ("x<1", &[("x", "")], false),
            ("x>9", &[("x", "10")], true),
            ("x>0", &[], false),
            // `!=` and `notin` hold when the label is absent.
            ("x!=y", &[], true),
            ("x notin (a,b)", &[], true),
            ("x notin (a,b)", &[("x", "a")], false),
            ("x notin (a,b)", &[("x", "c")], true),
            ("x in (a,b)", &[("x", "b")], true),
            ("x in (a,b)", &[("x", "c")], false),
            ("x in (a,b)", &[], false),
            // An empty value set `()` means the one value "".
            ("x in ()", &[("x", "")], true),
            ("x in ()", &[("x", "a")], false),
            ("x notin ()", &[("x", "")], false),
            ("x in (a,)", &[("x", "")], true),
            ("x=", &[("x", "")], true),
            ("x=", &[], false),
            ("x!=", &[], true),
            ("foo=bar", &foo_baz, true),
            ("baz=blah", &foo_baz, true),
            ("foo=bar,baz=blah", &foo_baz, true),
            ("foo=blah", &foo_baz, false),
            ("baz=bar", &foo_baz, false),
            ("foo=bar,foobar=bar,baz=blah", &foo_baz, false),
            (
                "example.com/app in (web), !example.com/canary",
                &[("example.com/app", "web")],
                true,
            ),
            ("in in (in), notin notin (notin)", &[("in", "in")], true),
        ];
        for &(sel, set, want) in cases {
            let parsed = Selector::parse(sel).unwrap_or_else(|e| panic!("{sel:?}: {e}"));
            assert_eq!(parsed.matches(&labels(set)), want, "{sel:?} on {set:?}");
            let as_json = Value::Object(
                set.iter()
                    .map(|(k, v)| ((*k).to_string(), Value::from(*v)))
                    .collect(),
            );
            assert_eq!(
                parsed.matches_json(Some(&as_json)),
                want,
                "json {sel:?} on {set:?}"
            );
        }
    }

    #[test]
    fn prints_canonical_form() {
        // (input, upstream's String() of the parsed selector)
        let cases: &[(&str, &str)] = &[
            ("", ""),
            ("   ", ""),
            ("x=a,y=b,z=c", "x=a,y=b,z=c"),
            ("x!=a,y=b", "x!=a,y=b"),
            ("x=", "x="),
            ("x= ", "x="),
            ("x=,z= ", "x=,z="),
            ("x= ,z= ", "x=,z="),
            ("!x", "!x"),
            ("x>1", "x>1"),
            ("x>1,z<5", "x>1,z<5"),
            ("x == a", "x==a"),
            ("y,x", "x,y"),
            ("x=a,a=x", "a=x,x=a"),
            ("a=2,a=1", "a=2,a=1"),
            ("x in (b,a,b)", "x in (a,b)"),
            ("x in ()", "x in ()"),
            ("x in (,)", "x in ()"),
            ("x in (a,,b)", "x in (,a,b)"),
            ("x in (abc,)", "x in (,abc)"),
            ("foo  in\t (abc)", "foo in (abc)"),
            ("x notin\n (abc)", "x notin (abc)"),
            (
                "x notin (abc,def),bar,z in (),w",
                "bar,w,x notin (abc,def),z in ()",
            ),
            ("\rx", "x"),
            ("in", "in"),
            ("!notin", "!notin"),
            ("in in (in)", "in in (in)"),
            ("x=in", "x=in"),
            (
                "0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)",
                "0.1.2.domain/99 notin (10.10.100.1,tick.tack.clock)",
            ),
            // A NUL byte at the start of a token ends the input, as upstream's lexer reads it.
            ("x=a \0junk", "x=a"),
            ("x\0", "x"),
            // ...but one right after a special symbol is swallowed with it.
            ("x=a,\0y", "x=a,y"),
        ];
        for &(input, want) in cases {
            let sel = Selector::parse(input).unwrap_or_else(|e| panic!("{input:?}: {e}"));
            assert_eq!(sel.to_string(), want, "{input:?}");
            let again = Selector::parse(want).unwrap_or_else(|e| panic!("{want:?}: {e}"));
            assert_eq!(again.to_string(), want, "reparse of {want:?}");
        }
    }

    #[test]
    fn rejects_bad_selectors_with_upstream_messages() {
        let long = "a".repeat(64);
        let cases: Vec<(String, String)> = vec![
            ("x=a||y=b".into(), format!("unable to parse requirement: values[0][x]: Invalid value: \"a||y\": {VALUE_REGEX}")),
            ("x==a==b".into(), "found '==', expected: ',' or 'end of string'".into()),
            ("!x=a".into(), "found '=', expected: ',' or 'end of string'".into()),
            ("x=a=b".into(), "found '=', expected: ',' or 'end of string'".into()),
            ("x=a b".into(), "found 'b', expected: ',' or 'end of string'".into()),
            ("x in (a))".into(), "found ')', expected: ',' or 'end of string'".into()),
            ("x=a\0b".into(), "found 'b', expected: ',' or 'end of string'".into()),
            ("x<a".into(), "unable to parse requirement: values[0]: Invalid value: \"a\": for 'Gt', 'Lt' operators, the value must be an integer".into()),
            ("x>".into(), "unable to parse requirement: values[0]: Invalid value: \"\": for 'Gt', 'Lt' operators, the value must be an integer".into()),
            ("x>99999999999999999999".into(), "unable to parse requirement: values[0]: Invalid value: \"99999999999999999999\": for 'Gt', 'Lt' operators, the value must be an integer".into()),
            ("x>-1".into(), format!("unable to parse requirement: values[0][x]: Invalid value: \"-1\": {VALUE_REGEX}")),
            ("x>-a".into(), format!("unable to parse requirement: [values[0]: Invalid value: \"-a\": for 'Gt', 'Lt' operators, the value must be an integer, values[0][x]: Invalid value: \"-a\": {VALUE_REGEX}]")),
            ("x in".into(), "unable to parse requirement: found '' expected: '('".into()),
            ("x notin a".into(), "unable to parse requirement: found 'a' expected: '('".into()),
            ("x in (".into(), "unable to parse requirement: found '', expected: ',', ')' or identifier".into()),
            ("x in (=".into(), "unable to parse requirement: found '=', expected: ',', ')' or identifier".into()),
            ("x in (a".into(), "unable to parse requirement: found '', expected: ',' or ')'".into()),
            ("x in (a b)".into(), "unable to parse requirement: found 'b', expected: ',' or ')'".into()),
            ("x in (a,".into(), "unable to parse requirement: found '', expected: ',', or identifier".into()),
            ("x in (a,=)".into(), "unable to parse requirement: found '=', expected: ',', or identifier".into()),
            ("x y".into(), "unable to parse requirement: found 'y', expected: in, notin, =, ==, !=, gt, lt".into()),
            ("x!!=a".into(), "unable to parse requirement: found '!', expected: in, notin, =, ==, !=, gt, lt".into()),
            ("x (".into(), "unable to parse requirement: found '(', expected: in, notin, =, ==, !=, gt, lt".into()),
            ("x=(".into(), "unable to parse requirement: found '(', expected: identifier".into()),
            ("x=>".into(), "unable to parse requirement: found '>', expected: identifier".into()),
            ("x<>1".into(), "unable to parse requirement: found '>', expected: identifier".into()),
            ("!".into(), "unable to parse requirement: found '', expected: identifier".into()),
            ("!!x".into(), "unable to parse requirement: found '!', expected: identifier".into()),
            ("!=x".into(), "found '!=', expected: !, identifier, or 'end of string'".into()),
            (",".into(), "found ',', expected: !, identifier, or 'end of string'".into()),
            (")".into(), "found ')', expected: !, identifier, or 'end of string'".into()),
            ("(x)".into(), "found '(', expected: !, identifier, or 'end of string'".into()),
            ("x,".into(), "found '', expected: identifier after ','".into()),
            ("x,,y".into(), "found ',', expected: identifier after ','".into()),
            ("x=a, \0y".into(), "found '', expected: identifier after ','".into()),
            ("x,=".into(), "found '=', expected: identifier after ','".into()),
            ("-x".into(), format!("unable to parse requirement: <nil>: Invalid value: \"-x\": {NAME_PART_REGEX}")),
            ("x-=a".into(), format!("unable to parse requirement: <nil>: Invalid value: \"x-\": {NAME_PART_REGEX}")),
            ("ключ=v".into(), format!("unable to parse requirement: <nil>: Invalid value: \"ключ\": {NAME_PART_REGEX}")),
            ("a/b/c".into(), "unable to parse requirement: <nil>: Invalid value: \"a/b/c\": a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')".into()),
            ("/x".into(), "unable to parse requirement: <nil>: Invalid value: \"/x\": prefix part must be non-empty".into()),
            ("Example.com/x".into(), format!("unable to parse requirement: <nil>: Invalid value: \"Example.com/x\": prefix part {SUBDOMAIN_REGEX}")),
            (format!("{}/x", "a".repeat(254)), format!("unable to parse requirement: <nil>: Invalid value: \"{}/x\": prefix part must be no more than 253 characters", "a".repeat(254))),
            ("x/".into(), format!("unable to parse requirement: <nil>: Invalid value: \"x/\": name part must be non-empty; {NAME_PART_REGEX}")),
            ("/".into(), format!("unable to parse requirement: <nil>: Invalid value: \"/\": prefix part must be non-empty; name part must be non-empty; {NAME_PART_REGEX}")),
            (long.clone(), format!("unable to parse requirement: <nil>: Invalid value: \"{long}\": name part must be no more than 63 characters")),
            (format!("x={long}"), format!("unable to parse requirement: values[0][x]: Invalid value: \"{long}\": must be no more than 63 characters")),
            (format!("x in (a,-{long})"), format!("unable to parse requirement: values[0][x]: Invalid value: \"-{long}\": must be no more than 63 characters; {VALUE_REGEX}")),
            ("x in (ok,€)".into(), format!("unable to parse requirement: values[1][x]: Invalid value: \"€\": {VALUE_REGEX}")),
            ("x=\"q\"".into(), format!("unable to parse requirement: values[0][x]: Invalid value: \"\\\"q\\\"\": {VALUE_REGEX}")),
        ];
        for (input, want) in cases {
            assert_eq!(Selector::parse(&input), Err(want), "{input:?}");
        }
    }

    #[test]
    fn converts_label_selector_objects() {
        // (LabelSelector JSON, canonical string)
        let good = [
            (json!({}), ""),
            (json!({"matchLabels": null, "matchExpressions": null}), ""),
            (json!({"matchLabels": {}, "matchExpressions": []}), ""),
            (json!({"matchLabels": {"b": "2", "a": "1"}}), "a=1,b=2"),
            (
                json!({"matchLabels": {"app": "web"}, "matchExpressions": [
                    {"key": "tier", "operator": "In", "values": ["b", "a"]},
                    {"key": "env", "operator": "NotIn", "values": ["dev"]},
                    {"key": "canary", "operator": "DoesNotExist"},
                    {"key": "zone", "operator": "Exists", "values": null},
                ]}),
                "app=web,!canary,env notin (dev),tier in (a,b),zone",
            ),
        ];
        for (v, want) in good {
            let sel = Selector::from_label_selector_json(&v).unwrap_or_else(|e| panic!("{v}: {e}"));
            assert_eq!(sel.to_string(), want, "{v}");
        }
        let sel = Selector::from_label_selector_json(&json!({
            "matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}],
        }))
        .unwrap_or_default();
        assert!(sel.matches(&labels(&[("app", "web"), ("tier", "b")])));
        assert!(!sel.matches(&labels(&[("app", "web"), ("tier", "c")])));
        assert!(!sel.matches(&labels(&[("tier", "a")])));
        assert_eq!(sel.requires_exact_match("app"), Some("web"));

        // Repeated values print as given (upstream's `Requirement.String`), and the string
        // parser keeps a set (upstream's too): both select the same (fuzz `selectors` crash).
        let sel = Selector::from_label_selector_json(&json!({"matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["b", "b"]},
            {"key": "canary", "operator": "DoesNotExist"}]}))
        .unwrap_or_default();
        assert_eq!(sel.to_string(), "!canary,tier in (b,b)");
        let again = Selector::parse(&sel.to_string()).unwrap_or_default();
        assert_eq!(again.to_string(), "!canary,tier in (b)");
        for set in [
            labels(&[("tier", "b")]),
            labels(&[("tier", "c")]),
            labels(&[]),
        ] {
            assert_eq!(again.matches(&set), sel.matches(&set), "{set:?}");
        }

        // A null selector selects nothing; an empty one everything.
        let nothing = Selector::from_label_selector_json(&Value::Null).unwrap_or_default();
        assert_eq!(nothing, Selector::nothing());
        assert!(!nothing.is_empty());
        assert!(!nothing.matches(&BTreeMap::new()));
        assert!(!nothing.matches_json(None));
        assert_eq!(nothing.to_string(), "");
        let everything =
            Selector::from_label_selector_json(&json!({})).unwrap_or_else(|_| Selector::nothing());
        assert!(everything.is_empty());
        assert!(everything.matches(&BTreeMap::new()));

        let bad = [
            (json!({"matchExpressions": [{"key": "x", "operator": "Foo"}]}), "\"Foo\" is not a valid pod selector operator".to_string()),
            (json!({"matchExpressions": [{"key": "x", "operator": "in", "values": ["a"]}]}), "\"in\" is not a valid pod selector operator".to_string()),
            (json!({"matchExpressions": [{"key": "x", "operator": "Gt", "values": ["1"]}]}), "\"Gt\" is not a valid pod selector operator".to_string()),
            (json!({"matchExpressions": [{"key": "x"}]}), "\"\" is not a valid pod selector operator".to_string()),
            (json!({"matchExpressions": [{"key": "x", "operator": "In"}]}), "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty".to_string()),
            (json!({"matchExpressions": [{"key": "x", "operator": "NotIn", "values": []}]}), "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty".to_string()),
            (json!({"matchExpressions": [{"key": "x", "operator": "Exists", "values": ["a", "b"]}]}), "values: Invalid value: [\"a\",\"b\"]: values set must be empty for exists and does not exist".to_string()),
            (json!({"matchExpressions": [{"key": "x", "operator": "In", "values": ["ok", "-"]}]}), format!("values[1][x]: Invalid value: \"-\": {VALUE_REGEX}")),
            (json!({"matchLabels": {"-a": "1"}}), format!("key: Invalid value: \"-a\": {NAME_PART_REGEX}")),
            (json!({"matchLabels": {"a": "-"}}), format!("values[0][a]: Invalid value: \"-\": {VALUE_REGEX}")),
            (json!({"matchLabels": {"-a": "-"}}), format!("[key: Invalid value: \"-a\": {NAME_PART_REGEX}, values[0][-a]: Invalid value: \"-\": {VALUE_REGEX}]")),
            (json!({"matchExpressions": [{"operator": "In"}]}), format!("[key: Invalid value: \"\": name part must be non-empty; {NAME_PART_REGEX}, values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty]")),
            (json!("app=web"), "json: cannot unmarshal string into Go struct field LabelSelector of type object".to_string()),
            (json!({"matchLabels": ["a"]}), "json: cannot unmarshal array into Go struct field LabelSelector.matchLabels of type map[string]string".to_string()),
            (json!({"matchLabels": {"a": 1}}), "json: cannot unmarshal number into Go struct field LabelSelector.matchLabels of type string".to_string()),
            (json!({"matchExpressions": {}}), "json: cannot unmarshal object into Go struct field LabelSelector.matchExpressions of type []LabelSelectorRequirement".to_string()),
            (json!({"matchExpressions": [1]}), "json: cannot unmarshal number into Go struct field LabelSelector.matchExpressions of type LabelSelectorRequirement".to_string()),
            (json!({"matchExpressions": [{"key": true}]}), "json: cannot unmarshal bool into Go struct field LabelSelectorRequirement.key of type string".to_string()),
            (json!({"matchExpressions": [{"key": "x", "operator": "In", "values": "a"}]}), "json: cannot unmarshal string into Go struct field LabelSelectorRequirement.values of type []string".to_string()),
            (json!({"matchExpressions": [{"key": "x", "operator": "In", "values": [null]}]}), "json: cannot unmarshal null into Go struct field LabelSelectorRequirement.values of type string".to_string()),
        ];
        for (v, want) in bad {
            assert_eq!(Selector::from_label_selector_json(&v), Err(want), "{v}");
        }
    }

    #[test]
    fn matches_json_label_objects() {
        let has_x = Selector::parse("x").unwrap_or_default();
        let no_x = Selector::parse("!x").unwrap_or_default();
        // (metadata.labels, matches `x`, matches `!x`)
        let cases = [
            (None, false, true),
            (Some(json!(null)), false, true),
            (Some(json!("x")), false, true),
            (Some(json!(["x"])), false, true),
            (Some(json!({"x": "1"})), true, false),
            // Any non-string value makes upstream's GetLabels return no labels at all.
            (Some(json!({"x": "1", "y": 2})), false, true),
            (Some(json!({"x": null})), false, true),
        ];
        for (labels, want_has, want_no) in cases {
            assert_eq!(has_x.matches_json(labels.as_ref()), want_has, "{labels:?}");
            assert_eq!(no_x.matches_json(labels.as_ref()), want_no, "{labels:?}");
        }
    }

    #[test]
    fn exact_match_and_accessors() {
        let sel = Selector::parse("b in (x),a=1,c in (x,y),d!=z,e==2").unwrap_or_default();
        assert_eq!(sel.requires_exact_match("a"), Some("1"));
        assert_eq!(sel.requires_exact_match("b"), Some("x"));
        assert_eq!(sel.requires_exact_match("c"), None);
        assert_eq!(sel.requires_exact_match("d"), None);
        assert_eq!(sel.requires_exact_match("e"), Some("2"));
        assert_eq!(sel.requires_exact_match("f"), None);
        let keys: Vec<&str> = sel.requirements().iter().map(Requirement::key).collect();
        assert_eq!(keys, ["a", "b", "c", "d", "e"]);
        let ops: Vec<&str> = sel
            .requirements()
            .iter()
            .map(|r| r.operator().as_str())
            .collect();
        assert_eq!(ops, ["=", "in", "in", "!=", "=="]);
        assert_eq!(sel.requirements()[2].values(), ["x", "y"]);
        assert!(Selector::everything().is_empty());
        assert!(Selector::parse("").is_ok_and(|s| s.is_empty()));
        assert!(Selector::parse("x").is_ok_and(|s| !s.is_empty()));
    }

    #[test]
    fn requirement_constructor_validates() {
        let ok: &[(&str, Operator, &[&str])] = &[
            ("x", Operator::In, &["foo"]),
            ("x", Operator::NotIn, &["foo"]),
            ("x", Operator::Exists, &[]),
            ("x", Operator::DoesNotExist, &[]),
            ("1foo", Operator::In, &["bar"]),
            ("1234", Operator::In, &["bar"]),
            ("y", Operator::GreaterThan, &["1"]),
            ("z", Operator::LessThan, &["6"]),
        ];
        for &(key, op, vals) in ok {
            let vals = vals.iter().map(ToString::to_string).collect();
            assert!(Requirement::new(key, op, vals).is_ok(), "{key} {op:?}");
        }
        let bad: &[(&str, Operator, &[&str], &str)] = &[
            (
                "x",
                Operator::In,
                &[],
                "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty",
            ),
            (
                "x",
                Operator::Equals,
                &["a", "b"],
                "values: Invalid value: [\"a\",\"b\"]: exact-match compatibility requires one single value",
            ),
            (
                "x",
                Operator::NotEquals,
                &[],
                "values: Invalid value: null: exact-match compatibility requires one single value",
            ),
            (
                "foo",
                Operator::GreaterThan,
                &["bar"],
                "values[0]: Invalid value: \"bar\": for 'Gt', 'Lt' operators, the value must be an integer",
            ),
            (
                "z",
                Operator::LessThan,
                &["1", "2"],
                "values: Invalid value: [\"1\",\"2\"]: for 'Gt', 'Lt' operators, exactly one value is required",
            ),
        ];
        for &(key, op, vals, want) in bad {
            let vals = vals.iter().map(ToString::to_string).collect();
            assert_eq!(
                Requirement::new(key, op, vals),
                Err(want.to_string()),
                "{key} {op:?}"
            );
        }
        assert!(Requirement::new(&"a".repeat(254), Operator::Exists, Vec::new()).is_err());
    }

    #[test]
    fn garbage_never_panics_and_canonical_forms_reparse() {
        for input in [
            "\0",
            "\0\0",
            "!\0",
            "x in (\0",
            "x in (a,\0",
            "é",
            "🦀=🦀",
            "x=🦀",
            "\u{10FFFF}",
            "((((",
            "))))",
            "!!!!",
            "====",
            "<<>>",
            "in in in",
            "notin",
            "notin notin",
            "x in in",
            "x in (in,notin,)",
            "\t\r\n",
            "x\t=\ty",
            "a,b,c,,",
            "x=\u{7f}",
            "x=\u{1}",
        ] {
            if let Ok(sel) = Selector::parse(input) {
                let _ = sel.matches(&BTreeMap::new());
                let _ = sel.to_string();
            }
        }
        // Every string up to length 5 over an alphabet of the characters the lexer cares about.
        let alphabet = ['x', '=', '!', '(', ')', ',', ' ', '<', '>', '\0', 'n', '1'];
        let mut stack = vec![String::new()];
        let mut parsed_ok = 0;
        while let Some(s) = stack.pop() {
            if let Ok(sel) = Selector::parse(&s) {
                parsed_ok += 1;
                let canonical = sel.to_string();
                let again = Selector::parse(&canonical)
                    .unwrap_or_else(|e| panic!("{s:?} printed as {canonical:?}: {e}"));
                assert_eq!(again.to_string(), canonical, "{s:?}");
                let _ = sel.matches(&labels(&[("x", "1"), ("n", "")]));
            }
            if s.chars().count() < 5 {
                for c in alphabet {
                    stack.push(format!("{s}{c}"));
                }
            }
        }
        assert!(parsed_ok > 100, "only {parsed_ok} inputs parsed");
    }
}
