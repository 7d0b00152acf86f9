//! A syntax check for Go (RE2) regular expressions that reproduces Go's `regexp.Compile` errors.
//!
//! CRD schemas are written for Go's `regexp` package: its grammar differs from the `regex`
//! crate's in places (`a{,5}` is a literal in Go, `a**` is an error in Go, character-class set
//! operations do not exist in Go), and the error text shown to users is Go's, such as
//! "error parsing regexp: missing closing ): \`(abc\`". This module walks the pattern the way
//! Go's `regexp/syntax` parser does (with the `Perl` flags used by `regexp.Compile`) and reports
//! the first error Go would report. Only Unicode group names are delegated to the `regex` crate.

/// One Go `regexp/syntax.Error`.
#[derive(Debug, PartialEq, Eq)]
struct GoError {
    code: &'static str,
    expr: String,
}

const INVALID_CHAR_CLASS_RANGE: &str = "invalid character class range";
const INVALID_ESCAPE: &str = "invalid escape sequence";
const INVALID_NAMED_CAPTURE: &str = "invalid named capture";
const INVALID_PERL_OP: &str = "invalid or unsupported Perl syntax";
const INVALID_REPEAT_OP: &str = "invalid nested repetition operator";
const INVALID_REPEAT_SIZE: &str = "invalid repeat count";
const MISSING_BRACKET: &str = "missing closing ]";
const MISSING_PAREN: &str = "missing closing )";
const MISSING_REPEAT_ARGUMENT: &str = "missing argument to repetition operator";
const TRAILING_BACKSLASH: &str = "trailing backslash at end of expression";
const UNEXPECTED_PAREN: &str = "unexpected )";
const NESTING_DEPTH: &str = "expression nests too deeply";

/// Go's limit for counted repetitions (`{n,m}`), also applied to their nested products.
const MAX_REPEAT: u64 = 1000;
/// Go's limit for the nesting depth of a parsed expression.
const MAX_HEIGHT: usize = 1000;

fn err(code: &'static str, expr: &str) -> GoError {
    GoError {
        code,
        expr: expr.to_string(),
    }
}

/// Returns Go's error message for `pattern` (`error parsing regexp: ...`), or `None` if Go's
/// `regexp.Compile` accepts it.
pub(crate) fn go_regexp_error(pattern: &str) -> Option<String> {
    parse(pattern)
        .err()
        .map(|e| format!("error parsing regexp: {}: `{}`", e.code, e.expr))
}

/// The state of one parenthesized group: the repetition "need" (see [`repeat_need`]) of the
/// items completed so far, and of the last item (the one a repetition operator applies to).
#[derive(Default)]
struct Frame {
    done: u64,
    last: Option<u64>,
}

struct Parser {
    frames: Vec<Frame>,
}

impl Parser {
    fn top(&mut self) -> &mut Frame {
        if self.frames.is_empty() {
            self.frames.push(Frame::default());
        }
        let n = self.frames.len() - 1;
        &mut self.frames[n]
    }

    fn push_atom(&mut self, need: u64) {
        let f = self.top();
        if let Some(l) = f.last {
            f.done = f.done.max(l);
        }
        f.last = Some(need);
    }

    fn open(&mut self, whole: &str) -> Result<(), GoError> {
        self.frames.push(Frame::default());
        if self.frames.len() > MAX_HEIGHT {
            return Err(err(NESTING_DEPTH, whole));
        }
        Ok(())
    }
}

/// The smallest budget `n` for which Go's `repeatIsValid(re, n)` holds, given the need of the
/// repeated sub-expression.
fn repeat_need(min: i64, max: i64, sub: u64) -> u64 {
    if max == 0 {
        return 0;
    }
    let m = if max < 0 { min } else { max };
    if m <= 0 {
        return sub;
    }
    let m = m as u64;
    m.max(m.saturating_mul(sub))
}

fn next_char(s: &str) -> (char, &str) {
    match s.chars().next() {
        Some(c) => (c, &s[c.len_utf8()..]),
        // Go's nextRune on "" yields RuneError without consuming anything.
        None => ('\u{FFFD}', s),
    }
}

