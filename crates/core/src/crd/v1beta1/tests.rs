//! Data-driven cases of the v1beta1 ↔ v1 conversion and defaults: literal YAML in and out,
//! after upstream's `conversion_test.go` and `defaults_test.go` (release-1.21).

use serde_json::Value;

use super::*;

fn yaml(s: &str) -> Value {
    serde_saphyr::from_str(s).expect("test YAML parses")
}

/// (name, v1beta1 as a client sends it after defaulting, the v1 it becomes).
const V1BETA1_TO_V1: &[(&str, &str, &str)] = &[
    (
        "version alone becomes a single served storage version; top-level fields go to it",
        r"
apiVersion: apiextensions.k8s.io/v1beta1
kind: CustomResourceDefinition
metadata: {name: crontabs.stable.example.com}
spec:
  group: stable.example.com
  version: v1
  scope: Namespaced
  names: {plural: crontabs, kind: CronTab}
  preserveUnknownFields: false
  validation:
    openAPIV3Schema:
      type: object
      properties:
        spec: {type: object, properties: {replicas: {type: integer}}}
  subresources:
    status: {}
    scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}
  additionalPrinterColumns:
  - {name: Replicas, type: integer, JSONPath: .spec.replicas}
",
        r"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: crontabs.stable.example.com}
spec:
  group: stable.example.com
  scope: Namespaced
  names: {plural: crontabs, kind: CronTab}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {replicas: {type: integer}}}
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}
    additionalPrinterColumns:
    - {name: Replicas, type: integer, jsonPath: .spec.replicas}
",
    ),
    (
        "top-level validation is copied into every version; preserveUnknownFields true stays",
        r"
apiVersion: apiextensions.k8s.io/v1beta1
kind: CustomResourceDefinition
metadata: {name: crontabs.example.com}
spec:
  group: example.com
  version: v1beta1
  versions:
  - {name: v1beta1, served: true, storage: true}
  - {name: v1, served: true, storage: false}
  validation:
    openAPIV3Schema:
      type: object
      properties: {host: {type: string}, port: {type: string}}
  conversion: {strategy: None}
  scope: Namespaced
  preserveUnknownFields: true
  names: {plural: crontabs, singular: crontab, kind: CronTab, listKind: CronTabList, shortNames: [ct]}
",
        r"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: crontabs.example.com}
spec:
  group: example.com
  versions:
  - name: v1beta1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties: {host: {type: string}, port: {type: string}}
  - name: v1
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties: {host: {type: string}, port: {type: string}}
  conversion: {strategy: None}
  scope: Namespaced
  preserveUnknownFields: true
  names: {plural: crontabs, singular: crontab, kind: CronTab, listKind: CronTabList, shortNames: [ct]}
",
    ),
    (
        "webhook settings move under conversion.webhook; per-version columns are renamed",
        r"
apiVersion: apiextensions.k8s.io/v1beta1
kind: CustomResourceDefinition
metadata: {name: crontabs.example.com}
spec:
  group: example.com
  preserveUnknownFields: false
  versions:
  - name: v1beta1
    served: true
    storage: true
    additionalPrinterColumns: [{name: Host, type: string, JSONPath: .hostPort}]
  - name: v1
    served: true
    storage: false
  conversion:
    strategy: Webhook
    conversionReviewVersions: [v1, v1beta1]
    webhookClientConfig:
      service: {namespace: default, name: example-conversion-webhook-server, path: /crdconvert, port: 443}
  scope: Namespaced
  names: {plural: crontabs, kind: CronTab}
",
        r"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: crontabs.example.com}
spec:
  group: example.com
  versions:
  - name: v1beta1
    served: true
    storage: true
    additionalPrinterColumns: [{name: Host, type: string, jsonPath: .hostPort}]
  - name: v1
    served: true
    storage: false
  conversion:
    strategy: Webhook
    webhook:
      conversionReviewVersions: [v1, v1beta1]
      clientConfig:
        service: {namespace: default, name: example-conversion-webhook-server, path: /crdconvert, port: 443}
  scope: Namespaced
  names: {plural: crontabs, kind: CronTab}
",
    ),
];

