use super::*;
use base64::engine::general_purpose::STANDARD;

/// A PKCS#10 request in PEM, with the given subject organizations, signed by a fresh key.
fn request_pem(orgs: &[&str]) -> String {
    let key = rcgen::KeyPair::generate().expect("key");
    let mut params = rcgen::CertificateParams::new(vec!["svc.example.com".into()]).expect("params");
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "system:node:n1");
    for o in orgs {
        params
            .distinguished_name
            .push(rcgen::DnType::OrganizationName, *o);
    }
    params
        .serialize_request(&key)
        .expect("request")
        .pem()
        .expect("pem")
}

fn certificate_pem() -> String {
    let key = rcgen::KeyPair::generate().expect("key");
    rcgen::CertificateParams::new(vec!["svc.example.com".into()])
        .expect("params")
        .self_signed(&key)
        .expect("certificate")
        .pem()
}

fn b64(s: &str) -> String {
    STANDARD.encode(s)
}

fn csr(request: &str) -> Value {
    json!({
        "metadata": {"name": "c1"},
        "spec": {"request": b64(request), "signerName": "example.com/signer",
                 "usages": ["digital signature", "client auth"]},
        "status": {}
    })
}

fn messages(obj: &Value, old: Option<&Value>, endpoint: Endpoint) -> Vec<String> {
    let mut errs = ErrorList::new();
    validate(obj, old, endpoint, &mut errs);
    errs.iter().map(ToString::to_string).collect()
}

#[test]
fn create_stamps_the_requester_and_empties_the_status() {
    let extra = BTreeMap::from([("scopes".to_string(), vec!["a".to_string()])]);
    let groups = vec!["system:authenticated".to_string(), "dev".to_string()];
    let who = Requester {
        name: "alice",
        uid: "u-1",
        groups: &groups,
        extra: &extra,
    };
    let mut obj = json!({"spec": {"request": "x", "username": "mallory", "groups": ["system:masters"],
        "uid": "forged", "signerName": "example.com/s", "usages": ["any"]},
        "status": {"conditions": [{"type": "Approved", "status": "True"}]}});
    prepare_create(&mut obj, &who);
    assert_eq!(
        obj,
        json!({"spec": {"request": "x", "signerName": "example.com/s", "usages": ["any"],
            "username": "alice", "uid": "u-1", "groups": ["system:authenticated", "dev"],
            "extra": {"scopes": ["a"]}}, "status": {}})
    );
    // An anonymous-like requester without uid, groups or extra leaves them out.
    let none = BTreeMap::new();
    let mut bare = json!({"spec": {"uid": "forged"}});
    prepare_create(
        &mut bare,
        &Requester {
            name: "bob",
            uid: "",
            groups: &[],
            extra: &none,
        },
    );
    assert_eq!(bare, json!({"spec": {"username": "bob"}, "status": {}}));
}

#[test]
fn a_valid_request_passes_and_bad_ones_get_upstream_messages() {
    let good = request_pem(&["dev"]);
    assert_eq!(
        messages(&csr(&good), None, Endpoint::Main),
        Vec::<String>::new()
    );

    let not_pem = "hello";
    let got = messages(&csr(not_pem), None, Endpoint::Main);
    assert_eq!(
        got,
        vec![
            "spec.request: Invalid value: []byte{0x68, 0x65, 0x6c, 0x6c, 0x6f}: PEM block type must be CERTIFICATE REQUEST"
        ]
    );
    let wrong_label = certificate_pem();
    assert!(
        messages(&csr(&wrong_label), None, Endpoint::Main)[0]
            .ends_with(": PEM block type must be CERTIFICATE REQUEST")
    );

    // The signature no longer matches once the signed part changes.
    let (_, der) = x509_parser::pem::parse_x509_pem(good.as_bytes()).expect("pem");
    let mut bytes = der.contents.clone();
    let cn = bytes
        .windows(6)
        .position(|w| w == b"system")
        .expect("subject in the request");
    bytes[cn] = b'S';
    let tampered = format!(
        "-----BEGIN CERTIFICATE REQUEST-----\n{}\n-----END CERTIFICATE REQUEST-----\n",
        STANDARD.encode(&bytes)
    );
    let got = messages(&csr(&tampered), None, Endpoint::Main);
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(
        got[0].ends_with(": x509: ECDSA verification failure"),
        "{got:?}"
    );
}