fn parse(whole: &str) -> Result<(), GoError> {
    let mut p = Parser {
        frames: vec![Frame::default()],
    };
    let mut t = whole;
    let mut last_repeat: Option<&str> = None;
    while let Some(c) = t.chars().next() {
        let mut repeat: Option<&str> = None;
        match c {
            '(' => {
                if t.starts_with("(?") {
                    t = parse_perl_flags(&mut p, t, whole)?;
                } else {
                    p.open(whole)?;
                    t = &t[1..];
                }
            }
            '|' => {
                let f = p.top();
                if let Some(l) = f.last.take() {
                    f.done = f.done.max(l);
                }
                t = &t[1..];
            }
            ')' => {
                if p.frames.len() < 2 {
                    return Err(err(UNEXPECTED_PAREN, whole));
                }
                let f = p.frames.pop().unwrap_or_default();
                let need = f.done.max(f.last.unwrap_or(0));
                p.push_atom(need);
                t = &t[1..];
            }
            '^' | '$' | '.' => {
                p.push_atom(0);
                t = &t[1..];
            }
            '[' => {
                t = parse_class(t)?;
                p.push_atom(0);
            }
            '*' | '+' | '?' => {
                let before = t;
                let after = apply_repeat(&mut p, before, &t[1..], last_repeat, None)?;
                repeat = Some(before);
                t = after;
            }
            '{' => {
                let before = t;
                match parse_repeat(t) {
                    None => {
                        // Not a valid repeat: `{` is a literal.
                        p.push_atom(0);
                        t = &t[1..];
                    }
                    Some((min, max, after)) => {
                        if min < 0
                            || min > MAX_REPEAT as i64
                            || max > MAX_REPEAT as i64
                            || (max >= 0 && min > max)
                        {
                            return Err(err(
                                INVALID_REPEAT_SIZE,
                                &before[..before.len() - after.len()],
                            ));
                        }
                        let after =
                            apply_repeat(&mut p, before, after, last_repeat, Some((min, max)))?;
                        repeat = Some(before);
                        t = after;
                    }
                }
            }
            '\\' => {
                t = parse_backslash(&mut p, t)?;
            }
            c => {
                p.push_atom(0);
                t = &t[c.len_utf8()..];
            }
        }
        last_repeat = repeat;
    }
    if p.frames.len() != 1 {
        return Err(err(MISSING_PAREN, whole));
    }
    Ok(())
}

/// Go's `parser.repeat`: applies `*`, `+`, `?` or `{n,m}` (already parsed) to the last item.
fn apply_repeat<'a>(
    p: &mut Parser,
    before: &'a str,
    after: &'a str,
    last_repeat: Option<&'a str>,
    bounds: Option<(i64, i64)>,
) -> Result<&'a str, GoError> {
    let after = after.strip_prefix('?').unwrap_or(after);
    if let Some(lr) = last_repeat {
        return Err(err(INVALID_REPEAT_OP, &lr[..lr.len() - after.len()]));
    }
    let op = &before[..before.len() - after.len()];
    let f = p.top();
    let Some(sub) = f.last else {
        return Err(err(MISSING_REPEAT_ARGUMENT, op));
    };
    let need = match bounds {
        Some((min, max)) => {
            let need = repeat_need(min, max, sub);
            if (min >= 2 || max >= 2) && need > MAX_REPEAT {
                return Err(err(INVALID_REPEAT_SIZE, op));
            }
            need
        }
        None => sub,
    };
    f.last = Some(need);
    Ok(after)
}

/// Go's `parseInt`: a decimal without leading zeros; `-1` when it is too big.
fn parse_int(s: &str) -> Option<(i64, &str)> {
    let b = s.as_bytes();
    if b.first().is_none_or(|c| !c.is_ascii_digit()) {
        return None;
    }
    if b.len() >= 2 && b[0] == b'0' && b[1].is_ascii_digit() {
        return None;
    }
    let digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
    let mut n: i64 = 0;
    for &d in &b[..digits] {
        if n >= 100_000_000 {
            n = -1;
            break;
        }
        n = n * 10 + i64::from(d - b'0');
    }
    Some((n, &s[digits..]))
}

