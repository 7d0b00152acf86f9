//! Declarative conversion (`strategy: ConversionRules`, KEP-3945) over HTTP: objects written at
//! one version are read, listed, watched and updated at another, converted in process by the
//! CRD's rules; invalid rules are refused with causes; a lossy round trip is a warning.

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{CRDS, HttpVersion, TestServer, condition, eventually};

const GROUP: &str = "rules.example.com";

/// v1 (storage): `spec.firstName`, `spec.timeoutSeconds`, `spec.legacy`; v2: `spec.name.first`,
/// `spec.timeout` (a duration string), `spec.legacy` kept in an annotation.
fn crd(lossy: bool) -> Value {
    let v1 = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "firstName": {"type": "string"}, "timeoutSeconds": {"type": "integer"}, "legacy": {"type": "string"}}}}});
    let v2 = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "name": {"type": "object", "properties": {"first": {"type": "string"}}},
        "timeout": {"type": "string", "format": "duration"}}}}});
    let legacy_to = if lossy {
        json!({"fromField": ".spec.legacy"})
    } else {
        json!({"fromField": ".spec.legacy", "toField": ".metadata.annotations['v1.rules.example.com/legacy']"})
    };
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("people.{GROUP}")},
        "spec": {
            "group": GROUP, "scope": "Namespaced",
            "names": {"plural": "people", "singular": "person", "kind": "Person"},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": v1}},
                {"name": "v2", "served": true, "storage": false, "schema": {"openAPIV3Schema": v2}},
            ],
            "conversion": {"strategy": "ConversionRules", "conversionRules": [
                {"from": "v1", "to": "v2", "rules": [
                    {"fromField": ".spec.firstName", "toField": ".spec.name.first"},
                    {"fromField": ".spec.timeoutSeconds", "toField": ".spec.timeout",
                     "transformation": "duration(string(self) + 's')"},
                    legacy_to,
                ]},
                {"from": "v2", "to": "v1", "rules": [
                    {"fromField": ".spec.name.first", "toField": ".spec.firstName"},
                    {"fromField": ".spec.timeout", "toField": ".spec.timeoutSeconds",
                     "transformation": "self.getSeconds()"},
                    {"fromField": ".metadata.annotations['v1.rules.example.com/legacy']", "toField": ".spec.legacy"},
                ]},
            ]},
        }
    })
}

fn path(version: &str) -> String {
    format!("/apis/{GROUP}/{version}/namespaces/default/people")
}

