//! apimachinery's `resource.Quantity` as validation compares and prints it: parsed exactly
//! (binary suffixes multiplied out, precision rounded up to nano as `ParseQuantity` rounds),
//! ordered by value, and printed in its canonical form (`Quantity.String()`: `1.5` is `1500m`,
//! `1024Ki` is `1Mi`, `1000m` is `1`), because upstream's messages print that form
//! (`must be less than or equal to cpu limit of 1`).
//!
//! Values beyond what an `i128` mantissa holds are not represented ([`Quantity::parse`] gives
//! `None`); syntax errors are [`crate::go_decode::quantity`]'s to report.

use std::cmp::Ordering;
use std::fmt;

/// How a quantity prints: the family of its suffix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `Ki`, `Mi`, ... (base 1024).
    BinarySi,
    /// `m`, `k`, `M`, ... or none.
    DecimalSi,
    /// `e3`, `E6`.
    DecimalExponent,
}

/// A parsed quantity: `mantissa × 10^scale`.
#[derive(Clone, Copy, Debug)]
pub struct Quantity {
    mantissa: i128,
    scale: i32,
    format: Format,
}

/// The decimal SI suffixes and the powers of ten they stand for.
pub(crate) const DECIMAL_SUFFIXES: [(&str, i32); 10] = [
    ("n", -9),
    ("u", -6),
    ("m", -3),
    ("", 0),
    ("k", 3),
    ("M", 6),
    ("G", 9),
    ("T", 12),
    ("P", 15),
    ("E", 18),
];

/// The binary SI suffixes: the n-th stands for 1024^n.
pub(crate) const BINARY_SUFFIXES: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];

/// Nano: the finest precision a quantity keeps.
const NANO: i32 = -9;

impl Quantity {
    /// Parses a quantity's text as `resource.ParseQuantity` does; `None` for text it refuses or
    /// values too large to hold here.
    pub fn parse(text: &str) -> Option<Self> {
        crate::go_decode::quantity(text).ok()?;
        let s = text.trim();
        let (negative, rest) = match s.as_bytes().first()? {
            b'-' => (true, &s[1..]),
            b'+' => (false, &s[1..]),
            _ => (false, s),
        };
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, suffix) = rest.split_at(number_end);
        let (int, frac) = number.split_once('.').unwrap_or((number, ""));
        let (format, exp) =
            if let Some(&(_, power)) = DECIMAL_SUFFIXES.iter().find(|(text, _)| *text == suffix) {
                (Format::DecimalSi, power)
            } else if let Some(n) = BINARY_SUFFIXES.iter().position(|text| *text == suffix) {
                (Format::BinarySi, 10 * i32::try_from(n).ok()?)
            } else {
                let digits = suffix.strip_prefix(['e', 'E'])?;
                (Format::DecimalExponent, digits.parse::<i32>().ok()?)
            };
        let digits = format!("{int}{frac}");
        let mut mantissa: i128 = if digits.is_empty() {
            0
        } else {
            digits.parse().ok()?
        };
        let mut scale = -i32::try_from(frac.len()).ok()?;
        if format == Format::BinarySi {
            mantissa = mantissa.checked_mul(1i128.checked_shl(u32::try_from(exp).ok()?)?)?;
        } else {
            scale = scale.checked_add(exp)?;
        }
        // `ParseQuantity` rounds non-zero values up (away from zero) to nano.
        if scale < NANO {
            let divisor = 10i128.checked_pow(u32::try_from(NANO - scale).ok()?)?;
            let rounded_up = mantissa / divisor + i128::from(mantissa % divisor != 0);
            mantissa = rounded_up;
            scale = NANO;
        }
        if negative {
            mantissa = -mantissa;
        }
        let mut q = Quantity {
            mantissa,
            scale,
            format,
        };
        // A binary quantity strictly between zero and one prints as decimal (`ParseQuantity`'s
        // slow path).
        if q.format == Format::BinarySi
            && q.mantissa > 0
            && q.cmp_value(&Quantity::int(1)) == Ordering::Less
        {
            q.format = Format::DecimalSi;
        }
        Some(q)
    }

    fn int(v: i128) -> Self {
        Quantity {
            mantissa: v,
            scale: 0,
            format: Format::DecimalSi,
        }
    }

    /// Whether the value is below zero.
    pub fn is_negative(&self) -> bool {
        self.mantissa < 0
    }

    /// Whether the value is zero (`ValidatePositiveQuantityValue` refuses it).
    pub fn is_zero(&self) -> bool {
        self.mantissa == 0
    }

    /// Orders two quantities by value (`Quantity.Cmp`).
    pub fn cmp_value(&self, other: &Self) -> Ordering {
        let scale = self.scale.min(other.scale);
        let widen = |q: &Quantity| {
            10i128
                .checked_pow(u32::try_from(q.scale - scale).unwrap_or(u32::MAX))
                .and_then(|f| q.mantissa.checked_mul(f))
        };
        match (widen(self), widen(other)) {
            (Some(a), Some(b)) => a.cmp(&b),
            // One side overflowed when widened: it has the larger magnitude.
            (None, _) => {
                if self.mantissa < 0 {
                    Ordering::Less
                } else {
                    Ordering::Greater
                }
            }
            (_, None) => {
                if other.mantissa < 0 {
                    Ordering::Greater
                } else {
                    Ordering::Less
                }
            }
        }
    }

    /// The value as an integer, when it is one.
    fn integer(&self) -> Option<i128> {
        if self.scale >= 0 {
            return 10i128
                .checked_pow(u32::try_from(self.scale).ok()?)
                .and_then(|f| self.mantissa.checked_mul(f));
        }
        let f = 10i128.checked_pow(u32::try_from(-self.scale).ok()?)?;
        (self.mantissa % f == 0).then_some(self.mantissa / f)
    }
}