/// Go's `parseRepeat`: `{n}`, `{n,}` or `{n,m}`; `None` when `{` is a literal.
fn parse_repeat(s: &str) -> Option<(i64, i64, &str)> {
    let s = s.strip_prefix('{')?;
    let (mut min, s) = parse_int(s)?;
    let max;
    let s = if let Some(rest) = s.strip_prefix(',') {
        if rest.is_empty() {
            return None;
        }
        if let Some(r) = rest.strip_prefix('}') {
            max = -1;
            return Some((min, max, r));
        }
        let (m, rest) = parse_int(rest)?;
        max = m;
        if max < 0 {
            min = -1;
        }
        rest
    } else {
        if s.is_empty() {
            return None;
        }
        max = min;
        s
    };
    let rest = s.strip_prefix('}')?;
    Some((min, max, rest))
}

fn parse_perl_flags<'a>(p: &mut Parser, t: &'a str, whole: &str) -> Result<&'a str, GoError> {
    let b = t.as_bytes();
    let starts_with_p = t.len() > 4 && b[2] == b'P' && b[3] == b'<';
    let starts_with_name = t.len() > 3 && b[2] == b'<';
    if starts_with_p || starts_with_name {
        let begin = if starts_with_name { 3 } else { 4 };
        let Some(end) = t.find('>') else {
            return Err(err(INVALID_NAMED_CAPTURE, t));
        };
        let capture = &t[..=end];
        let name = t.get(begin..end).unwrap_or("");
        let valid = !name.is_empty() && name.chars().all(|c| c == '_' || c.is_ascii_alphanumeric());
        if !valid {
            return Err(err(INVALID_NAMED_CAPTURE, capture));
        }
        p.open(whole)?;
        return Ok(&t[end + 1..]);
    }
    let mut rest = &t[2..];
    let mut negated = false;
    let mut saw_flag = false;
    while let Some(c) = rest.chars().next() {
        rest = &rest[c.len_utf8()..];
        match c {
            'i' | 'm' | 's' | 'U' => saw_flag = true,
            '-' => {
                if negated {
                    break;
                }
                negated = true;
                saw_flag = false;
            }
            ':' | ')' => {
                if negated && !saw_flag {
                    break;
                }
                if c == ':' {
                    p.open(whole)?;
                }
                return Ok(rest);
            }
            _ => break,
        }
    }
    Err(err(INVALID_PERL_OP, &t[..t.len() - rest.len()]))
}

fn is_perl_class(s: &str) -> bool {
    matches!(
        s.as_bytes(),
        [b'\\', b'd' | b'D' | b's' | b'S' | b'w' | b'W', ..]
    )
}

/// A backslash outside a character class.
fn parse_backslash<'a>(p: &mut Parser, t: &'a str) -> Result<&'a str, GoError> {
    let b = t.as_bytes();
    if b.len() >= 2 {
        match b[1] {
            b'A' | b'b' | b'B' | b'z' => {
                p.push_atom(0);
                return Ok(&t[2..]);
            }
            b'C' => return Err(err(INVALID_ESCAPE, &t[..2])),
            b'Q' => {
                let body = &t[2..];
                let (lit, rest) = match body.find("\\E") {
                    Some(i) => (&body[..i], &body[i + 2..]),
                    None => (body, ""),
                };
                for _ in lit.chars() {
                    p.push_atom(0);
                }
                return Ok(rest);
            }
            _ => {}
        }
    }
    if let Some(rest) = parse_unicode_class(t)? {
        p.push_atom(0);
        return Ok(rest);
    }
    if is_perl_class(t) {
        p.push_atom(0);
        return Ok(&t[2..]);
    }
    let (_, rest) = parse_escape(t)?;
    p.push_atom(0);
    Ok(rest)
}

fn unhex(c: char) -> Option<u32> {
    c.to_digit(16)
}

