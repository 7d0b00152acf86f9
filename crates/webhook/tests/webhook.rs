//! End to end over HTTPS: a server on 127.0.0.1:0 with `self_signed` certificates, and a
//! reqwest client that trusts only the generated CA.

use std::time::{Duration, Instant};

use crd_webhook::testing::Misbehaviour;
use crd_webhook::{Generated, ServerError, WebhookHandle, WebhookServer, self_signed};
use serde_json::{Value, json};

/// Marks converted objects; `"fail": true` in an object fails the conversion.
fn convert(mut object: Value, desired: &str) -> Result<Value, String> {
    if object.get("fail").is_some() {
        return Err("asked to fail".to_string());
    }
    object["converted"] = json!(desired);
    Ok(object)
}

async fn start(
    configure: impl FnOnce(WebhookServer) -> WebhookServer,
) -> (WebhookHandle, Generated) {
    let certs = self_signed(&["127.0.0.1", "localhost"]).expect("certificates");
    let server = WebhookServer::new(&certs.cert_pem, &certs.key_pem)
        .expect("server")
        .bind(([127, 0, 0, 1], 0).into());
    let handle = configure(server).spawn(convert).await.expect("spawn");
    (handle, certs)
}

#[derive(Clone, Copy, Debug)]
enum Http {
    One,
    Two,
}

fn client(certs: &Generated, http: Http, timeout: Duration) -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let ca = reqwest::Certificate::from_pem(certs.ca_cert_pem.as_bytes()).expect("ca");
    let builder = reqwest::Client::builder()
        .tls_certs_only([ca])
        .timeout(timeout);
    match http {
        Http::One => builder.http1_only(),
        Http::Two => builder,
    }
    .build()
    .expect("client")
}

fn review(api_version: &str, uid: &str, objects: &[Value]) -> Value {
    json!({
        "apiVersion": api_version,
        "kind": "ConversionReview",
        "request": {"uid": uid, "desiredAPIVersion": "example.com/v1", "objects": objects},
        "response": {"uid": "", "convertedObjects": null, "result": {"metadata": {}}}
    })
}

fn crontab(name: &str, api_version: &str) -> Value {
    json!({
        "apiVersion": api_version, "kind": "CronTab",
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"),
                     "resourceVersion": "7"},
        "hostPort": "localhost:1234"
    })
}

async fn post(client: &reqwest::Client, url: &str, body: &Value) -> (reqwest::StatusCode, Value) {
    let response = client
        .post(url)
        .header("content-type", "application/json")
        .body(serde_json::to_vec(body).expect("encode"))
        .send()
        .await
        .expect("send");
    let status = response.status();
    let json = response.json().await.expect("json body");
    (status, json)
}

#[tokio::test]
async fn converts_over_http1_and_http2() {
    let (handle, certs) = start(|s| s).await;
    for (http, version) in [
        (Http::One, reqwest::Version::HTTP_11),
        (Http::Two, reqwest::Version::HTTP_2),
    ] {
        for review_version in ["apiextensions.k8s.io/v1", "apiextensions.k8s.io/v1beta1"] {
            let client = client(&certs, http, Duration::from_secs(10));
            let body = review(
                review_version,
                "705ab4f5-6393-11e8-b7cc-42010a800002",
                &[
                    crontab("a", "example.com/v1beta1"),
                    crontab("b", "example.com/v1"),
                ],
            );
            let response = client
                .post(handle.url())
                .header("content-type", "application/json")
                .body(serde_json::to_vec(&body).expect("encode"))
                .send()
                .await
                .expect("send");
            assert_eq!(response.version(), version, "{http:?}");
            assert_eq!(response.status(), 200);
            assert_eq!(
                response
                    .headers()
                    .get("content-type")
                    .and_then(|v| v.to_str().ok()),
                Some("application/json")
            );
            let got: Value = response.json().await.expect("json");
            let mut converted = crontab("a", "example.com/v1");
            converted["converted"] = json!("example.com/v1");
            let expected = json!({
                "apiVersion": review_version,
                "kind": "ConversionReview",
                "response": {
                    "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
                    "result": {"status": "Success"},
                    "convertedObjects": [converted, crontab("b", "example.com/v1")]
                }
            });
            assert_eq!(got, expected, "{http:?} {review_version}");
        }
    }
    assert_eq!(handle.requests(), 4);
    handle.shutdown().await;
}

