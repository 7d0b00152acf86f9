//! `TestServer`: the real `crd-apiserver` binary on 127.0.0.1 with a free port and a temporary
//! data dir, plus helpers to drive it with kubectl and with an HTTP client: the one request
//! helper ([`TestServer::call`]), the one CRD builder ([`crd_json`]) and the one way to wait
//! ([`eventually`], [`eventually_async`]) the tests share.

use std::fmt::Write as _;
use std::future::Future;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// How long a wait for an observable condition may take before the test fails.
pub const TIMEOUT: Duration = Duration::from_secs(30);

/// The repository root (for `examples/`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A running server.
pub struct TestServer {
    child: Option<Child>,
    /// The data dir (kept alive while the server runs).
    pub dir: tempfile::TempDir,
    /// `https://127.0.0.1:<port>`.
    pub url: String,
    /// The admin bearer token.
    pub token: String,
    /// The generated CA, PEM.
    pub ca_pem: Vec<u8>,
}

impl TestServer {
    /// Starts a server with an empty data dir.
    pub fn start() -> Self {
        Self::start_in(tempfile::tempdir().expect("tempdir"))
    }

    /// Starts a server on an existing data dir (for restart tests).
    pub fn start_in(dir: tempfile::TempDir) -> Self {
        Self::start_with(dir, &[])
    }

    /// Starts a server with extra `serve` flags.
    pub fn start_with(dir: tempfile::TempDir, extra: &[&str]) -> Self {
        let data = dir.path().join("data");
        let mut child = Command::new(env!("CARGO_BIN_EXE_crd-apiserver"))
            .args(["serve", "--secure-port", "0", "--data-dir"])
            .arg(&data)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawning crd-apiserver");
        let rx = stdout_lines(&mut child);
        let mut url = None;
        loop {
            let line = rx
                .recv_timeout(Duration::from_mins(1))
                .expect("server did not become ready");
            if let Some(u) = line.strip_prefix("crd-apiserver listening on ") {
                url = Some(u.to_string());
            }
            if line.starts_with("export KUBECONFIG=") {
                break;
            }
        }
        let token = std::fs::read_to_string(data.join("tokens.csv"))
            .expect("tokens.csv")
            .split(',')
            .next()
            .expect("token")
            .to_string();
        let ca_pem = std::fs::read(data.join("ca.crt")).expect("ca.crt");
        TestServer {
            child: Some(child),
            dir,
            url: url.expect("listening line"),
            token,
            ca_pem,
        }
    }

    /// The data dir the server uses.
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The kubeconfig the server wrote.
    pub fn kubeconfig(&self) -> PathBuf {
        self.data_dir().join("kubeconfig")
    }

    /// kubectl against the server, as a user would type it, in the data dir's parent, with no
    /// stdin.
    fn kubectl_command(&self, args: &[&str]) -> Command {
        let mut kubectl = Command::new("kubectl");
        kubectl
            .args(args)
            .env("KUBECONFIG", self.kubeconfig())
            .env("HOME", self.dir.path())
            .current_dir(self.dir.path())
            .stdin(Stdio::null());
        kubectl
    }

    /// Runs kubectl against the server, as a user would type it, in the data dir's parent.
    pub fn kubectl(&self, args: &[&str]) -> Output {
        self.kubectl_command(args)
            .output()
            .expect("running kubectl")
    }

    /// Starts kubectl (for a command that runs on, like `get -w`) with stdout piped.
    pub fn kubectl_spawn(&self, args: &[&str]) -> Child {
        self.kubectl_command(args)
            .stdout(Stdio::piped())
            .spawn()
            .expect("running kubectl")
    }