/// Divides out `base` while it divides `value` evenly (`removeInt64Factors`).
fn remove_factors(mut value: i128, base: i128) -> (i128, i32) {
    let mut times = 0;
    while value != 0 && value % base == 0 {
        value /= base;
        times += 1;
    }
    (value, times)
}

impl fmt::Display for Quantity {
    /// `Quantity.String()`: the canonical form.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.mantissa == 0 {
            return f.write_str("0");
        }
        if self.format == Format::BinarySi
            && self.cmp_value(&Quantity::int(-1024)) == Ordering::Greater
            && self.cmp_value(&Quantity::int(1024)) == Ordering::Less
        {
            return self.decimal(Format::DecimalSi, f);
        }
        if self.format == Format::BinarySi {
            let Some(value) = self.integer() else {
                return self.decimal(Format::DecimalSi, f);
            };
            let (amount, times) = remove_factors(value, 1024);
            let suffix = BINARY_SUFFIXES
                .get(usize::try_from(times).unwrap_or(usize::MAX))
                .copied()
                .unwrap_or("");
            return write!(f, "{amount}{suffix}");
        }
        self.decimal(self.format, f)
    }
}

impl Quantity {
    /// `AsCanonicalBytes` and the decimal suffixes: an exponent that is a multiple of three.
    fn decimal(&self, format: Format, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (mut amount, times) = remove_factors(self.mantissa, 10);
        let mut exponent = self.scale + times;
        let (factor, down) = match exponent % 3 {
            1 | -2 => (10, 1),
            2 | -1 => (100, 2),
            _ => (1, 0),
        };
        match amount.checked_mul(factor) {
            Some(a) => {
                amount = a;
                exponent -= down;
            }
            // Beyond any real quantity: printed unaligned rather than overflowing.
            None => return write!(f, "{amount}e{exponent}"),
        }
        let suffix = match format {
            Format::DecimalExponent if exponent == 0 => String::new(),
            Format::DecimalExponent => format!("e{exponent}"),
            _ => DECIMAL_SUFFIXES
                .iter()
                .find(|(_, power)| *power == exponent)
                .map_or("", |(text, _)| text)
                .to_owned(),
        };
        write!(f, "{amount}{suffix}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_forms_are_apimachinerys() {
        let cases = [
            ("2", "2"),
            ("-1", "-1"),
            ("0", "0"),
            ("0.5", "500m"),
            ("1.5", "1500m"),
            ("1000m", "1"),
            ("100m", "100m"),
            ("1500m", "1500m"),
            ("1k", "1k"),
            ("1000", "1k"),
            ("1024Ki", "1Mi"),
            ("1Gi", "1Gi"),
            ("1536Mi", "1536Mi"),
            ("1.5Gi", "1536Mi"),
            ("512", "512"),
            ("100Ki", "100Ki"),
            ("0.5Ki", "512"),
            ("-64Mi", "-64Mi"),
            ("-0.5Ki", "-512"),
            ("1e3", "1e3"),
            ("1.5e3", "1500"),
            ("12E6", "12e6"),
            ("0.1n", "1n"),
            ("1.0000000001", "1000000001n"),
            (" 3 ", "3"),
        ];
        for (text, want) in cases {
            let q = Quantity::parse(text).unwrap_or_else(|| panic!("{text}"));
            assert_eq!(q.to_string(), want, "{text}");
        }
        assert!(Quantity::parse("1x").is_none());
        // Too many digits for the mantissa: not represented, never a panic.
        assert!(Quantity::parse(&"9".repeat(60)).is_none());
        let huge = Quantity::parse(&format!("{}0", "1".repeat(37))).unwrap();
        assert!(!huge.to_string().is_empty());
    }

    #[test]
    fn quantities_order_by_value() {
        let q = |s: &str| Quantity::parse(s).unwrap();
        assert_eq!(q("1").cmp_value(&q("1000m")), Ordering::Equal);
        assert_eq!(q("2").cmp_value(&q("1")), Ordering::Greater);
        assert_eq!(q("1Gi").cmp_value(&q("1G")), Ordering::Greater);
        assert_eq!(q("500m").cmp_value(&q("0.5")), Ordering::Equal);
        assert_eq!(q("-1").cmp_value(&q("0")), Ordering::Less);
        assert!(q("-1").is_negative());
        assert!(!q("0").is_negative());
    }
}
