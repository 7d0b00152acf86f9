//! Go RE2 patterns on the `regex` crate: Go's `\d`, `\w`, `\s` and `\b` are ASCII-only, octal
//! escapes and `\Q…\E` exist, and `[` or `&&` inside a class are literals. Compiled patterns
//! are cached, because the same schema patterns are matched on every request.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use regex::{Regex, RegexBuilder};

/// How many compiled patterns the cache keeps before it starts over.
const CACHE_LIMIT: usize = 1024;

type Compiled = Result<Arc<Regex>, String>;

static CACHE: LazyLock<Mutex<HashMap<String, Compiled>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// Compiles a Go regular expression, or returns a Go-like error text.
pub(crate) fn compile(pattern: &str) -> Compiled {
    {
        let cache = CACHE.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(c) = cache.get(pattern) {
            return c.clone();
        }
    }
    let compiled = translate(pattern).and_then(|p| {
        RegexBuilder::new(&p)
            .size_limit(32 * (1 << 20))
            .build()
            .map(Arc::new)
            .map_err(|e| error_text(pattern, &e))
    });
    let mut cache = CACHE.lock().unwrap_or_else(PoisonError::into_inner);
    if cache.len() >= CACHE_LIMIT {
        cache.clear();
    }
    cache.insert(pattern.to_string(), compiled.clone());
    compiled
}

fn error_text(pattern: &str, e: &regex::Error) -> String {
    let text = e.to_string();
    let reason = text
        .lines()
        .rev()
        .find_map(|l| l.trim().strip_prefix("error: "))
        .map_or_else(
            || text.lines().next().unwrap_or("").trim().to_string(),
            ToString::to_string,
        );
    format!("error parsing regexp: {reason}: `{pattern}`")
}

const DIGIT: &str = "0-9";
const WORD: &str = "0-9A-Za-z_";
const SPACE: &str = "\\t\\n\\f\\r ";

/// Rewrites a Go pattern into the `regex` crate's dialect with Go's meaning.
pub(crate) fn translate(pattern: &str) -> Result<String, String> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut i = 0;
    let mut in_class = false;
    while i < chars.len() {
        let ch = chars[i];
        if ch == '\\' {
            let Some(&next) = chars.get(i + 1) else {
                return Err(
                    "error parsing regexp: trailing backslash at end of expression: ``".to_string(),
                );
            };
            i += 2;
            match next {
                'd' | 'w' | 's' => {
                    let set = class_body(next);
                    if in_class {
                        out.push_str(set);
                    } else {
                        out.push('[');
                        out.push_str(set);
                        out.push(']');
                    }
                }
                'D' | 'W' | 'S' => {
                    out.push_str("[^");
                    out.push_str(class_body(next.to_ascii_lowercase()));
                    out.push(']');
                }
                'b' | 'B' if !in_class => {
                    out.push_str("(?-u:\\");
                    out.push(next);
                    out.push(')');
                }
                'Q' => {
                    while i < chars.len() {
                        if chars[i] == '\\' && chars.get(i + 1) == Some(&'E') {
                            i += 2;
                            break;
                        }
                        push_literal(&mut out, chars[i]);
                        i += 1;
                    }
                }
                '0'..='7' => {
                    // Go: `\0` and `\1`-`\7` followed by an octal digit are octal escapes.
                    if next != '0' && !chars.get(i).is_some_and(|d| ('0'..='7').contains(d)) {
                        return Err(format!(
                            "error parsing regexp: invalid escape sequence: `\\{next}`"
                        ));
                    }
                    let mut value = next.to_digit(8).unwrap_or(0);
                    let mut count = 1;
                    while count < 3 {
                        match chars.get(i).and_then(|d| d.to_digit(8)) {
                            Some(d) => {
                                value = value * 8 + d;
                                i += 1;
                                count += 1;
                            }
                            None => break,
                        }
                    }
                    let _ = write!(out, "\\x{{{value:x}}}");
                }
                _ => {
                    out.push('\\');
                    out.push(next);
                }
            }
            continue;
        }
        if in_class {
            match ch {
                ']' => {
                    in_class = false;
                    out.push(']');
                }
                '[' => {
                    if chars.get(i + 1) == Some(&':') {
                        // A POSIX class such as `[:alpha:]`, copied to its `:]`.
                        let rest: String = chars[i..].iter().collect();
                        if let Some(end) = rest.find(":]") {
                            out.push_str(&rest[..end + 2]);
                            i += rest[..end + 2].chars().count();
                            continue;
                        }
                    }
                    out.push_str("\\[");
                }
                '&' | '~' => {
                    out.push('\\');
                    out.push(ch);
                }
                '-' if chars.get(i + 1) == Some(&'-') => {
                    out.push_str("-\\-");
                    i += 1;
                }
                _ => out.push(ch),
            }
            i += 1;
            continue;
        }
        if ch == '[' {
            in_class = true;
            out.push('[');
            i += 1;
            if chars.get(i) == Some(&'^') {
                out.push('^');
                i += 1;
            }
            if chars.get(i) == Some(&']') {
                out.push_str("\\]");
                i += 1;
            }
            continue;
        }
        out.push(ch);
        i += 1;
    }
    Ok(out)
}

fn class_body(c: char) -> &'static str {
    match c {
        'd' => DIGIT,
        'w' => WORD,
        _ => SPACE,
    }
}

fn push_literal(out: &mut String, c: char) {
    if c.is_ascii_punctuation() || c == ' ' {
        out.push('\\');
    }
    out.push(c);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(p: &str, s: &str) -> bool {
        compile(p).is_ok_and(|r| r.is_match(s))
    }

    #[test]
    fn ascii_classes() {
        assert!(matches(r"^\d+$", "123"));
        assert!(!matches(r"^\d+$", "١٢٣"));
        assert!(!matches(r"^\w+$", "é"));
        assert!(matches(r"^[\w.-]+$", "a.b-c_1"));
        assert!(!matches(r"^\s$", "\u{0b}"));
        assert!(matches(r"^\S+$", "abc"));
        assert!(matches(r"^[^\d]+$", "abc"));
        assert!(matches(r"^[\D]+$", "abc"));
        assert!(matches(r"\bfoo\b", "a foo b"));
        assert!(matches(
            r"^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$",
            "* * * * */5"
        ));
        assert!(!matches(
            r"^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$",
            "* * * *"
        ));
    }

    #[test]
    fn go_only_syntax() {
        assert!(matches(r"^\101$", "A"));
        assert!(matches(r"^\Q.*\E$", ".*"));
        assert!(matches(r"^[a[]+$", "a[a"));
        assert!(matches(r"^[]a]+$", "]a"));
        assert!(matches(r"^[a&&b]+$", "a&b"));
        assert!(matches(r"^[[:alpha:]]+$", "abc"));
    }

    #[test]
    fn errors_do_not_panic() {
        let e = compile("(a").unwrap_err();
        assert!(e.starts_with("error parsing regexp: "), "{e}");
        assert!(compile("\\").is_err());
        assert!(compile(r"\1").is_err());
    }
}