/// Go's `parseEscape`: returns the escaped code point and the rest.
fn parse_escape(input: &str) -> Result<(u32, &str), GoError> {
    let after_backslash = &input[1..];
    let Some(first) = after_backslash.chars().next() else {
        return Err(err(TRAILING_BACKSLASH, ""));
    };
    let mut rest = &after_backslash[first.len_utf8()..];
    let invalid = |rest: &str| err(INVALID_ESCAPE, &input[..input.len() - rest.len()]);
    match first {
        '0'..='7' => {
            let next_is_octal = rest
                .as_bytes()
                .first()
                .is_some_and(|d| (b'0'..=b'7').contains(d));
            if first != '0' && !next_is_octal {
                // A single non-zero digit is a backreference: not supported.
                return Err(invalid(rest));
            }
            let mut value = u32::from(first) - u32::from('0');
            for _ in 1..3 {
                match rest.as_bytes().first() {
                    Some(d @ b'0'..=b'7') => {
                        value = value * 8 + u32::from(*d - b'0');
                        rest = &rest[1..];
                    }
                    _ => break,
                }
            }
            Ok((value, rest))
        }
        'x' => parse_hex_escape(rest).map_err(&invalid),
        'a' => Ok((7, rest)),
        'f' => Ok((12, rest)),
        'n' => Ok((10, rest)),
        'r' => Ok((13, rest)),
        't' => Ok((9, rest)),
        'v' => Ok((11, rest)),
        other if other.is_ascii() && !other.is_ascii_alphanumeric() => Ok((u32::from(other), rest)),
        _ => Err(invalid(rest)),
    }
}

/// The part of a `\x` escape after the `x`: `41` or `{1F600}`. On error, returns what is left
/// unparsed (Go's error shows everything before it).
fn parse_hex_escape(after_x: &str) -> Result<(u32, &str), &str> {
    let mut rest = after_x;
    if rest.is_empty() {
        return Err(rest);
    }
    let (open, tail) = next_char(rest);
    rest = tail;
    if open == '{' {
        let mut digits = 0;
        let mut value: u32 = 0;
        loop {
            if rest.is_empty() {
                return Err(rest);
            }
            let (digit, tail) = next_char(rest);
            rest = tail;
            if digit == '}' {
                break;
            }
            let Some(v) = unhex(digit) else {
                return Err(rest);
            };
            value = value.saturating_mul(16).saturating_add(v);
            if value > 0x0010_FFFF {
                return Err(rest);
            }
            digits += 1;
        }
        if digits == 0 {
            return Err(rest);
        }
        return Ok((value, rest));
    }
    let high = unhex(open);
    let (second, tail) = next_char(rest);
    rest = tail;
    match (high, unhex(second)) {
        (Some(h), Some(l)) => Ok((h * 16 + l, rest)),
        _ => Err(rest),
    }
}

const POSIX_GROUPS: [&str; 14] = [
    "alnum", "alpha", "ascii", "blank", "cntrl", "digit", "graph", "lower", "print", "punct",
    "space", "upper", "word", "xdigit",
];

/// Go's `parseNamedClass` (`[:alpha:]` inside a class).
fn parse_named_class(t: &str) -> Result<Option<&str>, GoError> {
    if !t.starts_with("[:") {
        return Ok(None);
    }
    let Some(i) = t[2..].find(":]") else {
        return Ok(None);
    };
    let i = i + 2;
    let name = &t[..i + 2];
    let inner = &t[2..i];
    let inner = inner.strip_prefix('^').unwrap_or(inner);
    if !POSIX_GROUPS.contains(&inner) {
        return Err(err(INVALID_CHAR_CLASS_RANGE, name));
    }
    Ok(Some(&t[i + 2..]))
}

/// Normalizes a Unicode property name as Go (1.25+, following UTS #18) and the `regex` crate do.
fn loose(name: &str) -> String {
    name.chars()
        .filter(|c| !matches!(c, ' ' | '_' | '-'))
        .flat_map(char::to_lowercase)
        .collect()
}

