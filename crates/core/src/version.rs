//! Kube-aware version ordering (apimachinery `pkg/version/helpers.go`).
//!
//! Discovery documents, the storage-version choice and `kubectl` all list a group's versions by
//! "priority": GA before beta before alpha, then by major and minor number, and versions that do
//! not look like Kubernetes versions (`foo1`, `v1beta`, `V1`) last, in alphabetical order.

use std::cmp::Ordering;

/// The stability level of a kube-like version; the derived order is the priority order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum VersionType {
    Alpha,
    Beta,
    Ga,
}

/// A version string that matched `^v([0-9]+)(?:(alpha|beta)([0-9]+))?$`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct KubeVersion {
    major: i64,
    kind: VersionType,
    minor: i64,
}

/// Parses ASCII digits as Go's `strconv.Atoi` does on 64-bit platforms; `None` on overflow,
/// which makes the whole version non-kube-like, as upstream.
fn parse_digits(s: &str) -> Option<i64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Recognises a kube-like version (`v1`, `v2beta3`, `v10alpha1`) without a regex.
fn parse_kube_version(v: &str) -> Option<KubeVersion> {
    let rest = v.strip_prefix('v')?;
    let digits_end = rest
        .bytes()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(rest.len());
    let major = parse_digits(&rest[..digits_end])?;
    let tail = &rest[digits_end..];
    if tail.is_empty() {
        return Some(KubeVersion {
            major,
            kind: VersionType::Ga,
            minor: 0,
        });
    }
    let (kind, minor) = if let Some(m) = tail.strip_prefix("alpha") {
        (VersionType::Alpha, m)
    } else if let Some(m) = tail.strip_prefix("beta") {
        (VersionType::Beta, m)
    } else {
        return None;
    };
    Some(KubeVersion {
        major,
        kind,
        minor: parse_digits(minor)?,
    })
}

/// Compares two version strings by Kubernetes priority, as upstream's
/// `CompareKubeAwareVersionStrings`: `Greater` means `a` has the HIGHER priority.
///
/// Kube-like versions beat the others; among kube-like ones GA beats beta beats alpha, then the
/// higher major, then the higher minor wins. Two non-kube-like strings compare in reverse
/// byte order, so that a descending sort lists them alphabetically. `v01` and `v1` compare
/// `Equal` although they are different strings.
pub fn compare_kube_aware_versions(a: &str, b: &str) -> Ordering {
    if a == b {
        return Ordering::Equal;
    }
    match (parse_kube_version(a), parse_kube_version(b)) {
        (None, None) => b.cmp(a),
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some(x), Some(y)) => x
            .kind
            .cmp(&y.kind)
            .then(x.major.cmp(&y.major))
            .then(x.minor.cmp(&y.minor)),
    }
}

/// Sorts versions by descending priority (highest first), the order discovery and the
/// CustomResourceDefinition helpers use: `v10, v2, v1, v11beta2, v10beta3, v3beta1, v12alpha1,
/// v11alpha2, foo1, foo10`. The sort is stable, so equal-priority strings keep their order.
pub fn sort_by_priority(versions: &mut [String]) {
    versions.sort_by(|a, b| compare_kube_aware_versions(b, a));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn sorts_the_upstream_example_from_any_starting_order() {
        let want = [
            "v10",
            "v2",
            "v1",
            "v11beta2",
            "v10beta3",
            "v3beta1",
            "v12alpha1",
            "v11alpha2",
            "foo1",
            "foo10",
        ];
        let shuffles: [&[&str]; 4] = [
            &[
                "foo10",
                "v3beta1",
                "v1",
                "v12alpha1",
                "foo1",
                "v10beta3",
                "v2",
                "v11alpha2",
                "v11beta2",
                "v10",
            ],
            &[
                "v11alpha2",
                "foo1",
                "v10",
                "foo10",
                "v2",
                "v12alpha1",
                "v1",
                "v3beta1",
                "v10beta3",
                "v11beta2",
            ],
            &[
                "foo1",
                "foo10",
                "v11alpha2",
                "v12alpha1",
                "v3beta1",
                "v10beta3",
                "v11beta2",
                "v1",
                "v2",
                "v10",
            ],
            &want,
        ];
        for input in shuffles {
            let mut got = strings(input);
            sort_by_priority(&mut got);
            assert_eq!(got, strings(&want), "input {input:?}");
        }
    }

    #[test]
    fn compares_pairs_as_upstream() {
        use Ordering::{Equal, Greater, Less};
        // (a, b, expected ordering of a relative to b; Greater = a has higher priority)
        let cases: &[(&str, &str, Ordering)] = &[
            ("v1", "v1", Equal),
            ("v2", "v1", Greater),
            ("v1", "v2", Less),
            ("v10", "v2", Greater),
            ("v1", "v2beta1", Greater),
            ("v1beta1", "v1alpha9", Greater),
            ("v1beta2", "v1beta10", Less),
            ("v2beta1", "v1beta2", Greater),
            ("v1alpha1", "foo", Greater),
            ("foo", "v1alpha1", Less),
            // Two non-kube strings: reversed byte comparison.
            ("foo1", "foo10", Greater),
            ("a", "b", Greater),
            // `v1beta` has no minor number, so it is not kube-like.
            ("v1beta", "v1alpha1", Less),
            ("v1beta", "zzz", Greater),
            // Upper-case `V` is not kube-like.
            ("V1", "v1alpha1", Less),
            ("V1", "V2", Greater),
            // Leading zeros parse as the same number but the strings differ.
            ("v01", "v1", Equal),
            ("v01", "v2", Less),
            ("v1beta01", "v1beta1", Equal),
            // Garbage and overflow are non-kube-like, never panics.
            ("", "v1", Less),
            ("v", "v1", Less),
            ("v99999999999999999999", "v1alpha1", Less),
            ("v1gamma1", "v1alpha1", Less),
            ("v1beta1x", "v1alpha1", Less),
            ("v-1", "v1alpha1", Less),
            ("v1\u{661}", "v1alpha1", Less), // Arabic-Indic digit is not \d in RE2
            ("v١", "", Less),
            ("v1alpha", "v1beta", Greater),
        ];
        for &(a, b, want) in cases {
            assert_eq!(compare_kube_aware_versions(a, b), want, "{a:?} vs {b:?}");
        }
    }

    #[test]
    fn sort_keeps_equal_priorities_in_input_order() {
        let mut v = strings(&["v01", "v1", "v001"]);
        sort_by_priority(&mut v);
        assert_eq!(v, strings(&["v01", "v1", "v001"]));
        let mut empty: Vec<String> = Vec::new();
        sort_by_priority(&mut empty);
        assert!(empty.is_empty());
    }
}
