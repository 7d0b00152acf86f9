//! The string formats Kubernetes validates (kube-openapi's `strfmt.Default` registry, limited to
//! the formats apiextensions-apiserver keeps). Unknown formats are ignored, as upstream strips them.

use std::sync::LazyLock;

use regex::Regex;

/// The format names Kubernetes keeps, with `-` removed (`date-time` → `datetime`).
const SUPPORTED: &[&str] = &[
    "bsonobjectid",
    "uri",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "cidr",
    "mac",
    "uuid",
    "uuid3",
    "uuid4",
    "uuid5",
    "isbn",
    "isbn10",
    "isbn13",
    "creditcard",
    "ssn",
    "hexcolor",
    "rgbcolor",
    "byte",
    "password",
    "date",
    "duration",
    "datetime",
    "k8sshortname",
    "k8slongname",
];

fn normalize(format: &str) -> String {
    format.replace('-', "")
}

/// Whether a schema `format` is validated at all (others are stripped and ignored).
pub(crate) fn is_supported(format: &str) -> bool {
    !format.is_empty() && SUPPORTED.contains(&normalize(format).as_str())
}

/// Whether `s` is valid for a supported `format`; unsupported formats accept everything.
pub(crate) fn is_valid(format: &str, s: &str) -> bool {
    match normalize(format).as_str() {
        "bsonobjectid" => s.len() == 24 && s.bytes().all(|b| b.is_ascii_hexdigit()),
        "uri" => is_request_uri(s),
        "email" => is_email(s),
        "hostname" => is_hostname(s),
        "ipv4" => parse_ip(s, true) && s.contains('.'),
        "ipv6" => parse_ip(s, false) && s.contains(':'),
        "cidr" => is_cidr(s),
        "mac" => is_mac(s),
        "uuid" => UUID.is_match(s),
        "uuid3" => UUID3.is_match(s),
        "uuid4" => UUID4.is_match(s),
        "uuid5" => UUID5.is_match(s),
        "isbn" => is_isbn10(s) || is_isbn13(s),
        "isbn10" => is_isbn10(s),
        "isbn13" => is_isbn13(s),
        "creditcard" => is_credit_card(s),
        "ssn" => s.len() == 11 && SSN.is_match(s),
        "hexcolor" => HEXCOLOR.is_match(s),
        "rgbcolor" => RGBCOLOR.is_match(s),
        "byte" => BASE64.is_match(s),
        "date" => is_date(s),
        "duration" => is_duration(s),
        "datetime" => is_date_time(s),
        "k8sshortname" => s.len() <= 63 && SHORT_NAME.is_match(s),
        "k8slongname" => s.len() <= 253 && LONG_NAME.is_match(s),
        _ => true,
    }
}

fn re(p: &str) -> Regex {
    Regex::new(p).unwrap_or_else(|_| Regex::new("$^").unwrap_or_else(|_| unreachable!()))
}

static UUID: LazyLock<Regex> =
    LazyLock::new(|| re("(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$"));
static UUID3: LazyLock<Regex> =
    LazyLock::new(|| re("(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$"));