#[tokio::test]
async fn objects_are_converted_by_rules_on_read_write_list_and_watch() {
    let s = TestServer::start().await;
    let api = s.api(HttpVersion::Http2);
    api.create_crd(crd(false)).await;

    // Stored at v1, read at v2 and back.
    let r = api
        .post(
            &path("v1"),
            json!({"apiVersion": format!("{GROUP}/v1"), "kind": "Person", "metadata": {"name": "ada"},
                   "spec": {"firstName": "Ada", "timeoutSeconds": 90, "legacy": "punch cards"}}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let v2 = api.get(&format!("{}/ada", path("v2"))).await;
    assert_eq!(v2.status, 200, "{}", v2.text);
    let v2 = v2.json();
    assert_eq!(v2["apiVersion"], format!("{GROUP}/v2"));
    assert_eq!(
        v2["spec"],
        json!({"name": {"first": "Ada"}, "timeout": "1m30s"})
    );
    assert_eq!(
        v2["metadata"]["annotations"],
        json!({"v1.rules.example.com/legacy": "punch cards"})
    );
    let v1 = api.get(&format!("{}/ada", path("v1"))).await.json();
    assert_eq!(
        v1["spec"],
        json!({"firstName": "Ada", "timeoutSeconds": 90, "legacy": "punch cards"})
    );
    assert!(v1["metadata"].get("annotations").is_none(), "{v1}");

    // Written at v2 (create and update), stored at v1.
    let r = api
        .post(
            &path("v2"),
            json!({"apiVersion": format!("{GROUP}/v2"), "kind": "Person", "metadata": {"name": "grace"},
                   "spec": {"name": {"first": "Grace"}, "timeout": "2m"}}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(
        r.json()["spec"],
        json!({"name": {"first": "Grace"}, "timeout": "2m0s"})
    );
    let mut grace = api.get(&format!("{}/grace", path("v2"))).await.json();
    grace["spec"]["timeout"] = json!("1h");
    let r = api
        .call(
            Method::PUT,
            &format!("{}/grace", path("v2")),
            "application/json",
            Some(grace),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let stored = api.get(&format!("{}/grace", path("v1"))).await.json();
    assert_eq!(
        stored["spec"],
        json!({"firstName": "Grace", "timeoutSeconds": 3600})
    );

    // A list at v2 converts every item.
    let list = api.get(&path("v2")).await.json();
    let specs: Vec<&Value> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| &i["spec"])
        .collect();
    assert_eq!(
        specs,
        [
            &json!({"name": {"first": "Ada"}, "timeout": "1m30s"}),
            &json!({"name": {"first": "Grace"}, "timeout": "1h0m0s"})
        ]
    );
    assert!(
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["apiVersion"] == format!("{GROUP}/v2"))
    );

    // A watch at v2 sees an object written at v1, converted.
    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    let mut resp = api
        .request(
            Method::GET,
            &format!("{}?watch=true&resourceVersion={rv}", path("v2")),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let r = api
        .post(
            &path("v1"),
            json!({"apiVersion": format!("{GROUP}/v1"), "kind": "Person", "metadata": {"name": "alan"},
                   "spec": {"firstName": "Alan", "timeoutSeconds": 5}}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let mut buf = Vec::new();
    while !buf.contains(&b'\n') {
        let chunk = resp.chunk().await.unwrap().expect("watch stream ended");
        buf.extend_from_slice(&chunk);
    }
    let line = String::from_utf8(buf).unwrap();
    let event: Value = serde_json::from_str(line.lines().next().unwrap()).unwrap();
    assert_eq!(event["type"], "ADDED");
    assert_eq!(event["object"]["apiVersion"], format!("{GROUP}/v2"));
    assert_eq!(
        event["object"]["spec"],
        json!({"name": {"first": "Alan"}, "timeout": "5s"})
    );
}

#[tokio::test]
async fn invalid_rules_are_refused_and_a_lossy_round_trip_warns() {
    let s = TestServer::start().await;
    let api = s.api(HttpVersion::Http1);

    let mut bad = crd(false);
    bad["spec"]["conversion"]["conversionRules"][0]["rules"][0]["fromField"] =
        json!(".spec.lastName");
    bad["spec"]["conversion"]["conversionRules"][0]["rules"][1]["transformation"] =
        json!("self + 's'");
    bad["spec"]["conversion"]["conversionRules"]
        .as_array_mut()
        .unwrap()
        .pop();
    let r = api.post(CRDS, bad).await;
    assert_eq!(r.status, 422, "{}", r.text);
    let st = r.json();
    assert_eq!(st["reason"], "Invalid");
    assert_eq!(
        r.causes(),
        [
            "spec.conversion.conversionRules[0].rules[0].fromField: Invalid value: \".spec.lastName\": no such field in the schema of version v1",
            "spec.conversion.conversionRules[0].rules[1].transformation: Invalid value: \"self + 's'\": compilation failed: ERROR: <input>:1:6: found no matching overload for '_+_' applied to '(int, string)'\n | self + 's'\n | .....^",
            "spec.conversion.conversionRules: Required value: no conversion from v2 to v1: every served version must be reachable from the storage version v1 and back",
        ]
    );

    // A rule that drops a field with no way back: accepted, with a warning naming the field.
    let r = api.post(CRDS, crd(true)).await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(
        r.warnings(),
        ["299 - \"conversion from v1 to v2 and back loses spec.legacy\""]
    );
}

/// What a conversion leaves that the storage version's schema does not know is pruned before
/// it is stored, as upstream's schema-coercing converter prunes; the CRD write warns of it. A
/// rule over every element of a list of scalars removes the source list.
#[tokio::test]
async fn conversion_leftovers_are_pruned_before_storage() {
    let s = TestServer::start().await;
    let api = s.api(HttpVersion::Http1);
    let list =
        json!({"type": "array", "maxItems": 16, "items": {"type": "string", "maxLength": 20}});
    let props = |p: Value| json!({"type": "object", "properties": {"spec": {"type": "object", "properties": p}}});
    let v1 = props(json!({"size": {"type": "integer"}, "tags": list}));
    let v2 = props(json!({"size": {"type": "integer"}, "labels": list,
        "nickname": {"type": "string"}}));
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("gadgets.{GROUP}")},
        "spec": {"group": GROUP, "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": v1}},
                {"name": "v2", "served": true, "storage": false, "schema": {"openAPIV3Schema": v2}}],
            "conversion": {"strategy": "ConversionRules", "conversionRules": [
                {"from": "v1", "to": "v2", "rules": [
                    {"fromField": ".spec.tags[*]", "toField": ".spec.labels[*]"}]},
                {"from": "v2", "to": "v1", "rules": [
                    {"fromField": ".spec.labels[*]", "toField": ".spec.tags[*]"}]}]}}
    });
    let r = api.post(CRDS, crd).await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(
        r.warnings(),
        ["299 - \"conversion from v2 to v1 and back loses spec.nickname\""]
    );
    eventually("the gadgets CRD is Established", || async {
        let crd = api.get(&format!("{CRDS}/gadgets.{GROUP}")).await.json();
        condition(&crd, "Established") == Some("True")
    })
    .await;
    let gadgets = |v: &str| format!("/apis/{GROUP}/{v}/namespaces/default/gadgets");
    let r = api
        .post(
            &gadgets("v2"),
            json!({"apiVersion": format!("{GROUP}/v2"), "kind": "Gadget", "metadata": {"name": "g"},
                   "spec": {"size": 2, "nickname": "gizmo", "labels": ["FOO", "BAR"]}}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(
        r.json()["spec"],
        json!({"size": 2, "labels": ["FOO", "BAR"]})
    );
    // At the storage version nothing converts on the way out: this is what was stored.
    let stored = api.get(&format!("{}/g", gadgets("v1"))).await.json();
    assert_eq!(stored["spec"], json!({"size": 2, "tags": ["FOO", "BAR"]}));
}

/// A list long enough to be converted on several threads: items stay in key order, both on the
/// paged path and the streamed one, and a failure names the index of the first failing item,
/// as one batch conversion does.
#[tokio::test]
async fn a_long_list_is_converted_in_order_and_names_its_first_failure() {
    let s = TestServer::start().await;
    let api = s.api(HttpVersion::Http1);
    let n = 300;
    let image = |i: usize| match i {
        10 | 260 => "no-tag".to_string(),
        i => format!("nginx:{i}"),
    };
    create_tags(&api, n, image).await;
    let failure = |index: usize| {
        format!(
            "conversion rules for {GROUP}/v1, Kind=Tag failed at index {index}: .spec.image: transformation \"self.split(':')[1]\" failed: index out of bounds: 1"
        )
    };
    // Paged (`limit`) and streamed (no limit) lists; two items fail, the first one is named.
    for query in ["?limit=1000", ""] {
        let r = api.get(&format!("{}{query}", tags("v2"))).await;
        assert_eq!(r.status, 500, "{}", r.text);
        let st = r.json();
        assert_eq!(st["reason"], "InternalError", "{st}");
        assert!(
            st["message"].as_str().unwrap().contains(&failure(10)),
            "{query}: {st}"
        );
    }
    let r = api.delete(&format!("{}/t-0010", tags("v1"))).await;
    assert_eq!(r.status, 200, "{}", r.text);
    // t-0260 is now the item at index 259, in the second half of the list.
    let r = api.get(&format!("{}?limit=1000", tags("v2"))).await;
    assert_eq!(r.status, 500, "{}", r.text);
    let message = r.json()["message"].as_str().unwrap().to_string();
    assert!(message.contains(&failure(259)), "{message}");
    let r = api.delete(&format!("{}/t-0260", tags("v1"))).await;
    assert_eq!(r.status, 200, "{}", r.text);
    for query in ["?limit=1000", ""] {
        let r = api.get(&format!("{}{query}", tags("v2"))).await;
        assert_eq!(r.status, 200, "{}", r.text);
        let list = r.json();
        let items = list["items"].as_array().unwrap();
        let want: Vec<(String, String)> = (0..n)
            .filter(|i| *i != 10 && *i != 260)
            .map(|i| (format!("t-{i:04}"), i.to_string()))
            .collect();
        let got: Vec<(String, String)> = items
            .iter()
            .map(|o| {
                assert_eq!(o["apiVersion"], format!("{GROUP}/v2"), "{o}");
                assert_eq!(o["kind"], "Tag", "{o}");
                (
                    o["metadata"]["name"].as_str().unwrap().to_string(),
                    o["spec"]["tag"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        assert_eq!(got, want, "{query}");
    }
}

/// A `Tag` CRD: v1 (storage) `spec.image` (`name:tag`), v2 `spec.tag`, converted by a rule
/// whose transformation fails on an image without a tag.
fn tags_crd() -> Value {
    let schema = |field: &str| {
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            field: {"type": "string"}}}}})
    };
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("tags.{GROUP}")},
        "spec": {"group": GROUP, "scope": "Namespaced", "names": {"plural": "tags", "kind": "Tag"},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": schema("image")}},
                {"name": "v2", "served": true, "storage": false, "schema": {"openAPIV3Schema": schema("tag")}},
            ],
            "conversion": {"strategy": "ConversionRules", "conversionRules": [
                {"from": "v1", "to": "v2", "rules": [{"fromField": ".spec.image", "toField": ".spec.tag",
                    "transformation": "self.split(':')[1]"}]},
                {"from": "v2", "to": "v1", "rules": [{"fromField": ".spec.tag", "toField": ".spec.image"}]},
            ]},
        }
    })
}

