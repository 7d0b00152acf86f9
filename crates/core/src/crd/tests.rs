//! Data-driven CRD validation cases: a JSON patch of the seed's CronTab CRD in, the rendered
//! field errors out.

use serde_json::{Value, json};

use super::*;

fn crontab() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "crontabs.stable.example.com"},
        "spec": {
            "group": "stable.example.com",
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "cronSpec": {"type": "string"}, "image": {"type": "string"},
                        "replicas": {"type": "integer"}}}}}}
            }],
            "scope": "Namespaced",
            "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab", "shortNames": ["ct"]}
        }
    })
}

fn merge(base: &mut Value, patch: &Value) {
    match (base, patch) {
        (Value::Object(b), Value::Object(p)) => {
            for (k, v) in p {
                if v.is_null() {
                    b.remove(k);
                } else {
                    merge(b.entry(k.clone()).or_insert(Value::Null), v);
                }
            }
        }
        (b, p) => *b = p.clone(),
    }
}

fn errors_for(patch: &Value) -> Vec<String> {
    let mut obj = crontab();
    merge(&mut obj, patch);
    set_defaults(&mut obj);
    let crd: CustomResourceDefinition = serde_json::from_value(obj).expect("decodes");
    validate_create(&crd)
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn defaults_fill_names_conversion_and_stored_versions() {
    let mut obj = crontab();
    set_defaults(&mut obj);
    assert_eq!(
        obj.pointer("/spec/names/listKind"),
        Some(&json!("CronTabList"))
    );
    assert_eq!(
        obj.pointer("/spec/conversion"),
        Some(&json!({"strategy": "None"}))
    );
    assert_eq!(obj.pointer("/status/storedVersions"), Some(&json!(["v1"])));
}

#[test]
fn create_cases() {
    let cases: Vec<(Value, Vec<&str>)> = vec![
        (json!({}), vec![]),
        (
            json!({"metadata": {"name": "crontab.stable.example.com"}}),
            vec![
                "metadata.name: Invalid value: \"crontab.stable.example.com\": must be spec.names.plural+\".\"+spec.group",
            ],
        ),
        (
            json!({"metadata": {"name": "crontabs.example"}, "spec": {"group": "example"}}),
            vec![
                "spec.group: Invalid value: \"example\": should be a domain with at least one dot",
            ],
        ),
        (
            json!({"spec": {"scope": "Global"}}),
            vec![
                "spec.scope: Unsupported value: \"Global\": supported values: \"Cluster\", \"Namespaced\"",
            ],
        ),
        (
            json!({"spec": {"names": {"kind": "CronTab", "listKind": "CronTab"}}}),
            vec![
                "spec.names.listKind: Invalid value: \"CronTab\": kind and listKind may not be the same",
            ],
        ),
        (
            json!({"spec": {"names": {"shortNames": ["C_T"]}}}),
            vec![
                "spec.names.shortNames[0]: Invalid value: \"C_T\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
            ],
        ),
        (
            json!({"spec": {"versions": [{"name": "v1", "served": true, "storage": false}]}}),
            vec![
                "spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required",
                "spec.versions: Invalid value: [{\"name\":\"v1\",\"served\":true,\"storage\":false}]: must have exactly one version marked as storage version",
                "status.storedVersions: Invalid value: null: must have at least one stored version",
            ],
        ),
        (
            json!({"spec": {"versions": [{"name": "v1", "served": true, "storage": true, "deprecationWarning": "x",
                "schema": {"openAPIV3Schema": {"type": "object"}}}]}}),
            vec![
                "spec.versions[0].deprecationWarning: Invalid value: \"x\": can only be set for deprecated versions",
            ],
        ),
        (
            json!({"spec": {"versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object"}},
                "additionalPrinterColumns": [{"name": "Spec", "type": "text", "jsonPath": "spec.cronSpec"}],
                "subresources": {"scale": {"specReplicasPath": ".status.replicas", "statusReplicasPath": ".status.replicas"}}}]}}),
            vec![
                "spec.subresources.scale.specReplicasPath: Invalid value: \".status.replicas\": should be a json path under .spec",
                "spec.additionalPrinterColumns[0].type: Invalid value: \"text\": must be one of boolean,date,integer,number,string",
                "spec.additionalPrinterColumns[0].JSONPath: Invalid value: \"spec.cronSpec\": must be a simple json path starting with .",
            ],
        ),
        (
            json!({"spec": {"conversion": {"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v2"],
                "clientConfig": {"url": "http://u:p@example.com/convert?x=1#f"}}}}}),
            vec![
                "spec.conversion.webhookClientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]",
                "spec.conversion.webhookClientConfig.url: Invalid value: \"u:p\": user information is not permitted in the URL",
                "spec.conversion.webhookClientConfig.url: Invalid value: \"f\": fragments are not permitted in the URL",
                "spec.conversion.webhookClientConfig.url: Invalid value: \"x=1\": query parameters are not permitted in the URL",
                "spec.conversion.conversionReviewVersions: Invalid value: [\"v2\"]: must include at least one of v1, v1beta1",
            ],
        ),
        (
            json!({"spec": {"conversion": {"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"],
                "clientConfig": {"service": {"name": "conv", "namespace": "default", "path": "/a//b"}}}}}}),
            vec![
                "spec.conversion.webhookClientConfig.service.path: Invalid value: \"/a//b\": segment[1] may not be empty",
            ],
        ),
        (
            // KEP-3945's strategy is a third supported value; its rules are checked by crd-cel.
            json!({"spec": {"conversion": {"strategy": "ConversionRules"}}}),
            vec![],
        ),
        (
            json!({"spec": {"conversion": {"strategy": "Rules"}}}),
            vec![
                "spec.conversion.strategy: Unsupported value: \"Rules\": supported values: \"None\", \"Webhook\", \"ConversionRules\"",
            ],
        ),
        (
            json!({"spec": {"preserveUnknownFields": true}}),
            vec![
                "spec.preserveUnknownFields: Invalid value: true: cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
            ],
        ),
        (
            json!({"metadata": {"name": "crontabs.stable.k8s.io"}, "spec": {"group": "stable.k8s.io"}}),
            vec![
                "metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have approval annotation \"api-approved.kubernetes.io\", see https://github.com/kubernetes/enhancements/pull/1111",
            ],
        ),
    ];
    for (patch, want) in cases {
        assert_eq!(errors_for(&patch), want, "patch {patch}");
    }
}

