//! Go's `encoding/json` syntax errors, in its words (`invalid character '}' looking for
//! beginning of object key string`, `unexpected end of JSON input`): kube-apiserver checks a
//! body with that scanner before decoding it, and its 400s quote the scanner's message, which
//! clients and scripts show. [`syntax_error`] runs only once a body failed to decode, so the
//! request path pays nothing for it.

use std::fmt::Write as _;

/// The first syntax error Go's scanner reports in `data`, or `None` when it is valid JSON.
pub fn syntax_error(data: &[u8]) -> Option<String> {
    Scanner { data, at: 0 }.document().err()
}

/// `summarizeData(body, 30)` of kube-apiserver's handlers: a JSON object's first 30 bytes (or
/// the hex of another body's), with ` ...` when cut, `<empty>` for nothing.
pub fn summarize(data: &[u8]) -> String {
    const MAX: usize = 30;
    let cut = data.len() > MAX;
    let head = &data[..data.len().min(MAX)];
    let text = match data.first() {
        None => return "<empty>".into(),
        Some(b'{') => String::from_utf8_lossy(head).into_owned(),
        Some(_) => head.iter().fold(String::new(), |mut out, b| {
            let _ = write!(out, "{b:02x}");
            out
        }),
    };
    if cut { format!("{text} ...") } else { text }
}

const END: &str = "unexpected end of JSON input";
/// Go's `maxNestingDepth`.
const MAX_DEPTH: usize = 10_000;

struct Scanner<'a> {
    data: &'a [u8],
    at: usize,
}

/// Go's `invalid character <c> <context>`.
fn invalid(c: u8, context: &str) -> String {
    format!("invalid character {} {context}", quote_char(c))
}

