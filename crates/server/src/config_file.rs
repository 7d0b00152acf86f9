//! The `apiserver.config.k8s.io` files kube-apiserver reads at start-up (the authentication,
//! authorization and encryption configurations): YAML or JSON, recognised by `apiVersion` and
//! `kind` first (upstream's `no kind "X" is registered for version "Y" in scheme`), then decoded
//! strictly, so a misspelt field is refused rather than ignored.

use serde::Deserialize;
use serde::de::DeserializeOwned;

/// Decodes `text` as a `kind` of one of `versions`; `Err` is upstream's message.
pub fn decode<T: DeserializeOwned>(text: &str, kind: &str, versions: &[&str]) -> Result<T, String> {
    #[derive(Deserialize, Default)]
    #[serde(default, rename_all = "camelCase")]
    struct TypeMeta {
        api_version: String,
        kind: String,
    }
    let strict = |e: serde_saphyr::Error| format!("strict decoding error: {e}");
    let meta: TypeMeta = serde_saphyr::from_str(text).map_err(strict)?;
    if meta.kind != kind || !versions.contains(&meta.api_version.as_str()) {
        return Err(format!(
            "no kind \"{}\" is registered for version \"{}\" in scheme",
            meta.kind, meta.api_version
        ));
    }
    serde_saphyr::from_str(text).map_err(strict)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize, Debug, PartialEq)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    struct File {
        api_version: String,
        kind: String,
        #[serde(default)]
        items: Vec<String>,
    }

    #[test]
    fn the_kind_is_checked_before_the_fields() {
        let versions = ["example.io/v1", "example.io/v1beta1"];
        let ok: File = decode(
            "apiVersion: example.io/v1beta1\nkind: Thing\nitems: [a]\n",
            "Thing",
            &versions,
        )
        .unwrap();
        assert_eq!(ok.items, ["a"]);
        // (text, error)
        let cases = [
            (
                "apiVersion: example.io/v2\nkind: Thing\n",
                "no kind \"Thing\" is registered for version \"example.io/v2\" in scheme",
            ),
            (
                "apiVersion: v1\nkind: Config\nunknown: 1\n",
                "no kind \"Config\" is registered for version \"v1\" in scheme",
            ),
            (
                "{}",
                "no kind \"\" is registered for version \"\" in scheme",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(
                decode::<File>(text, "Thing", &versions).unwrap_err(),
                want,
                "{text}"
            );
        }
        let err = decode::<File>(
            "apiVersion: example.io/v1\nkind: Thing\nitemz: []\n",
            "Thing",
            &versions,
        )
        .unwrap_err();
        assert!(err.starts_with("strict decoding error: "), "{err}");
        assert!(err.contains("itemz"), "{err}");
    }
}