#[tokio::test]
async fn failed_conversion_is_a_200_failed_review() {
    let (handle, certs) = start(|s| s).await;
    let client = client(&certs, Http::One, Duration::from_secs(10));
    let mut bad = crontab("a", "example.com/v1beta1");
    bad["fail"] = json!(true);
    let (status, got) = post(
        &client,
        &handle.url(),
        &review("apiextensions.k8s.io/v1", "u", &[bad]),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        got,
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
               "response": {"uid": "u", "result": {"status": "Failed", "message": "asked to fail"}}})
    );
}

#[tokio::test]
async fn one_request_per_review_of_many_objects() {
    let (handle, certs) = start(|s| s).await;
    let client = client(&certs, Http::Two, Duration::from_secs(10));
    let objects: Vec<Value> = (0..25)
        .map(|i| crontab(&format!("o{i}"), "example.com/v1beta1"))
        .collect();
    let (status, got) = post(
        &client,
        &handle.url(),
        &review("apiextensions.k8s.io/v1", "u", &objects),
    )
    .await;
    assert_eq!(status, 200);
    let converted = got["response"]["convertedObjects"]
        .as_array()
        .expect("objects");
    assert_eq!(converted.len(), 25);
    for (i, object) in converted.iter().enumerate() {
        assert_eq!(object["metadata"]["name"], json!(format!("o{i}")), "order");
    }
    assert_eq!(handle.requests(), 1);
}

#[tokio::test]
async fn http_errors() {
    let (handle, certs) = start(|s| s.path("webhook").max_body_bytes(4096)).await;
    let url = handle.url();
    assert!(url.ends_with("/webhook"), "{url}");
    let client = client(&certs, Http::One, Duration::from_secs(10));
    let base = format!("https://{}", handle.local_addr());

    let r = client
        .post(format!("{base}/convert"))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 404);

    let r = client.get(&url).send().await.expect("send");
    assert_eq!(r.status(), 405);
    assert_eq!(
        r.headers().get("allow").and_then(|v| v.to_str().ok()),
        Some("POST")
    );

    let r = client
        .post(&url)
        .header("content-type", "application/json")
        .body("{nope")
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 400);
    assert!(r.text().await.expect("text").contains("not valid JSON"));

    let wrong_version = review("apiextensions.k8s.io/v2", "u", &[]);
    let r = client
        .post(&url)
        .json(&wrong_version)
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 400);
    assert!(
        r.text()
            .await
            .expect("text")
            .contains("unsupported ConversionReview apiVersion")
    );

    let r = client
        .post(&url)
        .header("content-type", "text/plain")
        .body(serde_json::to_vec(&review("apiextensions.k8s.io/v1", "u", &[])).expect("encode"))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 415);

    // Content-Type parameters and a missing Content-Type are fine.
    let ok = serde_json::to_vec(&review("apiextensions.k8s.io/v1", "u", &[])).expect("encode");
    let r = client
        .post(&url)
        .header("content-type", "application/json; charset=utf-8")
        .body(ok.clone())
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 200);
    let r = client.post(&url).body(ok).send().await.expect("send");
    assert_eq!(r.status(), 200);

    let r = client
        .post(&url)
        .header("content-type", "application/json")
        .body(vec![b' '; 5000])
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 413);
}

#[tokio::test]
async fn misbehaviours() {
    let (handle, certs) = start(|s| s.misbehave(Misbehaviour::WrongUid)).await;
    let client = client(&certs, Http::One, Duration::from_secs(10));
    let objects = [
        crontab("a", "example.com/v1beta1"),
        crontab("b", "example.com/v1beta1"),
    ];
    let body = review("apiextensions.k8s.io/v1", "the-uid", &objects);

    let (_, got) = post(&client, &handle.url(), &body).await;
    assert_eq!(got["response"]["uid"], json!("the-uid-wrong"));

    handle.set_misbehaviour(Misbehaviour::WrongCount);
    let (_, got) = post(&client, &handle.url(), &body).await;
    assert_eq!(got["response"]["uid"], json!("the-uid"));
    assert_eq!(
        got["response"]["convertedObjects"].as_array().map(Vec::len),
        Some(1)
    );

    handle.set_misbehaviour(Misbehaviour::ChangeName);
    let (_, got) = post(&client, &handle.url(), &body).await;
    assert_eq!(
        got["response"]["convertedObjects"][0]["metadata"]["name"],
        json!("a-changed")
    );
    assert_eq!(
        got["response"]["convertedObjects"][1]["metadata"]["name"],
        json!("b-changed")
    );

    handle.set_misbehaviour(Misbehaviour::Failed("webhook says no".to_string()));
    let (status, got) = post(&client, &handle.url(), &body).await;
    assert_eq!(status, 200);
    assert_eq!(
        got["response"],
        json!({"uid": "the-uid", "result": {"status": "Failed", "message": "webhook says no"}})
    );

    handle.set_misbehaviour(Misbehaviour::WrongApiVersion);
    let (_, got) = post(&client, &handle.url(), &body).await;
    assert_eq!(
        got["response"]["convertedObjects"][0]["apiVersion"],
        json!("example.com/v1-wrong")
    );
    assert_eq!(got["response"]["result"], json!({"status": "Success"}));

    handle.set_misbehaviour(Misbehaviour::None);
    let (_, got) = post(&client, &handle.url(), &body).await;
    assert_eq!(got["response"]["uid"], json!("the-uid"));
    assert_eq!(
        got["response"]["convertedObjects"][0]["apiVersion"],
        json!("example.com/v1")
    );

    assert_eq!(handle.requests(), 6);
}