/// Whether Go's `unicodeTable` knows `name`: `Any`, `ASCII`, `Assigned`, a general category
/// (short or long name) or a script.
fn unicode_table_exists(name: &str) -> bool {
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, ' ' | '_' | '-'))
    {
        return false;
    }
    if matches!(
        loose(name).as_str(),
        "any" | "ascii" | "assigned" | "cn" | "lc"
    ) {
        return true;
    }
    ["gc", "sc"].iter().any(|kind| {
        regex::RegexBuilder::new(&format!(r"\p{{{kind}={name}}}"))
            .size_limit(1 << 24)
            .build()
            .is_ok()
    })
}

/// Go's `parseUnicodeClass`: `\pL`, `\p{Greek}`, `\P{^Greek}`; `None` if `s` is not one.
fn parse_unicode_class(s: &str) -> Result<Option<&str>, GoError> {
    let b = s.as_bytes();
    if b.len() < 2 || b[0] != b'\\' || (b[1] != b'p' && b[1] != b'P') {
        return Ok(None);
    }
    let t = &s[2..];
    let (c, after) = next_char(t);
    let (seq, name, rest) = if c == '{' {
        let Some(end) = s.find('}') else {
            return Err(err(INVALID_CHAR_CLASS_RANGE, s));
        };
        (&s[..=end], s.get(3..end).unwrap_or(""), &s[end + 1..])
    } else {
        let seq = &s[..s.len() - after.len()];
        (seq, &seq[2..], after)
    };
    let name = name.strip_prefix('^').unwrap_or(name);
    if !unicode_table_exists(name) {
        return Err(err(INVALID_CHAR_CLASS_RANGE, seq));
    }
    Ok(Some(rest))
}

/// Go's `parseClassChar`.
fn parse_class_char<'a>(s: &'a str, whole_class: &str) -> Result<(u32, &'a str), GoError> {
    if s.is_empty() {
        return Err(err(MISSING_BRACKET, whole_class));
    }
    if s.starts_with('\\') {
        return parse_escape(s);
    }
    let (c, rest) = next_char(s);
    Ok((u32::from(c), rest))
}

/// Go's `parseClass`: `s` starts with `[`; returns the rest after the closing `]`.
fn parse_class(s: &str) -> Result<&str, GoError> {
    let mut t = &s[1..];
    if let Some(rest) = t.strip_prefix('^') {
        t = rest;
    }
    let mut first = true;
    while t.is_empty() || !t.starts_with(']') || first {
        first = false;
        if t.len() > 2
            && let Some(rest) = parse_named_class(t)?
        {
            t = rest;
            continue;
        }
        if let Some(rest) = parse_unicode_class(t)? {
            t = rest;
            continue;
        }
        if is_perl_class(t) {
            t = &t[2..];
            continue;
        }
        let rng = t;
        let (lo, rest) = parse_class_char(t, s)?;
        t = rest;
        let b = t.as_bytes();
        if b.len() >= 2 && b[0] == b'-' && b[1] != b']' {
            t = &t[1..];
            let (hi, rest) = parse_class_char(t, s)?;
            t = rest;
            if hi < lo {
                return Err(err(INVALID_CHAR_CLASS_RANGE, &rng[..rng.len() - t.len()]));
            }
        }
    }
    Ok(&t[1..])
}

#[cfg(test)]
mod tests {
    use super::go_regexp_error;