    /// Runs kubectl and asserts success; returns stdout.
    pub fn kubectl_ok(&self, args: &[&str]) -> String {
        let out = self.kubectl(args);
        assert!(
            out.status.success(),
            "kubectl {args:?} failed:\nstdout: {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Runs kubectl and asserts success; returns stdout as JSON (for `-o json` and `get --raw`).
    pub fn kubectl_json(&self, args: &[&str]) -> Value {
        let out = self.kubectl_ok(args);
        serde_json::from_str(&out)
            .unwrap_or_else(|e| panic!("kubectl {args:?}: not JSON ({e}): {out}"))
    }

    /// Applies a CRD manifest with kubectl and waits until the CRD is Established.
    pub fn apply_crd(&self, file: &str, text: &str, crd: &str) {
        self.write(file, text);
        self.kubectl_ok(&["apply", "-f", file]);
        self.kubectl_ok(&[
            "wait",
            "--for",
            "condition=established",
            &format!("crd/{crd}"),
            "--timeout=30s",
        ]);
    }

    /// Writes a file in the working directory kubectl runs in.
    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.dir.path().join(name);
        std::fs::write(&p, text).expect("write");
        p
    }

    /// An HTTPS client trusting the server's CA; HTTP/1.1 only, or HTTP/2 (ALPN).
    pub fn client(&self, version: HttpVersion) -> reqwest::Client {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let ca = reqwest::Certificate::from_pem(&self.ca_pem).expect("ca");
        let b = reqwest::Client::builder()
            .tls_certs_only([ca])
            .timeout(Duration::from_secs(30));
        let b = match version {
            HttpVersion::Http1 => b.http1_only(),
            HttpVersion::Http2 => b,
        };
        b.build().expect("client")
    }

    /// Sends `body` (if any) as `content_type` with the admin token over HTTP/2 and reads the
    /// whole response.
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        content_type: &str,
        body: Option<String>,
    ) -> Resp {
        let mut req = self
            .client(HttpVersion::Http2)
            .request(method, format!("{}{path}", self.url))
            .bearer_auth(&self.token)
            .header("Content-Type", content_type);
        if let Some(b) = body {
            req = req.body(b);
        }
        let r = req.send().await.expect("request");
        Resp {
            status: r.status(),
            text: r.text().await.expect("body"),
        }
    }

    /// GET with the admin token.
    pub async fn get(&self, path: &str) -> Resp {
        self.call(Method::GET, path, "application/json", None).await
    }

    /// Creates a CRD over HTTP and waits until the CRD controller reports it Established.
    pub async fn create_crd(&self, crd: &Value) {
        let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
        let r = self
            .call(
                Method::POST,
                crds,
                "application/json",
                Some(crd.to_string()),
            )
            .await;
        assert_eq!(r.status, 201, "{}", r.text);
        let path = format!("{crds}/{}", crd["metadata"]["name"].as_str().expect("name"));
        eventually_async(&format!("{path} is Established"), || async {
            let crd = self.get(&path).await.json();
            crd["status"]["conditions"].as_array().is_some_and(|cs| {
                cs.iter()
                    .any(|c| c["type"] == "Established" && c["status"] == "True")
            })
        })
        .await;
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, std::process::Child::id)
    }

    /// Kills the server with SIGKILL (if still running) and returns the data dir as it is.
    pub fn kill_and_keep(mut self) -> tempfile::TempDir {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let dir = tempfile::tempdir().expect("tempdir");
        std::mem::replace(&mut self.dir, dir)
    }

    /// Stops the server with SIGTERM and waits for it; returns the data dir.
    pub fn stop(mut self) -> tempfile::TempDir {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
            let status = child.wait().expect("wait");
            assert!(status.success(), "server exited with {status}");
        }
        let dir = tempfile::tempdir().expect("tempdir");
        std::mem::replace(&mut self.dir, dir)
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The lines a child prints on its piped stdout, read on a thread as they come (how the tests
/// wait for a process's start-up lines).
pub fn stdout_lines(child: &mut Child) -> mpsc::Receiver<String> {
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// [`crd_yaml`] of `widgets.example.com` (kind `Widget`) with one version, `v1`, of `schema`.
pub fn widgets_yaml(schema: &str) -> String {
    crd_yaml(
        "example.com",
        "widgets",
        "singular: widget, kind: Widget",
        &[("v1", true, schema)],
        "",
    )
}

/// The header cells of `kubectl get` output (its first line, split at white space).
pub fn header(out: &str) -> Vec<&str> {
    out.lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect()
}

/// Which HTTP version a client speaks.
#[derive(Clone, Copy, Debug)]
pub enum HttpVersion {
    /// HTTP/1.1 only.
    Http1,
    /// HTTP/2 negotiated by ALPN.
    Http2,
}

/// A response read whole.
pub struct Resp {
    /// The status code.
    pub status: StatusCode,
    /// The body.
    pub text: String,
}

impl Resp {
    /// The body as JSON; panics with the body when it is not.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text))
    }
}

/// A CRD with one served and stored version `v1` whose schema keeps every field.
pub fn crd_json(group: &str, plural: &str, kind: &str, scope: &str) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {"group": group, "scope": scope,
                 "names": {"plural": plural, "singular": plural.trim_end_matches('s'), "kind": kind},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
    })
}

