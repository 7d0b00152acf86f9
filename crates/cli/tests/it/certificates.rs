//! `CertificateSigningRequests` through kubectl, as a test of a signer or an approver types it:
//! `apply` a request, `get csr` (the server's columns), `certificate approve|deny` (kubectl
//! sends the request as protobuf to `/approval`), and a request kubectl cannot create.

use base64::Engine;

use crate::support::{TestServer, header};

fn request_pem(cn: &str) -> String {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(vec![format!("{cn}.example.com")]).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, cn);
    params.serialize_request(&key).unwrap().pem().unwrap()
}

fn manifest(name: &str, request: &str) -> String {
    let request = base64::engine::general_purpose::STANDARD.encode(request);
    format!(
        "apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\nmetadata:\n  name: {name}\nspec:\n  request: {request}\n  signerName: example.com/serving\n  expirationSeconds: 86400\n  usages: [digital signature, key encipherment, server auth]\n"
    )
}

#[test]
fn kubectl_approves_and_denies_requests() {
    let s = TestServer::start();
    let approve = s.write("approve.yaml", &manifest("web", &request_pem("web")));
    let deny = s.write("deny.yaml", &manifest("db", &request_pem("db")));
    for f in [&approve, &deny] {
        s.kubectl_ok(&["apply", "-f", f.to_str().unwrap()]);
    }
    let out = s.kubectl_ok(&["get", "csr"]);
    assert_eq!(
        header(&out),
        [
            "NAME",
            "AGE",
            "SIGNERNAME",
            "REQUESTOR",
            "REQUESTEDDURATION",
            "CONDITION"
        ],
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("web ") && l.contains("24h") && l.ends_with("Pending")),
        "{out}"
    );

    let out = s.kubectl_ok(&["certificate", "approve", "web"]);
    assert_eq!(
        out.trim(),
        "certificatesigningrequest.certificates.k8s.io/web approved"
    );
    let out = s.kubectl_ok(&["certificate", "deny", "db"]);
    assert_eq!(
        out.trim(),
        "certificatesigningrequest.certificates.k8s.io/db denied"
    );
    let web = s.kubectl_json(&["get", "csr", "web", "-o", "json"]);
    let condition = &web["status"]["conditions"][0];
    assert_eq!(condition["type"], "Approved");
    assert_eq!(condition["reason"], "KubectlApprove");
    assert!(condition["lastUpdateTime"].is_string(), "{condition}");
    // The requester is the kubeconfig's user, whoever the manifest named.
    assert!(web["spec"]["username"].is_string(), "{web}");
    let out = s.kubectl_ok(&["get", "csr", "--sort-by=.metadata.name"]);
    let rows: Vec<&str> = out.lines().skip(1).collect();
    assert!(
        rows[0].starts_with("db ") && rows[0].ends_with("Denied"),
        "{out}"
    );
    assert!(
        rows[1].starts_with("web ") && rows[1].ends_with("Approved"),
        "{out}"
    );

    // A request that is not a PKCS#10 request never gets stored.
    let bad = s.write("bad.yaml", &manifest("bad", "hello"));
    let out = s.kubectl(&["create", "-f", bad.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("The CertificateSigningRequest \"bad\" is invalid: spec.request: Invalid value: []byte{0x68, 0x65, 0x6c, 0x6c, 0x6f}: PEM block type must be CERTIFICATE REQUEST"),
        "{err}"
    );
}
