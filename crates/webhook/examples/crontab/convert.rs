//! The CronTab conversion of the documentation's example, shared by the example binary and the
//! API server's integration tests (which include this file by path).

use serde_json::{Map, Value};

/// The message of the documentation's failure example.
pub const BAD_HOST_PORT: &str = "hostPort could not be parsed into a separate host and port";

/// Converts a CronTab between `v1beta1` (`hostPort`) and `v1` (`host`, `port`).
pub fn convert(mut object: Value, desired_api_version: &str) -> Result<Value, String> {
    let from = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .map(version_of)
        .unwrap_or_default()
        .to_string();
    let to = version_of(desired_api_version);
    let step: fn(&mut Map<String, Value>) -> Result<(), String> = match (from.as_str(), to) {
        ("v1beta1", "v1") => split_host_port,
        ("v1", "v1beta1") => join_host_port,
        (from, to) if from == to => return Ok(object),
        (from, to) => return Err(format!("unexpected conversion from {from:?} to {to:?}")),
    };
    let Some(fields) = object.as_object_mut() else {
        return Err("a CronTab must be a JSON object".to_string());
    };
    step(fields)?;
    if let Some(Value::Object(spec)) = fields.get_mut("spec") {
        step(spec)?;
    }
    Ok(object)
}

/// `example.com/v1` → `v1`.
fn version_of(api_version: &str) -> &str {
    api_version
        .rsplit_once('/')
        .map_or(api_version, |(_, version)| version)
}

/// v1beta1 → v1: `hostPort: "h:p"` becomes `host: "h"`, `port: "p"`.
fn split_host_port(fields: &mut Map<String, Value>) -> Result<(), String> {
    let Some(host_port) = fields.remove("hostPort") else {
        return Ok(());
    };
    let Some(host_port) = host_port.as_str() else {
        return Err("hostPort must be a string".to_string());
    };
    let mut parts = host_port.split(':');
    let (Some(host), Some(port), None) = (parts.next(), parts.next(), parts.next()) else {
        return Err(BAD_HOST_PORT.to_string());
    };
    fields.insert("host".to_string(), Value::String(host.to_string()));
    fields.insert("port".to_string(), Value::String(port.to_string()));
    Ok(())
}

