//! Bearer-token authentication, with tokens in kube-apiserver's `--token-auth-file` CSV format:
//! `token,user,uid[,"group1,group2"]`.
//!
//! Main types: [`TokenAuthenticator`], [`User`].

use std::collections::HashMap;
use std::path::Path;

use anyhow::Context;

/// An authenticated user.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct User {
    /// The user name.
    pub name: String,
    /// The user's UID.
    pub uid: String,
    /// The groups the user belongs to.
    pub groups: Vec<String>,
}

/// Maps bearer tokens to users.
#[derive(Clone, Debug, Default)]
pub struct TokenAuthenticator {
    tokens: HashMap<String, User>,
    /// The first token of a `system:masters` member, in file order.
    admin: Option<String>,
}

impl TokenAuthenticator {
    /// Parses a token file. Lines that are empty or start with `#` are skipped.
    pub fn parse(text: &str) -> anyhow::Result<Self> {
        let mut tokens = HashMap::new();
        let mut admin = None;
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let fields = split_csv(line);
            if fields.len() < 3 {
                anyhow::bail!("token file line {}: expected at least 3 fields", i + 1);
            }
            let groups: Vec<String> = fields
                .get(3)
                .map(|g| {
                    g.split(',')
                        .map(str::trim)
                        .filter(|s| !s.is_empty())
                        .map(String::from)
                        .collect()
                })
                .unwrap_or_default();
            if fields[0].is_empty() {
                anyhow::bail!("token file line {}: empty token", i + 1);
            }
            if admin.is_none() && groups.iter().any(|g| g == "system:masters") {
                admin = Some(fields[0].clone());
            }
            tokens.insert(
                fields[0].clone(),
                User {
                    name: fields[1].clone(),
                    uid: fields[2].clone(),
                    groups,
                },
            );
        }
        Ok(TokenAuthenticator { tokens, admin })
    }

    /// Reads and parses a token file.
    pub fn from_file(path: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading token file {}", path.display()))?;
        Self::parse(&text).with_context(|| format!("parsing token file {}", path.display()))
    }

    /// The first token of a `system:masters` member, written into the kubeconfig.
    pub fn admin_token(&self) -> Option<&str> {
        self.admin.as_deref()
    }

    /// Looks up the user of an `Authorization` header value.
    pub fn authenticate(&self, authorization: Option<&str>) -> Option<&User> {
        let value = authorization?;
        let (scheme, token) = value.trim().split_once(' ')?;
        if !scheme.eq_ignore_ascii_case("bearer") {
            return None;
        }
        self.tokens.get(token.trim())
    }
}

/// Splits one CSV line, honouring double quotes (enough for the token file format).
fn split_csv(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    out.push(cur);
    out.into_iter().map(|s| s.trim().to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kube_token_file() {
        let a = TokenAuthenticator::parse(
            "# comment\nsecret,admin,1,\"system:masters,devs\"\nother,bob,2\n",
        )
        .unwrap();
        let admin = a.authenticate(Some("Bearer secret")).unwrap();
        assert_eq!(admin.name, "admin");
        assert_eq!(admin.groups, vec!["system:masters", "devs"]);
        assert_eq!(a.authenticate(Some("bearer other")).unwrap().name, "bob");
        assert!(a.authenticate(Some("Bearer nope")).is_none());
        assert!(a.authenticate(Some("Basic secret")).is_none());
        assert!(a.authenticate(None).is_none());
    }

    #[test]
    fn rejects_short_lines() {
        assert!(TokenAuthenticator::parse("abc,def").is_err());
    }
}