#[tokio::test]
async fn slow_webhook() {
    let (handle, certs) = start(|s| {
        s.misbehave(Misbehaviour::Slow(Duration::from_millis(300)))
            .shutdown_timeout(Duration::from_millis(100))
    })
    .await;
    let body = review(
        "apiextensions.k8s.io/v1",
        "u",
        &[crontab("a", "example.com/v1beta1")],
    );

    let patient = client(&certs, Http::One, Duration::from_secs(10));
    let started = Instant::now();
    let (status, got) = post(&patient, &handle.url(), &body).await;
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(status, 200);
    assert_eq!(got["response"]["result"], json!({"status": "Success"}));

    handle.set_misbehaviour(Misbehaviour::Slow(Duration::from_secs(30)));
    let impatient = client(&certs, Http::One, Duration::from_millis(200));
    let err = impatient
        .post(handle.url())
        .json(&body)
        .send()
        .await
        .expect_err("times out");
    assert!(err.is_timeout(), "{err}");

    // Shutdown does not wait for the 30 s request beyond the shutdown timeout.
    let started = Instant::now();
    handle.shutdown().await;
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn shutdown_stops_serving() {
    let (handle, certs) = start(|s| s).await;
    let url = handle.url();
    handle.shutdown().await;
    let client = client(&certs, Http::One, Duration::from_secs(5));
    let result = client
        .post(&url)
        .json(&review("apiextensions.k8s.io/v1", "u", &[]))
        .send()
        .await;
    assert!(result.is_err(), "server still answering after shutdown");
}

#[tokio::test]
async fn serve_until_shutdown_future() {
    let certs = self_signed(&["127.0.0.1"]).expect("certificates");
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port");
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let server = WebhookServer::new(&certs.cert_pem, &certs.key_pem)
        .expect("server")
        .bind(addr);
    let task = tokio::spawn(server.serve(convert, async move {
        let _ = rx.await;
    }));
    let client = client(&certs, Http::Two, Duration::from_secs(5));
    let url = format!("https://{addr}/convert");
    let mut answered = false;
    for _ in 0..50 {
        if let Ok(r) = client
            .post(&url)
            .json(&review("apiextensions.k8s.io/v1", "u", &[]))
            .send()
            .await
        {
            assert_eq!(r.status(), 200);
            answered = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(answered, "serve() never answered");
    tx.send(()).expect("signal");
    tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("serve returns after shutdown")
        .expect("join")
        .expect("serve ok");
}

#[test]
fn bad_tls_material_is_rejected_up_front() {
    let certs = self_signed(&["127.0.0.1"]).expect("certificates");
    let other = self_signed(&["127.0.0.1"]).expect("certificates");
    assert!(matches!(
        WebhookServer::new("not a pem", &certs.key_pem),
        Err(ServerError::Certificate(_))
    ));
    assert!(matches!(
        WebhookServer::new(&certs.cert_pem, "not a pem"),
        Err(ServerError::PrivateKey(_))
    ));
    assert!(matches!(
        WebhookServer::new(&certs.cert_pem, &other.key_pem),
        Err(ServerError::Tls(_))
    ));
    let missing = WebhookServer::from_pem_files("/nonexistent/tls.crt", "/nonexistent/tls.key");
    assert!(matches!(missing, Err(ServerError::Read { .. })));
}

#[tokio::test]
async fn bind_error_is_reported() {
    let certs = self_signed(&["127.0.0.1"]).expect("certificates");
    let taken = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = taken.local_addr().expect("addr");
    let result = WebhookServer::new(&certs.cert_pem, &certs.key_pem)
        .expect("server")
        .bind(addr)
        .spawn(convert)
        .await;
    assert!(matches!(result, Err(ServerError::Bind { .. })));
}