static UUID4: LazyLock<Regex> = LazyLock::new(|| {
    re("(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$")
});
static UUID5: LazyLock<Regex> = LazyLock::new(|| {
    re("(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$")
});
static SSN: LazyLock<Regex> = LazyLock::new(|| re(r"^[0-9]{3}[- ]?[0-9]{2}[- ]?[0-9]{4}$"));
static HEXCOLOR: LazyLock<Regex> = LazyLock::new(|| re(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$"));
static RGBCOLOR: LazyLock<Regex> = LazyLock::new(|| {
    let n = r"(0|[1-9][0-9]?|1[0-9][0-9]?|2[0-4][0-9]|25[0-5])";
    let s = r"[\t\n\f\r ]*";
    re(&format!(r"^rgb\({s}{n}{s},{s}{n}{s},{s}{n}{s}\)$"))
});
static BASE64: LazyLock<Regex> = LazyLock::new(|| {
    re(r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$")
});
static CREDIT_CARD: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35[0-9]{3})[0-9]{11})$",
    )
});
static SHORT_NAME: LazyLock<Regex> = LazyLock::new(|| re("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"));
static LONG_NAME: LazyLock<Regex> =
    LazyLock::new(|| re(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"));
static SYMBOL_OR_LETTER: LazyLock<Regex> = LazyLock::new(|| re(r"^[\p{S}\p{L}]$"));
static LETTER: LazyLock<Regex> = LazyLock::new(|| re(r"^\p{L}$"));
static DATE_TIME: LazyLock<Regex> = LazyLock::new(|| {
    re(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$")
});
static SCALA_DURATION: LazyLock<Regex> =
    LazyLock::new(|| re(r"((?:-[\t\n\f\r ]?)?[0-9]+)[\t\n\f\r ]*([A-Za-zµ]+)"));

/// A hostname label character: `[a-zA-Z0-9\p{S}\p{L}]`.
fn host_char(c: char) -> bool {
    c.is_ascii_alphanumeric()
        || (!c.is_ascii() && SYMBOL_OR_LETTER.is_match(c.encode_utf8(&mut [0; 4])))
}

fn tld_char(c: char) -> bool {
    c.is_ascii_alphabetic() || (!c.is_ascii() && LETTER.is_match(c.encode_utf8(&mut [0; 4])))
}

/// strfmt's `HostnamePattern`, then the 255-byte and 63-byte-per-label limits.
fn is_hostname(s: &str) -> bool {
    if s.len() > 255 || s.split('.').any(|p| p.len() > 63) {
        return false;
    }
    let labels: Vec<&str> = s.split('.').collect();
    if labels.len() == 1 {
        // `C(-?C){0,62}`
        let chars: Vec<char> = s.chars().collect();
        let Some((&first, rest)) = chars.split_first() else {
            return false;
        };
        if !host_char(first) {
            return false;
        }
        let mut i = 0;
        let mut groups = 0;
        while i < rest.len() {
            if rest[i] == '-' {
                i += 1;
            }
            match rest.get(i) {
                Some(&c) if host_char(c) => i += 1,
                _ => return false,
            }
            groups += 1;
        }
        return groups <= 62;
    }
    let Some((tld, names)) = labels.split_last() else {
        return false;
    };
    let tld_len = tld.chars().count();
    if !(2..=63).contains(&tld_len) || !tld.chars().all(tld_char) {
        return false;
    }
    names.iter().all(|label| {
        let chars: Vec<char> = label.chars().collect();
        match chars.as_slice() {
            [] => false,
            [c] => host_char(*c),
            [first, middle @ .., last] => {
                host_char(*first)
                    && host_char(*last)
                    && middle.len() <= 61
                    && middle.iter().all(|&c| c == '-' || host_char(c))
            }
        }
    })
}

/// `net/mail.ParseAddress` succeeds with a non-empty address (a close approximation).
fn is_email(s: &str) -> bool {
    let s = s.trim_matches(|c| c == ' ' || c == '\t');
    if s.is_empty() {
        return false;
    }
    if let Some(body) = s.strip_suffix('>') {
        let Some(open) = body.rfind('<') else {
            return false;
        };
        let name = body[..open].trim();
        if !is_display_name(name) {
            return false;
        }
        return is_addr_spec(body[open + 1..].trim());
    }
    is_addr_spec(s)
}

fn is_atext(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-/=?^_`{|}~".contains(c) || !c.is_ascii()
}

fn is_display_name(name: &str) -> bool {
    if name.is_empty() {
        return true;
    }
    if let Some(inner) = name.strip_prefix('"').and_then(|n| n.strip_suffix('"')) {
        return !inner.contains('"') || inner.contains("\\\"");
    }
    name.chars()
        .all(|c| is_atext(c) || c == ' ' || c == '.' || c == '\t')
}

fn is_dot_atom(s: &str) -> bool {
    !s.is_empty()
        && s.split('.')
            .all(|a| !a.is_empty() && a.chars().all(is_atext))
}

fn is_addr_spec(s: &str) -> bool {
    let (local, domain) = if let Some(rest) = s.strip_prefix('"') {
        // quoted local part, with backslash escapes
        let mut escaped = false;
        let mut end = None;
        for (i, c) in rest.char_indices() {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                end = Some(i);
                break;
            }
        }
        let Some(end) = end else {
            return false;
        };
        let Some(domain) = rest[end + 1..].strip_prefix('@') else {
            return false;
        };
        ("\"q\"", domain)
    } else {
        let Some((local, domain)) = s.split_once('@') else {
            return false;
        };
        // Go parses the local part permissively: stray dots are accepted.
        if local.is_empty() || !local.chars().all(|c| is_atext(c) || c == '.') {
            return false;
        }
        (local, domain)
    };
    if local.is_empty() {
        return false;
    }
    if let Some(lit) = domain.strip_prefix('[') {
        return lit
            .strip_suffix(']')
            .is_some_and(|l| !l.contains(['[', ']', '\\']));
    }
    is_dot_atom(domain)
}

/// `url.ParseRequestURI` succeeds.
fn is_request_uri(s: &str) -> bool {
    if s.is_empty() || s.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return false;
    }
    if s == "*" {
        return true;
    }
    // getScheme
    let mut scheme = "";
    let mut rest = s;
    for (i, c) in s.char_indices() {
        if c.is_ascii_alphabetic() {
            continue;
        }
        if c.is_ascii_digit() || c == '+' || c == '-' || c == '.' {
            if i == 0 {
                break;
            }
            continue;
        }
        if c == ':' {
            if i == 0 {
                return false;
            }
            scheme = &s[..i];
            rest = &s[i + 1..];
        }
        break;
    }
    if rest.ends_with('?') && rest.matches('?').count() == 1 {
        rest = &rest[..rest.len() - 1];
    } else if let Some((r, _)) = rest.split_once('?') {
        rest = r;
    }
    if !rest.starts_with('/') {
        return !scheme.is_empty();
    }
    if !scheme.is_empty() && rest.starts_with("//") {
        let authority = &rest[2..];
        let (authority, path) = match authority.find('/') {
            Some(i) => (&authority[..i], &authority[i..]),
            None => (authority, ""),
        };
        if !valid_authority(authority) {
            return false;
        }
        return valid_escapes(path, false);
    }
    valid_escapes(rest, false)
}

fn valid_escapes(text: &str, host: bool) -> bool {
    let bytes = text.as_bytes();
    let mut pos = 0;
    while pos < bytes.len() {
        if bytes[pos] == b'%' {
            let (Some(high), Some(low)) = (bytes.get(pos + 1), bytes.get(pos + 2)) else {
                return false;
            };
            if !high.is_ascii_hexdigit() || !low.is_ascii_hexdigit() {
                return false;
            }
            // In a host, %-escapes may only encode non-ASCII bytes (and `%25`).
            if host && (*high as char).to_digit(16).unwrap_or(0) < 8 && &text[pos..pos + 3] != "%25"
            {
                return false;
            }
            pos += 3;
            continue;
        }
        if host && bytes[pos] < 0x80 && !host_byte_ok(bytes[pos]) {
            return false;
        }
        pos += 1;
    }
    true
}

fn host_byte_ok(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-_.~!$&'()*+,;=:[]<>\"".contains(&b)
}

fn valid_authority(authority: &str) -> bool {
    let host = match authority.rfind('@') {
        Some(i) => {
            let user = &authority[..i];
            if !user
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-._:~!$&'()*+,;=%@".contains(&b))
            {
                return false;
            }
            &authority[i + 1..]
        }
        None => authority,
    };
    let valid_port = |p: &str| {
        p.is_empty()
            || p.strip_prefix(':')
                .is_some_and(|d| d.bytes().all(|b| b.is_ascii_digit()))
    };
    if host.starts_with('[') {
        let Some(close) = host.rfind(']') else {
            return false;
        };
        if !valid_port(&host[close + 1..]) {
            return false;
        }
        return valid_escapes(&host[1..close], false);
    }
    if let Some(i) = host.rfind(':')
        && !valid_port(&host[i..])
    {
        return false;
    }
    valid_escapes(host, true)
}

/// Go's IPv4 parsing; `sloppy` accepts leading zeros as Go before 1.17 did.
fn parse_ipv4(s: &str, sloppy: bool) -> bool {
    let parts: Vec<&str> = s.split('.').collect();
    parts.len() == 4
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.len() <= 3
                && p.bytes().all(|b| b.is_ascii_digit())
                && (sloppy || p.len() == 1 || !p.starts_with('0'))
                && p.parse::<u16>().is_ok_and(|n| n <= 255)
        })
}

fn parse_ipv6(s: &str, sloppy: bool) -> bool {
    let (head, tail, ellipsis) = match s.find("::") {
        Some(i) => (&s[..i], &s[i + 2..], true),
        None => (s, "", false),
    };
    if ellipsis && tail.contains("::") {
        return false;
    }
    let count = |part: &str, allow_v4: bool| -> Option<usize> {
        if part.is_empty() {
            return Some(0);
        }
        let groups: Vec<&str> = part.split(':').collect();
        let mut n = 0;
        for (i, g) in groups.iter().enumerate() {
            if allow_v4 && i == groups.len() - 1 && g.contains('.') {
                if !parse_ipv4(g, sloppy) {
                    return None;
                }
                n += 2;
            } else if !g.is_empty() && g.len() <= 4 && g.bytes().all(|b| b.is_ascii_hexdigit()) {
                n += 1;
            } else {
                return None;
            }
        }
        Some(n)
    };
    if ellipsis {
        let (Some(h), Some(t)) = (count(head, false), count(tail, true)) else {
            return false;
        };
        h + t < 8
    } else {
        count(head, true) == Some(8)
    }
}

/// `net.ParseIP` (strict) or `ParseIPSloppy`: the first `.` or `:` decides the family.
fn parse_ip(s: &str, sloppy: bool) -> bool {
    match s.find(['.', ':']) {
        Some(i) if s.as_bytes()[i] == b'.' => parse_ipv4(s, sloppy),
        Some(_) => parse_ipv6(s, sloppy),
        None => false,
    }
}

fn is_cidr(s: &str) -> bool {
    let Some((ip, mask)) = s.split_once('/') else {
        return false;
    };
    let bits = match ip.find(['.', ':']) {
        Some(i) if ip.as_bytes()[i] == b'.' && parse_ipv4(ip, true) => 32,
        Some(_) if parse_ipv6(ip, true) => 128,
        _ => return false,
    };
    !mask.is_empty()
        && mask.bytes().all(|b| b.is_ascii_digit())
        && mask.parse::<u32>().is_ok_and(|n| n <= bits)
}

/// `net.ParseMAC`: EUI-48, EUI-64 or 20-octet `IPoIB`, in `:`, `-` or `.` notation.
fn is_mac(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 14 {
        return false;
    }
    let hex2 = |x: &[u8]| x.len() == 2 && x.iter().all(u8::is_ascii_hexdigit);
    if b[2] == b':' || b[2] == b'-' {
        if !(b.len() + 1).is_multiple_of(3) {
            return false;
        }
        let n = (b.len() + 1) / 3;
        if !matches!(n, 6 | 8 | 20) {
            return false;
        }
        (0..n).all(|i| hex2(&b[3 * i..3 * i + 2]) && (i == n - 1 || b[3 * i + 2] == b[2]))
    } else if b[4] == b'.' {
        if !(b.len() + 1).is_multiple_of(5) {
            return false;
        }
        let n = 2 * (b.len() + 1) / 5;
        if !matches!(n, 6 | 8 | 20) {
            return false;
        }
        (0..n / 2).all(|i| {
            let g = &b[5 * i..5 * i + 4];
            g.iter().all(u8::is_ascii_hexdigit) && (i == n / 2 - 1 || b[5 * i + 4] == b'.')
        })
    } else {
        false
    }
}

fn strip_isbn(s: &str) -> Vec<u8> {
    s.bytes()
        .filter(|b| !matches!(b, b'\t' | b'\n' | b'\x0c' | b'\r' | b' ' | b'-'))
        .collect()
}

fn is_isbn10(s: &str) -> bool {
    let d = strip_isbn(s);
    if d.len() != 10
        || !d[..9].iter().all(u8::is_ascii_digit)
        || !(d[9].is_ascii_digit() || d[9] == b'X')
    {
        return false;
    }
    let mut sum: u32 = (0..9)
        .map(|i| (i as u32 + 1) * u32::from(d[i] - b'0'))
        .sum();
    sum += 10
        * if d[9] == b'X' {
            10
        } else {
            u32::from(d[9] - b'0')
        };
    sum.is_multiple_of(11)
}

fn is_isbn13(s: &str) -> bool {
    let d = strip_isbn(s);
    if d.len() != 13 || !d.iter().all(u8::is_ascii_digit) {
        return false;
    }
    let sum: u32 = (0..12)
        .map(|i| if i % 2 == 0 { 1 } else { 3 } * u32::from(d[i] - b'0'))
        .sum();
    u32::from(d[12] - b'0') == (10 - sum % 10) % 10
}

fn is_credit_card(s: &str) -> bool {
    let digits: String = s.chars().filter(char::is_ascii_digit).collect();
    if !CREDIT_CARD.is_match(&digits) {
        return false;
    }
    let mut sum = 0;
    let mut double = false;
    for b in digits.bytes().rev() {
        let mut n = u32::from(b - b'0');
        if double {
            n *= 2;
            if n >= 10 {
                n = n % 10 + 1;
            }
        }
        sum += n;
        double = !double;
    }
    sum % 10 == 0
}

fn days_in(month: u32, year: i64) -> u32 {
    match month {
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// `time.Parse("2006-01-02", s)` succeeds.
fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let num = |r: std::ops::Range<usize>| -> Option<u32> {
        let part = &s[r];
        if part.bytes().all(|c| c.is_ascii_digit()) {
            part.parse().ok()
        } else {
            None
        }
    };
    let (Some(year), Some(month), Some(day)) = (num(0..4), num(5..7), num(8..10)) else {
        return false;
    };
    (1..=12).contains(&month) && day >= 1 && day <= days_in(month, i64::from(year))
}

/// strfmt's `IsDateTime`.
fn is_date_time(s: &str) -> bool {
    if s.len() < 4 {
        return false;
    }
    let lower = s.to_lowercase();
    let parts: Vec<&str> = lower.split('t').collect();
    if parts.len() < 2 || !is_date(parts[0]) {
        return false;
    }
    let Some(m) = DATE_TIME.captures(parts[1]) else {
        return false;
    };
    let g = |i: usize| m.get(i).map_or("", |x| x.as_str());
    g(1) <= "23" && g(2) <= "59" && g(3) <= "59"
}

/// Go's `time.ParseDuration` succeeds.
fn is_go_duration(s: &str) -> bool {
    let mut s = s.strip_prefix(['-', '+']).unwrap_or(s);
    if s == "0" {
        return true;
    }
    if s.is_empty() {
        return false;
    }
    let mut total: u128 = 0;
    while !s.is_empty() {
        let b = s.as_bytes();
        if !(b[0] == b'.' || b[0].is_ascii_digit()) {
            return false;
        }
        let int_len = s.bytes().take_while(u8::is_ascii_digit).count();
        let int_part = &s[..int_len];
        s = &s[int_len..];
        let mut frac_len = 0;
        if let Some(rest) = s.strip_prefix('.') {
            frac_len = rest.bytes().take_while(u8::is_ascii_digit).count();
            s = &rest[frac_len..];
        }
        if int_len == 0 && frac_len == 0 {
            return false;
        }
        let unit_len = s
            .char_indices()
            .find(|&(_, c)| c == '.' || c.is_ascii_digit())
            .map_or(s.len(), |(i, _)| i);
        if unit_len == 0 {
            return false;
        }
        let unit: u128 = match &s[..unit_len] {
            "ns" => 1,
            "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return false,
        };
        s = &s[unit_len..];
        let Ok(v) = int_part
            .parse::<u128>()
            .or(if int_part.is_empty() { Ok(0) } else { Err(()) })
        else {
            return false;
        };
        if v > (1u128 << 63) / unit {
            return false;
        }
        total += v * unit;
        if total > 1u128 << 63 {
            return false;
        }
    }
    true
}

/// strfmt's Scala-like duration units; the last variant of each also matches as a prefix.
const UNITS: &[&[&str]] = &[
    &["ns", "nano"],
    &["us", "µs", "micro"],
    &["ms", "milli"],
    &["s", "sec"],
    &["m", "min"],
    &["h", "hr", "hour"],
    &["d", "day"],
    &["w", "wk", "week"],
];

/// strfmt's `ParseDuration`: Go's syntax, else Scala-like `<n> <unit>` fragments.
fn is_duration(s: &str) -> bool {
    if is_go_duration(s) {
        return true;
    }
    let mut ok = false;
    for m in SCALA_DURATION.captures_iter(s) {
        let number = m.get(1).map_or("", |x| x.as_str());
        let digits = number.trim_start_matches('-').trim();
        if digits.parse::<i64>().is_err() {
            return false;
        }
        let unit = m.get(2).map_or("", |x| x.as_str()).trim().to_lowercase();
        for variants in UNITS {
            let last = variants.len() - 1;
            for (i, v) in variants.iter().enumerate() {
                if (i == last && unit.starts_with(v)) || v.eq_ignore_ascii_case(&unit) {
                    ok = true;
                }
            }
        }
    }
    ok
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        let cases: &[(&str, &str, bool)] = &[
            ("email", "a@b.com", true),
            ("email", "Jane <jane@example.com>", true),
            ("email", "x", false),
            ("email", "a@", false),
            ("hostname", "example.com", true),
            ("hostname", "localhost", true),
            ("hostname", "a_b.com", false),
            ("hostname", "example.c0m", false),
            ("hostname", "-a.com", false),
            ("ipv4", "1.2.3.4", true),
            ("ipv4", "1.2.3.04", true),
            ("ipv4", "1.2.3", false),
            ("ipv4", "256.1.1.1", false),
            ("ipv6", "::1", true),
            ("ipv6", "2001:db8::8a2e:370:7334", true),
            ("ipv6", "::ffff:1.2.3.4", true),
            ("ipv6", "1.2.3.4", false),
            ("ipv6", "1:2:3:4:5:6:7:8:9", false),
            ("cidr", "10.0.0.0/8", true),
            ("cidr", "10.0.0.0/33", false),
            ("cidr", "::/0", true),
            ("mac", "00:00:5e:00:53:01", true),
            ("mac", "00-00-5e-00-53-01", true),
            ("mac", "0000.5e00.5301", true),
            ("mac", "00:00:5e:00:53", false),
            ("uuid", "123e4567-e89b-12d3-a456-426614174000", true),
            ("uuid", "123e4567", false),
            ("uuid4", "123e4567-e89b-42d3-a456-426614174000", true),
            ("uuid4", "123e4567-e89b-12d3-a456-426614174000", false),
            ("isbn10", "0316066524", true),
            ("isbn10", "0330301824", false),
            ("isbn13", "9780316066525", true),
            ("isbn", "978-0-316-06652-5", true),
            ("creditcard", "4111 1111 1111 1111", true),
            ("creditcard", "4111 1111 1111 1112", false),
            ("ssn", "123-45-6789", true),
            ("ssn", "123456789", false),
            ("hexcolor", "#ffF", true),
            ("hexcolor", "#fffff", false),
            ("rgbcolor", "rgb(255, 0, 12)", true),
            ("rgbcolor", "rgb(256,0,0)", false),
            ("byte", "aGVsbG8=", true),
            ("byte", "aGVsbG8", false),
            ("password", "anything", true),
            ("date", "2020-02-29", true),
            ("date", "2021-02-29", false),
            ("date", "2021-2-28", false),
            ("date-time", "2020-01-01T10:00:00Z", true),
            ("datetime", "2020-01-01T10:00:00.123+02:00", true),
            ("date-time", "2020-01-01T25:00:00Z", false),
            ("date-time", "2020-01-01", false),
            ("duration", "1h30m", true),
            ("duration", "5 seconds", true),
            ("duration", "1.5s", true),
            ("duration", "x", false),
            ("duration", "3 months", false),
            ("uri", "http://example.com/a", true),
            ("uri", "/path", true),
            ("uri", "mailto:a@b", true),
            ("uri", "foo", false),
            ("uri", "http://a b", false),
            ("bsonobjectid", "507f1f77bcf86cd799439011", true),
            ("bsonobjectid", "507f1f77bcf86cd79943901", false),
            ("k8s-short-name", "abc-1", true),
            ("k8s-short-name", "a.b", false),
            ("k8s-long-name", "a.b", true),
            ("unknownfmt", "whatever", true),
        ];
        for (f, s, want) in cases {
            assert_eq!(is_valid(f, s), *want, "{f} {s:?}");
        }
        assert!(is_supported("date-time"));
        assert!(!is_supported("int32"));
        assert!(!is_supported("unknownfmt"));
    }
}