#[test]
fn update_rules() {
    let mut old_v = crontab();
    set_defaults(&mut old_v);
    let old: CustomResourceDefinition = serde_json::from_value(old_v.clone()).expect("decodes");

    // Dropping a stored version from spec.versions is refused.
    let mut new_v = old_v.clone();
    merge(
        &mut new_v,
        &json!({"spec": {"versions": [{"name": "v2", "served": true, "storage": true,
            "schema": {"openAPIV3Schema": {"type": "object"}}}]},
            "status": {"storedVersions": ["v1", "v2"]}}),
    );
    let new: CustomResourceDefinition = serde_json::from_value(new_v).expect("decodes");
    let got: Vec<String> = validate_update(&new, &old)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        got,
        vec![
            "status.storedVersions[0]: Invalid value: \"v1\": missing from spec.versions; v1 was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in v1 and removes v1 from status.storedVersions"
        ]
    );

    // The group and plural are immutable.
    let mut new_v = old_v.clone();
    merge(&mut new_v, &json!({"spec": {"names": {"plural": "crons"}}}));
    let new: CustomResourceDefinition = serde_json::from_value(new_v).expect("decodes");
    let got: Vec<String> = validate_update(&new, &old)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        got,
        vec![
            "metadata.name: Invalid value: \"crontabs.stable.example.com\": must be spec.names.plural+\".\"+spec.group",
            "spec.names.plural: Invalid value: \"crons\": field is immutable",
        ]
    );
}

#[test]
fn schema_locations_follow_the_internal_layout() {
    let one: CustomResourceDefinition = serde_json::from_value(crontab()).expect("decodes");
    let locs = schema_locations(&one.spec);
    assert_eq!(locs.len(), 1);
    assert_eq!(locs[0].path.as_str(), "spec.validation.openAPIV3Schema");
    let mut two = crontab();
    merge(
        &mut two,
        &json!({"spec": {"versions": [
            {"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object"}}},
            {"name": "v2", "served": true, "storage": false, "subresources": {"status": {}},
             "schema": {"openAPIV3Schema": {"type": "object", "properties": {"a": {"type": "string"}}}}}]}}),
    );
    let two: CustomResourceDefinition = serde_json::from_value(two).expect("decodes");
    let locs = schema_locations(&two.spec);
    assert_eq!(
        locs.iter()
            .map(|l| (l.path.as_str().to_string(), l.status_subresource))
            .collect::<Vec<_>>(),
        vec![
            ("spec.versions[0].schema.openAPIV3Schema".to_string(), false),
            ("spec.versions[1].schema.openAPIV3Schema".to_string(), true),
        ]
    );
}

/// Stored-version errors carry the list as given, as upstream's (1.34) do.
#[test]
fn stored_version_errors_carry_the_list() {
    let mut crd = crontab();
    merge(
        &mut crd,
        &json!({"status": {"storedVersions": ["v1alpha1"]}}),
    );
    let crd: CustomResourceDefinition = serde_json::from_value(crd).unwrap();
    let got: Vec<String> = validate_stored_versions(&crd)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        got,
        [
            "status.storedVersions: Invalid value: [\"v1alpha1\"]: must have the storage version v1",
            "status.storedVersions[0]: Invalid value: \"v1alpha1\": missing from spec.versions; v1alpha1 was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in v1alpha1 and removes v1alpha1 from status.storedVersions",
        ]
    );
}