/// (name, v1 as stored, the v1beta1 a read answers).
const V1_TO_V1BETA1: &[(&str, &str, &str)] = &[
    (
        "identical per-version fields are hoisted; preserveUnknownFields is always written",
        r"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: crontabs.stable.example.com}
spec:
  group: stable.example.com
  scope: Namespaced
  names: {plural: crontabs, kind: CronTab}
  conversion: {strategy: None}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object}}
    subresources: {status: {}}
    additionalPrinterColumns: [{name: Age, type: date, jsonPath: .metadata.creationTimestamp}]
  - name: v2
    served: true
    storage: false
    schema: {openAPIV3Schema: {type: object}}
    subresources: {status: {}}
    additionalPrinterColumns: [{name: Age, type: date, jsonPath: .metadata.creationTimestamp}]
status:
  storedVersions: [v1]
",
        r"
apiVersion: apiextensions.k8s.io/v1beta1
kind: CustomResourceDefinition
metadata: {name: crontabs.stable.example.com}
spec:
  group: stable.example.com
  version: v1
  scope: Namespaced
  names: {plural: crontabs, kind: CronTab}
  conversion: {strategy: None}
  preserveUnknownFields: false
  validation: {openAPIV3Schema: {type: object}}
  subresources: {status: {}}
  additionalPrinterColumns: [{name: Age, type: date, JSONPath: .metadata.creationTimestamp}]
  versions:
  - {name: v1, served: true, storage: true}
  - {name: v2, served: true, storage: false}
status:
  storedVersions: [v1]
",
    ),
    (
        "different per-version fields stay per version; the webhook is flattened",
        r"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: crontabs.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: crontabs, kind: CronTab}
  conversion:
    strategy: Webhook
    webhook:
      conversionReviewVersions: [v1]
      clientConfig: {url: 'https://my-webhook.example.com:9443/my-webhook-path'}
  versions:
  - name: v1beta1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, properties: {hostPort: {type: string}}}}
    additionalPrinterColumns: [{name: HostPort, type: string, jsonPath: .hostPort}]
  - name: v1
    served: true
    storage: false
    schema: {openAPIV3Schema: {type: object, properties: {host: {type: string}}}}
",
        r"
apiVersion: apiextensions.k8s.io/v1beta1
kind: CustomResourceDefinition
metadata: {name: crontabs.example.com}
spec:
  group: example.com
  version: v1beta1
  scope: Namespaced
  names: {plural: crontabs, kind: CronTab}
  preserveUnknownFields: false
  conversion:
    strategy: Webhook
    conversionReviewVersions: [v1]
    webhookClientConfig: {url: 'https://my-webhook.example.com:9443/my-webhook-path'}
  versions:
  - name: v1beta1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, properties: {hostPort: {type: string}}}}
    additionalPrinterColumns: [{name: HostPort, type: string, JSONPath: .hostPort}]
  - name: v1
    served: true
    storage: false
    schema: {openAPIV3Schema: {type: object, properties: {host: {type: string}}}}
",
    ),
];

#[test]
fn v1beta1_converts_to_v1() {
    for (name, input, want) in V1BETA1_TO_V1 {
        assert_eq!(to_v1(yaml(input)), yaml(want), "{name}");
    }
}

#[test]
fn v1_converts_to_v1beta1() {
    for (name, input, want) in V1_TO_V1BETA1 {
        assert_eq!(from_v1(yaml(input)), yaml(want), "{name}");
    }
}

#[test]
fn v1beta1_round_trips_through_v1() {
    // What a v1beta1 client wrote (defaulted, in the hoisted form) reads back unchanged.
    for (name, input, _) in V1BETA1_TO_V1 {
        let mut original = yaml(input);
        set_defaults(&mut original);
        let back = from_v1(to_v1(original.clone()));
        assert_eq!(back, original, "{name}");
    }
    for (name, input, _) in V1_TO_V1BETA1 {
        let original = yaml(input);
        assert_eq!(to_v1(from_v1(original.clone())), original, "{name}");
    }
}

#[test]
fn defaults_are_those_of_v1beta1() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "the seed's minimal CRD",
            r"
apiVersion: apiextensions.k8s.io/v1beta1
kind: CustomResourceDefinition
metadata: {name: crontabs.example.com}
spec:
  group: example.com
  versions:
  - {name: v1beta1, served: true, storage: true}
  names: {plural: crontabs, kind: CronTab}
",
            r"
apiVersion: apiextensions.k8s.io/v1beta1
kind: CustomResourceDefinition
metadata: {name: crontabs.example.com}
spec:
  group: example.com
  version: v1beta1
  versions:
  - {name: v1beta1, served: true, storage: true}
  scope: Namespaced
  names: {plural: crontabs, singular: crontab, kind: CronTab, listKind: CronTabList}
  conversion: {strategy: None}
  preserveUnknownFields: true