    #[test]
    fn accepts_what_go_accepts() {
        for p in [
            "",
            "abc",
            "^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$",
            "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
            "a{,5}",
            "a{",
            "{",
            "x{01}",
            "a}",
            "[]a]",
            "[^]a]",
            "[a-]",
            "[-a]",
            "[a[]",
            "[[:alpha:][:^digit:]]",
            "[\\d\\s\\pL\\p{Greek}]",
            "\\pL\\p{^Lu}\\PN\\p{Latin}\\p{Any}",
            "(?i)abc(?-i:def)(?s:.)(?U)x*",
            "(?P<name>a)(?<other_1>b)",
            "\\Qa.b*c\\E*",
            "\\x41\\x{1F600}\\0\\012\\a\\f\\n\\r\\t\\v\\.\\-",
            "a*?b+?c??d{2,3}?",
            "^*",
            "\\b*",
            "(a{10}){100}",
            "(a{1000})*",
            "a{1000}",
            "(a{0}){2}x",
            "()",
            "(|a)",
            "a|b|",
            "é+ü?",
            "[a&&b]",
            "[a-c-e]",
            "\\<\\>\\#",
        ] {
            assert_eq!(go_regexp_error(p), None, "pattern {p:?}");
        }
    }

    #[test]
    fn reports_go_errors() {
        for (p, want) in [
            ("(abc", "missing closing ): `(abc`"),
            ("a(b(c)", "missing closing ): `a(b(c)`"),
            ("abc)", "unexpected ): `abc)`"),
            ("[abc", "missing closing ]: `[abc`"),
            ("x[a-", "missing closing ]: `[a-`"),
            ("a**", "invalid nested repetition operator: `**`"),
            ("a*?*", "invalid nested repetition operator: `*?*`"),
            ("x++", "invalid nested repetition operator: `++`"),
            ("a{2}{3}", "invalid nested repetition operator: `{2}{3}`"),
            ("*a", "missing argument to repetition operator: `*`"),
            ("a|*", "missing argument to repetition operator: `*`"),
            ("(+)", "missing argument to repetition operator: `+`"),
            ("(?i)*", "missing argument to repetition operator: `*`"),
            ("{2}", "missing argument to repetition operator: `{2}`"),
            ("\\q", "invalid escape sequence: `\\q`"),
            ("\\Z", "invalid escape sequence: `\\Z`"),
            ("\\1", "invalid escape sequence: `\\1`"),
            ("\\8", "invalid escape sequence: `\\8`"),
            ("\\C", "invalid escape sequence: `\\C`"),
            ("\\x4", "invalid escape sequence: `\\x4`"),
            ("\\xZZ", "invalid escape sequence: `\\xZZ`"),
            ("[a--b]", "invalid character class range: `a--`"),
            ("\\x{}", "invalid escape sequence: `\\x{}`"),
            ("[\\b]", "invalid escape sequence: `\\b`"),
            ("abc\\", "trailing backslash at end of expression: ``"),
            ("a{1001}", "invalid repeat count: `{1001}`"),
            ("a{2,1}", "invalid repeat count: `{2,1}`"),
            ("(a{100}){100}", "invalid repeat count: `{100}`"),
            ("((a{10}){10}){11}", "invalid repeat count: `{11}`"),
            ("(?=x)", "invalid or unsupported Perl syntax: `(?=`"),
            ("(?!x)", "invalid or unsupported Perl syntax: `(?!`"),
            ("(?i", "invalid or unsupported Perl syntax: `(?i`"),
            ("(?P=x)", "invalid or unsupported Perl syntax: `(?P`"),
            ("(?<=x)", "invalid named capture: `(?<=x)`"),
            ("(?P<1-a>x)", "invalid named capture: `(?P<1-a>`"),
            ("(?P<>x)", "invalid named capture: `(?P<>`"),
            ("[z-a]", "invalid character class range: `z-a`"),
            ("[[:foo:]]", "invalid character class range: `[:foo:]`"),
            ("\\pX", "invalid character class range: `\\pX`"),
            ("\\p{Foo}", "invalid character class range: `\\p{Foo}`"),
            ("\\p{Greek", "invalid character class range: `\\p{Greek`"),
            ("\\p", "invalid character class range: `\\p`"),
        ] {
            assert_eq!(
                go_regexp_error(p).as_deref(),
                Some(format!("error parsing regexp: {want}").as_str()),
                "pattern {p:?}"
            );
        }
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let p = "(".repeat(5000);
        assert_eq!(
            go_regexp_error(&p)
                .map(|e| e.starts_with("error parsing regexp: expression nests too deeply")),
            Some(true)
        );
    }
}
