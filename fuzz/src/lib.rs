//! Helpers the fuzz targets share: how one fuzz input is cut into the parts a target needs.
//!
//! Inputs are text where the real input is text, so seeds stay readable and editable: a target
//! that needs several documents reads them separated by a line `%%`, and a target with modes reads
//! the mode from its first byte (seeds use the digits `0`-`9`).

/// The separator line between the parts of one input.
pub const SEPARATOR: &[u8] = b"\n%%\n";

/// Splits an input into at most `n` parts at the separator line (the last part keeps the rest).
pub fn parts(data: &[u8], n: usize) -> Vec<&[u8]> {
    let mut out = Vec::with_capacity(n);
    let mut rest = data;
    while out.len() + 1 < n {
        match rest.windows(SEPARATOR.len()).position(|w| w == SEPARATOR) {
            Some(i) => {
                out.push(&rest[..i]);
                rest = &rest[i + SEPARATOR.len()..];
            }
            None => break,
        }
    }
    out.push(rest);
    out
}

/// Takes the mode byte: the first byte of the input, counted from `'0'`, modulo `modes`.
pub fn mode(data: &[u8], modes: u8) -> (u8, &[u8]) {
    match data.split_first() {
        Some((b, rest)) => (b.wrapping_sub(b'0') % modes, rest),
        None => (0, data),
    }
}

/// Parses a JSON document, `None` when it is not one (the target then has nothing to do).
pub fn json(bytes: &[u8]) -> Option<serde_json::Value> {
    serde_json::from_slice(bytes).ok()
}

/// Splits off the first line (the rest follows the newline).
pub fn first_line(data: &[u8]) -> (&[u8], &[u8]) {
    match data.iter().position(|&b| b == b'\n') {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[]),
    }
}