/// A namespaced CRD manifest `{plural}.{group}` as a user writes it (the YAML the kubectl tests
/// apply): `names` is the rest of `spec.names` after the plural (`singular: widget, kind:
/// Widget`); each version is `(name, storage, openAPIV3Schema)`, served, its schema YAML
/// written from column 0 and indented here; `tail` follows the versions at `spec` level (a
/// `conversion:` stanza, or empty).
pub fn crd_yaml(
    group: &str,
    plural: &str,
    names: &str,
    versions: &[(&str, bool, &str)],
    tail: &str,
) -> String {
    let mut out = format!(
        "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: {plural}.{group}
spec:
  group: {group}
  scope: Namespaced
  names: {{plural: {plural}, {names}}}
  versions:
"
    );
    for (name, storage, schema) in versions {
        let _ = writeln!(
            out,
            "  - name: {name}\n    served: true\n    storage: {storage}\n    schema:\n      openAPIV3Schema:"
        );
        for line in schema.lines() {
            let _ = writeln!(out, "        {line}");
        }
    }
    out.push_str(tail);
    out
}

/// Polls `check` until it returns true; fails the test after [`TIMEOUT`] naming `what`.
pub fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + TIMEOUT;
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// [`eventually`] for an async check.
pub async fn eventually_async<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + TIMEOUT;
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The seed's CronTab CRD.
pub fn crontab_crd() -> String {
    std::fs::read_to_string(repo_root().join("examples/crds/crontab.yaml")).expect("crontab.yaml")
}

/// The seed's CronTab object.
pub fn my_crontab() -> String {
    std::fs::read_to_string(repo_root().join("examples/crds/my-crontab.yaml"))
        .expect("my-crontab.yaml")
}

/// An HTTPS service in the test (HTTP/1.1, one request per connection) on `rt`, for 127.0.0.1
/// under a CA of its own: every JSON body posted to it is answered with `answer(body)`, the
/// other side of a webhook. Returns its base URL (`https://127.0.0.1:<port>`) and the CA's PEM.
pub fn https_json_service(
    rt: &tokio::runtime::Runtime,
    answer: impl Fn(Value) -> Value + Send + Sync + 'static,
) -> (String, String) {
    use std::sync::Arc;

    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("ca params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_key = KeyPair::generate().expect("ca key");
    let ca_cert = ca_params.self_signed(&ca_key).expect("ca cert");
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().expect("key");
    let cert = CertificateParams::new(vec!["127.0.0.1".to_string()])
        .expect("params")
        .signed_by(&key, &issuer)
        .expect("cert");
    let tls = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from_pem_slice(cert.pem().as_bytes()).expect("pem")],
            PrivateKeyDer::from_pem_slice(key.serialize_pem().as_bytes()).expect("key pem"),
        )
        .expect("tls config");
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let answer = Arc::new(answer);
    rt.spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (acceptor, answer) = (acceptor.clone(), answer.clone());
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let mut buf = Vec::new();
                let mut chunk = [0u8; 8192];
                let body = loop {
                    let Ok(n) = tls.read(&mut chunk).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    let text = String::from_utf8_lossy(&buf).to_string();
                    let Some(end) = text.find("\r\n\r\n") else {
                        continue;
                    };
                    let length = text[..end]
                        .lines()
                        .find_map(|l| {
                            let (k, v) = l.split_once(':')?;
                            k.eq_ignore_ascii_case("content-length")
                                .then(|| v.trim().parse::<usize>().ok())?
                        })
                        .unwrap_or(0);
                    if buf.len() >= end + 4 + length {
                        break buf[end + 4..end + 4 + length].to_vec();
                    }
                };
                let out = answer(serde_json::from_slice(&body).unwrap_or(Value::Null)).to_string();
                let reply = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{out}",
                    out.len()
                );
                let _ = tls.write_all(reply.as_bytes()).await;
                let _ = tls.shutdown().await;
            });
        }
    });
    (format!("https://{addr}"), ca_cert.pem())
}