#[test]
fn spec_fields_are_checked_as_upstream_checks_them() {
    let good = request_pem(&[]);
    let cases: Vec<(Value, Vec<&str>)> = vec![
        (json!({"usages": []}), vec!["spec.usages: Required value"]),
        (
            json!({"usages": ["digital signature", "teleport", "digital signature"]}),
            vec![
                "spec.usages[1]: Unsupported value: \"teleport\": supported values: \"any\", \"cert sign\", \"client auth\", \"code signing\", \"content commitment\", \"crl sign\", \"data encipherment\", \"decipher only\", \"digital signature\", \"email protection\", \"encipher only\", \"ipsec end system\", \"ipsec tunnel\", \"ipsec user\", \"key agreement\", \"key encipherment\", \"microsoft sgc\", \"netscape sgc\", \"ocsp signing\", \"s/mime\", \"server auth\", \"signing\", \"timestamping\"",
                "spec.usages[2]: Duplicate value: \"digital signature\"",
            ],
        ),
        (
            json!({"signerName": ""}),
            vec!["spec.signerName: Required value"],
        ),
        (
            json!({"signerName": "kubernetes.io/legacy-unknown"}),
            vec![
                "spec.signerName: Invalid value: \"kubernetes.io/legacy-unknown\": the legacy signerName is not allowed via this API version",
            ],
        ),
        (
            json!({"signerName": "example.com"}),
            vec![
                "spec.signerName: Invalid value: \"example.com\": must be a fully qualified domain and path of the form 'example.com/signer-name'",
            ],
        ),
        (
            json!({"signerName": "localhost/signer"}),
            vec![
                "spec.signerName: Invalid value: \"localhost\": should be a domain with at least two segments separated by dots",
            ],
        ),
        (
            json!({"signerName": "Example.com/Signer"}),
            vec![
                "spec.signerName: Invalid value: \"Example.com\": validating label \"Example\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                "spec.signerName: Invalid value: \"Signer\": validating label \"Signer\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            ],
        ),
        (
            json!({"expirationSeconds": 599}),
            vec![
                "spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 600 seconds (10 minutes)",
            ],
        ),
        (json!({"expirationSeconds": 600}), vec![]),
    ];
    for (spec, want) in cases {
        let mut obj = csr(&good);
        for (k, v) in spec.as_object().unwrap() {
            obj["spec"][k] = v.clone();
        }
        assert_eq!(messages(&obj, None, Endpoint::Main), want, "{spec}");
    }
}

fn with_conditions(obj: &Value, conditions: Value) -> Value {
    let mut o = obj.clone();
    o["status"]["conditions"] = conditions;
    o
}

#[test]
fn approval_sets_conditions_and_status_cannot() {
    let old = csr(&request_pem(&[]));
    let approved = with_conditions(
        &old,
        json!([{"type": "Approved", "status": "True", "reason": "KubectlApprove"}]),
    );
    // Through /approval: allowed.
    assert_eq!(
        messages(&approved, Some(&old), Endpoint::Approval),
        Vec::<String>::new()
    );
    // Through /status or the object itself: refused.
    assert_eq!(
        messages(&approved, Some(&old), Endpoint::Status),
        vec!["status.conditions: Forbidden: updates may not add a condition of type \"Approved\""]
    );
    // A condition only `True` may have, and Approved with Denied.
    let both = with_conditions(
        &old,
        json!([{"type": "Approved", "status": "False"}, {"type": "Denied", "status": "True"},
               {"type": "Custom", "status": "Maybe"}, {"type": "Custom", "status": "True"}]),
    );
    assert_eq!(
        messages(&both, Some(&old), Endpoint::Approval),
        vec![
            "status.conditions[0].status: Unsupported value: \"False\": supported values: \"True\"",
            "status.conditions[1].type: Invalid value: \"Denied\": Approved and Denied conditions are mutually exclusive",
            "status.conditions[2].status: Unsupported value: \"Maybe\": supported values: \"False\", \"True\", \"Unknown\"",
            "status.conditions[3].type: Duplicate value: \"Custom\"",
        ]
    );
    // Once approved, the condition stays.
    assert_eq!(
        messages(&old, Some(&approved), Endpoint::Approval),
        vec![
            "status.conditions: Forbidden: updates may not remove a condition of type \"Approved\""
        ]
    );
}

#[test]
fn the_certificate_is_set_once_through_status() {
    let old = with_conditions(
        &csr(&request_pem(&[])),
        json!([{"type": "Approved", "status": "True"}]),
    );
    let mut issued = old.clone();
    issued["status"]["certificate"] = json!(b64(&certificate_pem()));
    assert_eq!(
        messages(&issued, Some(&old), Endpoint::Status),
        Vec::<String>::new()
    );
    assert_eq!(
        messages(&issued, Some(&old), Endpoint::Approval),
        vec!["status.certificate: Forbidden: updates may not set certificate content"]
    );
    let mut reissued = issued.clone();
    reissued["status"]["certificate"] = json!(b64(&certificate_pem()));
    assert_eq!(
        messages(&reissued, Some(&issued), Endpoint::Status),
        vec!["status.certificate: Forbidden: updates may not modify existing certificate content"]
    );
    let mut junk = old.clone();
    junk["status"]["certificate"] = json!(b64(&request_pem(&[])));
    assert_eq!(
        messages(&junk, Some(&old), Endpoint::Status),
        vec![
            "status.certificate: Invalid value: \"<certificate data>\": only CERTIFICATE PEM blocks are allowed, found \"CERTIFICATE REQUEST\""
        ]
    );
    junk["status"]["certificate"] = json!(b64("no pem here"));
    assert_eq!(
        messages(&junk, Some(&old), Endpoint::Status),
        vec![
            "status.certificate: Invalid value: \"<certificate data>\": must contain at least one CERTIFICATE PEM block"
        ]
    );
}

#[test]
fn each_endpoint_changes_only_its_part() {
    const NOW: &str = "2026-12-02T10:00:00Z";
    let old = json!({"metadata": {"name": "c"}, "spec": {"signerName": "a.io/b", "username": "alice"},
        "status": {"conditions": [{"type": "Approved", "status": "True", "reason": "R",
            "lastUpdateTime": "2026-01-01T00:00:00Z", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}});
    let write = json!({"metadata": {"name": "c", "labels": {"l": "v"}},
        "spec": {"signerName": "evil.io/b", "username": "mallory"},
        "status": {"certificate": "Y2VydA==", "conditions": [
            {"type": "Approved", "status": "True", "reason": "Changed"},
            {"type": "Failed", "status": "True"}]}});
    let cases = [
        (
            Endpoint::Main,
            json!({"metadata": {"name": "c", "labels": {"l": "v"}}, "spec": old["spec"], "status": old["status"]}),
        ),
        (
            // The stored Approved condition is kept as it was; Failed is new and timed now.
            Endpoint::Status,
            json!({"metadata": {"name": "c", "labels": {"l": "v"}}, "spec": old["spec"],
                "status": {"certificate": "Y2VydA==", "conditions": [
                    old["status"]["conditions"][0],
                    {"type": "Failed", "status": "True", "lastUpdateTime": NOW, "lastTransitionTime": NOW}]}}),
        ),
        (
            // The conditions are the writer's; the transition time of an unchanged type and
            // status is kept; the certificate is not the approver's to set.
            Endpoint::Approval,
            json!({"metadata": {"name": "c", "labels": {"l": "v"}}, "spec": old["spec"],
                "status": {"conditions": [
                    {"type": "Approved", "status": "True", "reason": "Changed", "lastUpdateTime": NOW,
                     "lastTransitionTime": "2026-01-01T00:00:00Z"},
                    {"type": "Failed", "status": "True", "lastUpdateTime": NOW, "lastTransitionTime": NOW}]}}),
        ),
    ];
    for (endpoint, want) in cases {
        let mut new = write.clone();
        prepare_update(&mut new, &old, endpoint, NOW);
        assert_eq!(new, want, "{endpoint:?}");
    }
}

#[test]
fn condition_column_and_defaults() {
    let cases = [
        (json!({}), "Pending"),
        (json!({"conditions": [{"type": "Approved"}]}), "Approved"),
        (
            json!({"conditions": [{"type": "Approved"}, {"type": "Denied"}]}),
            "Denied",
        ),
        (
            json!({"conditions": [{"type": "Approved"}, {"type": "Failed"}], "certificate": "eA=="}),
            "Approved,Failed,Issued",
        ),
    ];
    for (status, want) in cases {
        assert_eq!(condition_summary(&json!({"status": status})), want);
    }
    let mut obj =
        json!({"status": {"conditions": [{"type": "Approved"}, {"type": "X", "status": "False"}]}});
    apply_defaults(&mut obj);
    assert_eq!(
        obj,
        json!({"status": {"conditions": [{"type": "Approved", "status": "True"}, {"type": "X", "status": "False"}]}})
    );
}

#[test]
fn signer_permissions_and_the_subject_restriction() {
    let old = csr(&request_pem(&[]));
    let approved = with_conditions(&old, json!([{"type": "Approved", "status": "True"}]));
    let check = signer_check(&approved, &old, Endpoint::Approval).expect("approve");
    assert_eq!(check.verb, "approve");
    assert_eq!(
        check.names(),
        [
            "example.com/signer".to_string(),
            "example.com/*".to_string()
        ]
    );
    assert_eq!(
        check.refusal(),
        "user not permitted to approve requests with signerName \"example.com/signer\""
    );
    let mut issued = approved.clone();
    issued["status"]["certificate"] = json!("eA==");
    assert_eq!(
        signer_check(&issued, &approved, Endpoint::Status).map(|c| c.verb),
        Some("sign")
    );
    // A status write that leaves the certificate needs no signer permission.
    assert_eq!(signer_check(&approved, &approved, Endpoint::Status), None);
    assert_eq!(signer_check(&approved, &old, Endpoint::Main), None);

    let mut masters = csr(&request_pem(&["dev", "system:masters"]));
    assert_eq!(subject_restriction(&masters), None, "other signers may");
    masters["spec"]["signerName"] = json!(KUBE_APISERVER_CLIENT);
    assert_eq!(
        subject_restriction(&masters).as_deref(),
        Some(
            "use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed"
        )
    );
    let mut dev = csr(&request_pem(&["dev"]));
    dev["spec"]["signerName"] = json!(KUBE_APISERVER_CLIENT);
    assert_eq!(subject_restriction(&dev), None);
}

#[test]
fn the_kind_rows_write_check_is_the_plugins_decision() {
    use crate::prepare::WriteCheck;
    let kind = |id| crate::KINDS.iter().find(|k| k.id == id).expect("a row");
    let csrs = kind(crate::KindId::CertificateSigningRequest);
    let old = csr(&request_pem(&[]));
    let approved = with_conditions(&old, json!([{"type": "Approved", "status": "True"}]));
    let mut issued = approved.clone();
    issued["status"]["certificate"] = json!("eA==");
    let mut masters = csr(&request_pem(&["system:masters"]));
    masters["spec"]["signerName"] = json!(KUBE_APISERVER_CLIENT);
    let ask = |verb, refusal: &str| {
        Some(WriteCheck::Ask {
            verb,
            resource: "signers",
            names: vec!["example.com/signer".into(), "example.com/*".into()],
            refusal: refusal.into(),
        })
    };
    // (new, old, endpoint, check)
    let cases = [
        (&old, None, "", None),
        (
            &masters,
            None,
            "",
            Some(WriteCheck::Refuse(
                "use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed".into(),
            )),
        ),
        (
            &approved,
            Some(&old),
            "approval",
            ask(
                "approve",
                "user not permitted to approve requests with signerName \"example.com/signer\"",
            ),
        ),
        (
            &issued,
            Some(&approved),
            "status",
            ask(
                "sign",
                "user not permitted to sign requests with signerName \"example.com/signer\"",
            ),
        ),
        (&approved, Some(&approved), "status", None),
        (&issued, Some(&approved), "", None),
    ];
    for (i, (new, old, endpoint, check)) in cases.into_iter().enumerate() {
        assert_eq!(csrs.write_check(new, old, endpoint), check, "case {i}");
    }
    // Other kinds have no such plugins, even for a CSR-shaped body.
    let configmaps = kind(crate::KindId::ConfigMap);
    assert_eq!(configmaps.write_check(&masters, None, ""), None);
}

#[test]
fn pem_decoding_skips_text_and_sees_headers() {
    let data = b"comment\n-----BEGIN A-----\nProc-Type: 4,ENCRYPTED\n\naGk=\n-----END A-----\ntail";
    let (block, rest) = pem_decode(data).expect("block");
    assert_eq!(block.label, "A");
    assert!(block.headers);
    assert_eq!(block.bytes, b"hi");
    assert_eq!(rest, b"tail");
    assert!(pem_decode(b"-----BEGIN A-----\nnot base64!\n-----END A-----\n").is_none());
    assert!(pem_decode(b"no block").is_none());
}