/// v1 → v1beta1: `host` and `port` (either may be missing) become `hostPort: "host:port"`.
fn join_host_port(fields: &mut Map<String, Value>) -> Result<(), String> {
    let host = fields.remove("host");
    let port = fields.remove("port");
    if host.is_none() && port.is_none() {
        return Ok(());
    }
    let text = |name: &str, value: Option<&Value>| match value {
        None => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(format!("{name} must be a string")),
    };
    let host_port = format!(
        "{}:{}",
        text("host", host.as_ref())?,
        text("port", port.as_ref())?
    );
    fields.insert("hostPort".to_string(), Value::String(host_port));
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::{BAD_HOST_PORT, convert};

    struct Case {
        name: &'static str,
        input: &'static str,
        desired: &'static str,
        /// The converted object, or the error message.
        output: Result<&'static str, &'static str>,
    }

    const CASES: &[Case] = &[
        Case {
            name: "documentation object 1, v1beta1 to v1",
            input: r#"{"kind": "CronTab", "apiVersion": "example.com/v1beta1",
                "metadata": {"creationTimestamp": "2019-09-04T14:03:02Z", "name": "local-crontab",
                    "namespace": "default", "resourceVersion": "143",
                    "uid": "3415a7fc-162b-4300-b5da-fd6083580d66"},
                "hostPort": "localhost:1234"}"#,
            desired: "example.com/v1",
            output: Ok(r#"{"kind": "CronTab", "apiVersion": "example.com/v1beta1",
                "metadata": {"creationTimestamp": "2019-09-04T14:03:02Z", "name": "local-crontab",
                    "namespace": "default", "resourceVersion": "143",
                    "uid": "3415a7fc-162b-4300-b5da-fd6083580d66"},
                "host": "localhost", "port": "1234"}"#),
        },
        Case {
            name: "documentation object 2, v1beta1 to v1",
            input: r#"{"kind": "CronTab", "apiVersion": "example.com/v1beta1",
                "metadata": {"creationTimestamp": "2019-09-03T13:02:01Z", "name": "remote-crontab",
                    "resourceVersion": "12893", "uid": "359a83ec-b575-460d-b553-d859cedde8a0"},
                "hostPort": "example.com:2345"}"#,
            desired: "example.com/v1",
            output: Ok(r#"{"kind": "CronTab", "apiVersion": "example.com/v1beta1",
                "metadata": {"creationTimestamp": "2019-09-03T13:02:01Z", "name": "remote-crontab",
                    "resourceVersion": "12893", "uid": "359a83ec-b575-460d-b553-d859cedde8a0"},
                "host": "example.com", "port": "2345"}"#),
        },
        Case {
            name: "v1 to v1beta1 joins host and port",
            input: r#"{"kind": "CronTab", "apiVersion": "example.com/v1", "metadata": {"name": "a"},
                "host": "localhost", "port": "1234"}"#,
            desired: "example.com/v1beta1",
            output: Ok(
                r#"{"kind": "CronTab", "apiVersion": "example.com/v1", "metadata": {"name": "a"},
                "hostPort": "localhost:1234"}"#,
            ),
        },
        Case {
            name: "v1 to v1beta1 with only a host",
            input: r#"{"kind": "CronTab", "apiVersion": "example.com/v1", "host": "h"}"#,
            desired: "example.com/v1beta1",
            output: Ok(r#"{"kind": "CronTab", "apiVersion": "example.com/v1", "hostPort": "h:"}"#),
        },
        Case {
            name: "fields under spec are converted too",
            input: r#"{"kind": "CronTab", "apiVersion": "stable.example.com/v1beta1",
                "spec": {"cronSpec": "* * * * */5", "hostPort": "db:5432"}}"#,
            desired: "stable.example.com/v1",
            output: Ok(
                r#"{"kind": "CronTab", "apiVersion": "stable.example.com/v1beta1",
                "spec": {"cronSpec": "* * * * */5", "host": "db", "port": "5432"}}"#,
            ),
        },
        Case {
            name: "spec, v1 to v1beta1",
            input: r#"{"kind": "CronTab", "apiVersion": "example.com/v1",
                "spec": {"host": "db", "port": "5432"}}"#,
            desired: "example.com/v1beta1",
            output: Ok(r#"{"kind": "CronTab", "apiVersion": "example.com/v1",
                "spec": {"hostPort": "db:5432"}}"#),
        },
        Case {
            name: "no hostPort: nothing to do",
            input: r#"{"kind": "CronTab", "apiVersion": "example.com/v1beta1", "metadata": {"name": "a"}}"#,
            desired: "example.com/v1",
            output: Ok(
                r#"{"kind": "CronTab", "apiVersion": "example.com/v1beta1", "metadata": {"name": "a"}}"#,
            ),
        },
        Case {
            name: "hostPort without a colon",
            input: r#"{"kind": "CronTab", "apiVersion": "example.com/v1beta1", "hostPort": "localhost"}"#,
            desired: "example.com/v1",
            output: Err(BAD_HOST_PORT),
        },
        Case {
            name: "hostPort with two colons",
            input: r#"{"kind": "CronTab", "apiVersion": "example.com/v1beta1", "hostPort": "a:b:c"}"#,
            desired: "example.com/v1",
            output: Err(BAD_HOST_PORT),
        },
        Case {
            name: "hostPort that is not a string",
            input: r#"{"kind": "CronTab", "apiVersion": "example.com/v1beta1", "hostPort": 80}"#,
            desired: "example.com/v1",
            output: Err("hostPort must be a string"),
        },
        Case {
            name: "unknown version",
            input: r#"{"kind": "CronTab", "apiVersion": "example.com/v1beta1"}"#,
            desired: "example.com/v2",
            output: Err(r#"unexpected conversion from "v1beta1" to "v2""#),
        },
    ];

    #[test]
    fn crontab_conversions() {
        for case in CASES {
            let input: Value = serde_json::from_str(case.input).expect(case.name);
            let got = convert(input, case.desired);
            match case.output {
                Ok(expected) => {
                    let expected: Value = serde_json::from_str(expected).expect(case.name);
                    assert_eq!(got, Ok(expected), "{}", case.name);
                }
                Err(message) => assert_eq!(got, Err(message.to_string()), "{}", case.name),
            }
        }
    }

    /// The documentation's v1 ConversionReview request, answered exactly as documented.
    #[test]
    fn documentation_review_round_trip() {
        let request = r#"{
          "apiVersion": "apiextensions.k8s.io/v1",
          "kind": "ConversionReview",
          "request": {
            "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
            "desiredAPIVersion": "example.com/v1",
            "objects": [
              {"kind": "CronTab", "apiVersion": "example.com/v1beta1",
               "metadata": {"creationTimestamp": "2019-09-04T14:03:02Z", "name": "local-crontab",
                            "namespace": "default", "resourceVersion": "143",
                            "uid": "3415a7fc-162b-4300-b5da-fd6083580d66"},
               "hostPort": "localhost:1234"},
              {"kind": "CronTab", "apiVersion": "example.com/v1beta1",
               "metadata": {"creationTimestamp": "2019-09-03T13:02:01Z", "name": "remote-crontab",
                            "resourceVersion": "12893", "uid": "359a83ec-b575-460d-b553-d859cedde8a0"},
               "hostPort": "example.com:2345"}
            ]
          }
        }"#;
        let response = r#"{
          "apiVersion": "apiextensions.k8s.io/v1",
          "kind": "ConversionReview",
          "response": {
            "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
            "result": {"status": "Success"},
            "convertedObjects": [
              {"kind": "CronTab", "apiVersion": "example.com/v1",
               "metadata": {"creationTimestamp": "2019-09-04T14:03:02Z", "name": "local-crontab",
                            "namespace": "default", "resourceVersion": "143",
                            "uid": "3415a7fc-162b-4300-b5da-fd6083580d66"},
               "host": "localhost", "port": "1234"},
              {"kind": "CronTab", "apiVersion": "example.com/v1",
               "metadata": {"creationTimestamp": "2019-09-03T13:02:01Z", "name": "remote-crontab",
                            "resourceVersion": "12893", "uid": "359a83ec-b575-460d-b553-d859cedde8a0"},
               "host": "example.com", "port": "2345"}
            ]
          }
        }"#;
        let got: Value = serde_json::from_slice(
            &crd_webhook::handle_review(request.as_bytes(), &convert).expect("review"),
        )
        .expect("json");
        let expected: Value = serde_json::from_str(response).expect("json");
        assert_eq!(got, expected);
    }

    /// The documentation's failure example, as a v1beta1 review.
    #[test]
    fn documentation_failure() {
        let request = r#"{"apiVersion": "apiextensions.k8s.io/v1beta1", "kind": "ConversionReview",
            "request": {"uid": "u", "desiredAPIVersion": "example.com/v1", "objects": [
              {"kind": "CronTab", "apiVersion": "example.com/v1beta1", "metadata": {"name": "x"},
               "hostPort": "no-port-here"}]}}"#;
        let response = r#"{"apiVersion": "apiextensions.k8s.io/v1beta1", "kind": "ConversionReview",
            "response": {"uid": "u", "result": {"status": "Failed",
              "message": "hostPort could not be parsed into a separate host and port"}}}"#;
        let got: Value = serde_json::from_slice(
            &crd_webhook::handle_review(request.as_bytes(), &convert).expect("review"),
        )
        .expect("json");
        let expected: Value = serde_json::from_str(response).expect("json");
        assert_eq!(got, expected);
    }
}