status: {storedVersions: [v1beta1]}
",
        ),
        (
            "spec.version alone; a webhook gets conversionReviewVersions [v1beta1] and port 443",
            r"
apiVersion: apiextensions.k8s.io/v1beta1
kind: CustomResourceDefinition
metadata: {name: crontabs.example.com}
spec:
  group: example.com
  version: v1
  scope: Cluster
  preserveUnknownFields: false
  names: {plural: crontabs, singular: ct, kind: CronTab, listKind: Tabs}
  conversion:
    strategy: Webhook
    webhookClientConfig: {service: {namespace: default, name: hook}}
",
            r"
apiVersion: apiextensions.k8s.io/v1beta1
kind: CustomResourceDefinition
metadata: {name: crontabs.example.com}
spec:
  group: example.com
  version: v1
  versions:
  - {name: v1, served: true, storage: true}
  scope: Cluster
  preserveUnknownFields: false
  names: {plural: crontabs, singular: ct, kind: CronTab, listKind: Tabs}
  conversion:
    strategy: Webhook
    conversionReviewVersions: [v1beta1]
    webhookClientConfig: {service: {namespace: default, name: hook, port: 443}}
status: {storedVersions: [v1]}
",
        ),
    ];
    for (name, input, want) in cases {
        let mut got = yaml(input);
        set_defaults(&mut got);
        assert_eq!(got, yaml(want), "{name}");
    }
}

#[test]
fn v1beta1_only_checks() {
    let base = r"
apiVersion: apiextensions.k8s.io/v1beta1
kind: CustomResourceDefinition
metadata: {name: crontabs.example.com}
spec:
  group: example.com
  names: {plural: crontabs, kind: CronTab}
";
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "top-level validation",
            r"
  validation: {openAPIV3Schema: {type: object}}
  versions:
  - {name: v1, served: true, storage: true}
  - {name: v2, served: true, storage: false}
",
            &[],
        ),
        (
            "top-level and per-version schemas",
            r"
  validation: {openAPIV3Schema: {type: object}}
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}
  - {name: v2, served: true, storage: false}
",
            &[
                "spec.validation: Forbidden: top-level and per-version schemas are mutually exclusive",
            ],
        ),
        (
            "one version with its own schema",
            r"
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}
",
            &[
                "spec.versions: Invalid value: [{\"name\":\"v1\",\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\"}},\"served\":true,\"storage\":true}]: per-version schemas may not all be set to identical values (top-level validation should be used instead)",
            ],
        ),
        (
            "identical columns and subresources",
            r"
  versions:
  - {name: v1, served: true, storage: true, subresources: {status: {}}, additionalPrinterColumns: [{name: A, type: string, JSONPath: .a}]}
  - {name: v2, served: true, storage: false, subresources: {status: {}}, additionalPrinterColumns: [{name: A, type: string, JSONPath: .a}]}
",
            &[
                "spec.versions: Invalid value: [{\"additionalPrinterColumns\":[{\"JSONPath\":\".a\",\"name\":\"A\",\"type\":\"string\"}],\"name\":\"v1\",\"served\":true,\"storage\":true,\"subresources\":{\"status\":{}}},{\"additionalPrinterColumns\":[{\"JSONPath\":\".a\",\"name\":\"A\",\"type\":\"string\"}],\"name\":\"v2\",\"served\":true,\"storage\":false,\"subresources\":{\"status\":{}}}]: per-version subresources may not all be set to identical values (top-level subresources should be used instead)",
                "spec.versions: Invalid value: [{\"additionalPrinterColumns\":[{\"JSONPath\":\".a\",\"name\":\"A\",\"type\":\"string\"}],\"name\":\"v1\",\"served\":true,\"storage\":true,\"subresources\":{\"status\":{}}},{\"additionalPrinterColumns\":[{\"JSONPath\":\".a\",\"name\":\"A\",\"type\":\"string\"}],\"name\":\"v2\",\"served\":true,\"storage\":false,\"subresources\":{\"status\":{}}}]: per-version additionalPrinterColumns may not all be set to identical values (top-level additionalPrinterColumns should be used instead)",
            ],
        ),
        (
            "spec.version not first",
            r"
  version: v2
  versions:
  - {name: v1, served: true, storage: true}
  - {name: v2, served: true, storage: false}
",
            &["spec.version: Invalid value: \"v2\": must match the first version in spec.versions"],
        ),
    ];
    for (name, spec_tail, want) in cases {
        let obj = yaml(&format!("{base}{spec_tail}"));
        let got: Vec<String> = validate_shape(&obj)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(got, *want, "{name}");
    }
}