fn tags(version: &str) -> String {
    format!("/apis/{GROUP}/{version}/namespaces/default/tags")
}

/// Creates the `Tag` CRD and `n` tags `t-0000`… at v1 with `image(i)`.
async fn create_tags(api: &crate::support::Api<'_>, n: usize, image: impl Fn(usize) -> String) {
    api.create_crd(tags_crd()).await;
    for i in 0..n {
        let r = api
            .post(
                &tags("v1"),
                json!({"apiVersion": format!("{GROUP}/v1"), "kind": "Tag",
                       "metadata": {"name": format!("t-{i:04}")}, "spec": {"image": image(i)}}),
            )
            .await;
        assert_eq!(r.status, 201, "{}", r.text);
    }
}

/// A page converted in process is converted chunk by chunk while the chunks before are sent:
/// its bytes are the streamed list's (converted 64 items at a time on one thread), a partial
/// page and its continuation are the whole list's, and a failure after the first chunk
/// (the response has started) aborts the body instead of ending it as if it were whole.
#[tokio::test]
async fn a_page_converted_while_it_is_sent_is_the_whole_list_and_a_late_failure_aborts_it() {
    let chunk = crd_server::handlers::list::PIPELINED_CHUNK;
    let s = TestServer::start().await;
    let api = s.api(HttpVersion::Http2);
    let n = 2 * chunk + 50;
    let late = chunk + 100;
    create_tags(&api, n + 1, |i| {
        if i == n {
            "no-tag".to_string()
        } else {
            format!("nginx:{i}")
        }
    })
    .await;
    // The failing tag is the last one: the first `n` items are a good page.
    let r = api.get(&format!("{}?limit={n}", tags("v2"))).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let page = r.json();
    let items = page["items"].as_array().unwrap();
    assert_eq!(items.len(), n);
    for (i, o) in items.iter().enumerate() {
        assert_eq!(o["metadata"]["name"], format!("t-{i:04}"), "{o}");
        assert_eq!(o["spec"]["tag"], i.to_string(), "{o}");
        assert_eq!(o["apiVersion"], format!("{GROUP}/v2"), "{o}");
    }
    let token = page["metadata"]["continue"].as_str().expect("continue");
    assert_eq!(page["metadata"]["remainingItemCount"], 1);
    let rest = api
        .get(&format!("{}?limit={n}&continue={token}", tags("v2")))
        .await;
    assert_eq!(rest.status, 500, "{}", rest.text);
    let message = rest.json()["message"].as_str().unwrap().to_string();
    assert!(message.contains("failed at index 0"), "{message}");
    // Without the failing tag, the whole page is the streamed list, byte for byte.
    let r = api.delete(&format!("{}/t-{n:04}", tags("v1"))).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let paged = api.get(&format!("{}?limit={}", tags("v2"), n + 10)).await;
    let streamed = api.get(&tags("v2")).await;
    assert_eq!(paged.status, 200, "{}", paged.text);
    assert_eq!(paged.text, streamed.text);
    // A failure in a later chunk: the response has started, so it is aborted.
    let r = api
        .call(
            Method::PATCH,
            &format!("{}/t-{late:04}", tags("v1")),
            "application/merge-patch+json",
            Some(json!({"spec": {"image": "no-tag"}})),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let page = format!("{}?limit={n}", tags("v2"));
    for version in [HttpVersion::Http1, HttpVersion::Http2] {
        // The abort may come before the server has flushed the status line (a loaded machine):
        // then the request itself fails. Either way no body reads as whole.
        let Ok(r) = s.api(version).request(Method::GET, &page).send().await else {
            continue;
        };
        let status = r.status();
        let body = r.bytes().await.map(|b| b.len());
        // A whole body would be `Ok(length)`.
        assert_eq!(
            (status.as_u16(), body.is_err()),
            (200, true),
            "{version:?}: {body:?}"
        );
    }
}