/// Go's `quoteChar`: the byte as a rune, `strconv.Quote`d between single quotes.
fn quote_char(c: u8) -> String {
    match c {
        b'\'' => r"'\''".into(),
        b'"' => "'\"'".into(),
        0x07 => r"'\a'".into(),
        0x08 => r"'\b'".into(),
        0x0c => r"'\f'".into(),
        b'\n' => r"'\n'".into(),
        b'\r' => r"'\r'".into(),
        b'\t' => r"'\t'".into(),
        0x0b => r"'\v'".into(),
        b'\\' => r"'\\'".into(),
        c if c < 0x20 || c == 0x7f => format!(r"'\x{c:02x}'"),
        c if (0x80..0xa0).contains(&c) => format!(r"'\u{c:04x}'"),
        0xad => r"'\u00ad'".into(),
        c => format!("'{}'", char::from(c)),
    }
}

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.data.get(self.at).copied()
    }

    fn next(&mut self) -> Result<u8, String> {
        let c = self.peek().ok_or_else(|| END.to_string())?;
        self.at += 1;
        Ok(c)
    }

    fn space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    /// The whole input: one value, then only white space. Iterative, with an explicit stack
    /// of open containers, as Go's scanner is: no input can exhaust the thread's stack.
    fn document(&mut self) -> Result<(), String> {
        let mut open: Vec<u8> = Vec::new();
        'value: loop {
            self.space();
            let c = self.next()?;
            match c {
                b'{' | b'[' => {
                    open.push(c);
                    if open.len() > MAX_DEPTH {
                        return Err(invalid(c, "exceeded max depth"));
                    }
                    self.space();
                    let close = if c == b'{' { b'}' } else { b']' };
                    if self.peek() == Some(close) {
                        self.at += 1;
                        open.pop();
                    } else if c == b'{' {
                        self.key()?;
                        continue 'value;
                    } else {
                        continue 'value;
                    }
                }
                b'"' => self.string()?,
                b'-' => self.number(true)?,
                b'0'..=b'9' => {
                    self.at -= 1;
                    self.number(false)?;
                }
                b't' => self.literal("true")?,
                b'f' => self.literal("false")?,
                b'n' => self.literal("null")?,
                c => return Err(invalid(c, "looking for beginning of value")),
            }
            // A value ended: close the containers it ends, until one expects another value.
            loop {
                self.space();
                match open.last() {
                    None => {
                        return match self.peek() {
                            None => Ok(()),
                            Some(c) => Err(invalid(c, "after top-level value")),
                        };
                    }
                    Some(b'{') => match self.next()? {
                        b',' => {
                            self.space();
                            self.key()?;
                            continue 'value;
                        }
                        b'}' => {
                            open.pop();
                        }
                        c => return Err(invalid(c, "after object key:value pair")),
                    },
                    Some(_) => match self.next()? {
                        b',' => continue 'value,
                        b']' => {
                            open.pop();
                        }
                        c => return Err(invalid(c, "after array element")),
                    },
                }
            }
        }
    }

    /// An object's key and its colon.
    fn key(&mut self) -> Result<(), String> {
        match self.next()? {
            b'"' => self.string()?,
            c => return Err(invalid(c, "looking for beginning of object key string")),
        }
        self.space();
        match self.next()? {
            b':' => Ok(()),
            c => Err(invalid(c, "after object key")),
        }
    }

    fn string(&mut self) -> Result<(), String> {
        loop {
            match self.next()? {
                b'"' => return Ok(()),
                b'\\' => match self.next()? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                    b'u' => {
                        for _ in 0..4 {
                            let c = self.next()?;
                            if !c.is_ascii_hexdigit() {
                                return Err(invalid(c, "in \\u hexadecimal character escape"));
                            }
                        }
                    }
                    c => return Err(invalid(c, "in string escape code")),
                },
                c if c < 0x20 => return Err(invalid(c, "in string literal")),
                _ => {}
            }
        }
    }

    fn digits(&mut self) {
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.at += 1;
        }
    }

    fn number(&mut self, negative: bool) -> Result<(), String> {
        let first = self.next()?;
        match first {
            b'0' => {}
            b'1'..=b'9' => self.digits(),
            c if negative => return Err(invalid(c, "in numeric literal")),
            c => return Err(invalid(c, "looking for beginning of value")),
        }
        if self.peek() == Some(b'.') {
            self.at += 1;
            match self.next()? {
                b'0'..=b'9' => self.digits(),
                c => return Err(invalid(c, "after decimal point in numeric literal")),
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.at += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.at += 1;
            }
            match self.next()? {
                b'0'..=b'9' => self.digits(),
                c => return Err(invalid(c, "in exponent of numeric literal")),
            }
        }
        Ok(())
    }

    fn literal(&mut self, word: &str) -> Result<(), String> {
        for want in word.bytes().skip(1) {
            let c = self.next()?;
            if c != want {
                return Err(invalid(
                    c,
                    &format!("in literal {word} (expecting {})", quote_char(want)),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The contexts of `encoding/json`'s scanner (`scanner.go`), one case each.
    #[test]
    fn syntax_errors_are_gos() {
        // (input, error)
        let cases: &[(&str, Option<&str>)] = &[
            (r#"{"a": [1, 2.5e-3, true, null, "x\u00e9"]}"#, None),
            ("  []  ", None),
            ("", Some("unexpected end of JSON input")),
            (
                r#"{"apiVersion":"v1","kind":"ConfigMap""#,
                Some("unexpected end of JSON input"),
            ),
            (
                "{\"a\":1,}",
                Some("invalid character '}' looking for beginning of object key string"),
            ),
            (
                "{a:1}",
                Some("invalid character 'a' looking for beginning of object key string"),
            ),
            ("{\"a\" 1}", Some("invalid character '1' after object key")),
            (
                "{\"a\":1 \"b\":2}",
                Some("invalid character '\"' after object key:value pair"),
            ),
            ("[1 2]", Some("invalid character '2' after array element")),
            (
                "[1,]",
                Some("invalid character ']' looking for beginning of value"),
            ),
            (
                "{\"a\":'x'}",
                Some(r"invalid character '\'' looking for beginning of value"),
            ),
            (
                "\"a\nb\"",
                Some(r"invalid character '\n' in string literal"),
            ),
            (
                r#""\q""#,
                Some("invalid character 'q' in string escape code"),
            ),
            (
                r#""\u12g4""#,
                Some(r"invalid character 'g' in \u hexadecimal character escape"),
            ),
            ("-x", Some("invalid character 'x' in numeric literal")),
            (
                "1.x",
                Some("invalid character 'x' after decimal point in numeric literal"),
            ),
            (
                "1ex",
                Some("invalid character 'x' in exponent of numeric literal"),
            ),
            ("01", Some("invalid character '1' after top-level value")),
            ("tru", Some("unexpected end of JSON input")),
            (
                "trux",
                Some("invalid character 'x' in literal true (expecting 'e')"),
            ),
            (
                "nul1",
                Some("invalid character '1' in literal null (expecting 'l')"),
            ),
            ("{} {}", Some("invalid character '{' after top-level value")),
            (
                "apiVersion: v1",
                Some("invalid character 'a' looking for beginning of value"),
            ),
        ];
        for (input, want) in cases {
            assert_eq!(
                syntax_error(input.as_bytes()).as_deref(),
                *want,
                "{input:?}"
            );
        }
    }

    /// Depth is bounded as Go bounds it (10,000 open containers), and deep input is scanned
    /// without recursion (the hostile-input test sends 10,000 and more).
    #[test]
    fn nesting_is_limited_without_recursion() {
        let ok = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        assert_eq!(syntax_error(ok.as_bytes()), None);
        let deep = "[".repeat(1_000_000);
        assert_eq!(
            syntax_error(deep.as_bytes()).as_deref(),
            Some("invalid character '[' exceeded max depth")
        );
        let deep = "{\"a\":".repeat(20_000);
        assert_eq!(
            syntax_error(deep.as_bytes()).as_deref(),
            Some("invalid character '{' exceeded max depth")
        );
    }

    #[test]
    fn summaries_are_kube_apiservers() {
        // (body, summary)
        let cases = [
            ("", "<empty>"),
            ("{\"a\":1", "{\"a\":1"),
            (
                r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"#,
                r#"{"apiVersion":"v1","kind":"Con ..."#,
            ),
            ("xyz", "78797a"),
        ];
        for (body, want) in cases {
            assert_eq!(summarize(body.as_bytes()), want, "{body}");
        }
    }
}
