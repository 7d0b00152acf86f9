//! `/openapi/v2` in protobuf (`application/com.github.proto-openapi.spec.v2@v1.0+protobuf`), as
//! kube-apiserver serves it to kubectl: the Swagger 2.0 JSON document encoded as gnostic's
//! `openapi.v2.Document` (google/gnostic `openapiv2/OpenAPIv2.proto`; field numbers below are
//! that file's). Values gnostic keeps as `Any` (defaults, enums, examples, vendor extensions)
//! are carried as their YAML text, which JSON is.

use serde_json::Value;

/// The media type kubectl asks for.
pub const MEDIA_TYPE: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";

/// The content type of the answer: kube-openapi's form of the same type, with `.` for the
/// `@` a media type may not contain.
pub const CONTENT_TYPE: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// Protobuf wire writer for one message.
#[derive(Default)]
struct Msg(Vec<u8>);

impl Msg {
    fn varint(&mut self, mut v: u64) {
        loop {
            let byte = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                self.0.push(byte);
                return;
            }
            self.0.push(byte | 0x80);
        }
    }

    fn key(&mut self, field: u32, wire: u8) {
        self.varint((u64::from(field) << 3) | u64::from(wire));
    }

    fn bytes(&mut self, field: u32, b: &[u8]) {
        self.key(field, 2);
        self.varint(b.len() as u64);
        self.0.extend_from_slice(b);
    }

    fn string(&mut self, field: u32, s: &str) {
        if !s.is_empty() {
            self.bytes(field, s.as_bytes());
        }
    }

    fn message(&mut self, field: u32, m: &Msg) {
        self.bytes(field, &m.0);
    }

    fn boolean(&mut self, field: u32, b: bool) {
        if b {
            self.key(field, 0);
            self.varint(1);
        }
    }

    fn int(&mut self, field: u32, v: i64) {
        self.key(field, 0);
        self.varint(v as u64);
    }

    fn double(&mut self, field: u32, v: f64) {
        self.key(field, 1);
        self.0.extend_from_slice(&v.to_le_bytes());
    }
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// `Any { string yaml = 2; }`.
fn any(v: &Value) -> Msg {
    let mut m = Msg::default();
    m.string(2, &format!("{v}\n"));
    m
}

/// `NamedAny` entries for the `x-` keys of an object.
fn vendor_extensions(m: &mut Msg, field: u32, obj: &Value) {
    if let Some(map) = obj.as_object() {
        for (k, v) in map.iter().filter(|(k, _)| k.starts_with("x-")) {
            let mut named = Msg::default();
            named.string(1, k);
            named.message(2, &any(v));
            m.message(field, &named);
        }
    }
}

/// `Schema`.
fn schema(s: &Value) -> Msg {
    let mut m = Msg::default();
    m.string(1, str_of(s, "$ref"));
    m.string(2, str_of(s, "format"));
    m.string(3, str_of(s, "title"));
    m.string(4, str_of(s, "description"));
    if let Some(d) = s.get("default") {
        m.message(5, &any(d));
    }
    let num = |k: &str| s.get(k).and_then(Value::as_f64);
    let int = |k: &str| s.get(k).and_then(Value::as_i64);
    if let Some(v) = num("multipleOf") {
        m.double(6, v);
    }
    if let Some(v) = num("maximum") {
        m.double(7, v);
    }
    m.boolean(
        8,
        s.get("exclusiveMaximum").and_then(Value::as_bool) == Some(true),
    );
    if let Some(v) = num("minimum") {
        m.double(9, v);
    }
    m.boolean(
        10,
        s.get("exclusiveMinimum").and_then(Value::as_bool) == Some(true),
    );
    for (field, key) in [
        (11, "maxLength"),
        (12, "minLength"),
        (14, "maxItems"),
        (15, "minItems"),
        (17, "maxProperties"),
        (18, "minProperties"),
    ] {
        if let Some(v) = int(key) {
            m.int(field, v);
        }
    }
    m.string(13, str_of(s, "pattern"));
    m.boolean(
        16,
        s.get("uniqueItems").and_then(Value::as_bool) == Some(true),
    );
    for r in s
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(r) = r.as_str() {
            m.bytes(19, r.as_bytes());
        }
    }
    for e in s
        .get("enum")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        m.message(20, &any(e));
    }
    match s.get("additionalProperties") {
        Some(Value::Bool(b)) => {
            let mut ap = Msg::default();
            ap.key(2, 0);
            ap.varint(u64::from(*b));
            m.message(21, &ap);
        }
        Some(sub @ Value::Object(_)) => {
            let mut ap = Msg::default();
            ap.message(1, &schema(sub));
            m.message(21, &ap);
        }
        _ => {}
    }
    if let Some(t) = s.get("type") {
        let mut ty = Msg::default();
        match t {
            Value::String(t) => ty.bytes(1, t.as_bytes()),
            Value::Array(ts) => {
                for t in ts.iter().filter_map(Value::as_str) {
                    ty.bytes(1, t.as_bytes());
                }
            }
            _ => {}
        }
        m.message(22, &ty);
    }
    if let Some(items) = s.get("items") {
        let mut it = Msg::default();
        match items {
            Value::Array(list) => {
                for i in list {
                    it.message(1, &schema(i));
                }
            }
            one => it.message(1, &schema(one)),
        }
        m.message(23, &it);
    }
    for a in s
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        m.message(24, &schema(a));
    }
    if let Some(props) = s.get("properties").and_then(Value::as_object) {
        let mut p = Msg::default();
        for (name, sub) in props {
            let mut named = Msg::default();
            named.string(1, name);
            named.message(2, &schema(sub));
            p.message(1, &named);
        }
        m.message(25, &p);
    }
    m.boolean(27, s.get("readOnly").and_then(Value::as_bool) == Some(true));
    if let Some(e) = s.get("example") {
        m.message(30, &any(e));
    }
    vendor_extensions(&mut m, 31, s);
    m
}

/// `ParametersItem`: a `$ref`, a body parameter, or a query/path/header parameter.
fn parameter(p: &Value) -> Msg {
    let mut item = Msg::default();
    if let Some(r) = p.get("$ref").and_then(Value::as_str) {
        let mut jr = Msg::default();
        jr.string(1, r);
        item.message(2, &jr);
        return item;
    }
    let required = p.get("required").and_then(Value::as_bool) == Some(true);
    let mut param = Msg::default();
    if str_of(p, "in") == "body" {
        let mut body = Msg::default();
        body.string(1, str_of(p, "description"));
        body.string(2, str_of(p, "name"));
        body.string(3, "body");
        body.boolean(4, required);
        if let Some(s) = p.get("schema") {
            body.message(5, &schema(s));
        }
        vendor_extensions(&mut body, 6, p);
        param.message(1, &body);
    } else {
        let (which, type_field, unique_field, ext_field) = match str_of(p, "in") {
            "query" => (3, 6, 20, 23),
            "header" => (1, 5, 19, 22),
            "formData" => (2, 6, 20, 23),
            _ => (4, 5, 19, 22),
        };
        let mut sub = Msg::default();
        sub.boolean(1, required);
        sub.string(2, str_of(p, "in"));
        sub.string(3, str_of(p, "description"));
        sub.string(4, str_of(p, "name"));
        if which == 3 || which == 2 {
            sub.boolean(
                5,
                p.get("allowEmptyValue").and_then(Value::as_bool) == Some(true),
            );
        }
        sub.string(type_field, str_of(p, "type"));
        sub.boolean(
            unique_field,
            p.get("uniqueItems").and_then(Value::as_bool) == Some(true),
        );
        vendor_extensions(&mut sub, ext_field, p);
        let mut non_body = Msg::default();
        non_body.message(which, &sub);
        param.message(2, &non_body);
    }
    item.message(1, &param);
    item
}

/// `Operation`.
fn operation(op: &Value) -> Msg {
    let mut m = Msg::default();
    let strings = |m: &mut Msg, field: u32, key: &str| {
        for s in op.get(key).and_then(Value::as_array).into_iter().flatten() {
            if let Some(s) = s.as_str() {
                m.bytes(field, s.as_bytes());
            }
        }
    };
    strings(&mut m, 1, "tags");
    m.string(2, str_of(op, "summary"));
    m.string(3, str_of(op, "description"));
    m.string(5, str_of(op, "operationId"));
    strings(&mut m, 6, "produces");
    strings(&mut m, 7, "consumes");
    for p in op
        .get("parameters")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        m.message(8, &parameter(p));
    }
    if let Some(responses) = op.get("responses").and_then(Value::as_object) {
        let mut rs = Msg::default();
        for (code, r) in responses {
            let mut resp = Msg::default();
            resp.string(1, str_of(r, "description"));
            if let Some(s) = r.get("schema") {
                let mut item = Msg::default();
                item.message(1, &schema(s));
                resp.message(2, &item);
            }
            let mut value = Msg::default();
            value.message(1, &resp);
            let mut named = Msg::default();
            named.string(1, code);
            named.message(2, &value);
            rs.message(1, &named);
        }
        m.message(9, &rs);
    }
    strings(&mut m, 10, "schemes");
    vendor_extensions(&mut m, 13, op);
    m
}

/// Encodes a Swagger 2.0 document (JSON) as gnostic's `openapi.v2.Document`.
pub fn encode_document(doc: &Value) -> Vec<u8> {
    let mut m = Msg::default();
    m.string(1, str_of(doc, "swagger"));
    if let Some(info) = doc.get("info") {
        let mut i = Msg::default();
        i.string(1, str_of(info, "title"));
        i.string(2, str_of(info, "version"));
        i.string(3, str_of(info, "description"));
        m.message(2, &i);
    }
    if let Some(paths) = doc.get("paths").and_then(Value::as_object) {
        let mut ps = Msg::default();
        for (path, item) in paths {
            let mut pi = Msg::default();
            for (field, verb) in [
                (2, "get"),
                (3, "put"),
                (4, "post"),
                (5, "delete"),
                (6, "options"),
                (7, "head"),
                (8, "patch"),
            ] {
                if let Some(op) = item.get(verb) {
                    pi.message(field, &operation(op));
                }
            }
            for p in item
                .get("parameters")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                pi.message(9, &parameter(p));
            }
            let mut named = Msg::default();
            named.string(1, path);
            named.message(2, &pi);
            ps.message(2, &named);
        }
        m.message(8, &ps);
    }
    if let Some(defs) = doc.get("definitions").and_then(Value::as_object) {
        let mut ds = Msg::default();
        for (name, s) in defs {
            let mut named = Msg::default();
            named.string(1, name);
            named.message(2, &schema(s));
            ds.message(1, &named);
        }
        m.message(9, &ds);
    }
    vendor_extensions(&mut m, 16, doc);
    m.0
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn small_documents_encode_field_by_field() {
        // swagger = 1 ("2.0"), info = 2 { title = 1 ("K") }.
        let doc = json!({"swagger": "2.0", "info": {"title": "K"}});
        assert_eq!(
            encode_document(&doc),
            vec![0x0a, 3, b'2', b'.', b'0', 0x12, 3, 0x0a, 1, b'K']
        );
        // definitions = 9 { additional_properties = 1 { name = 1, value = 2 { type = 22 } } }.
        let doc = json!({"definitions": {"a": {"type": "string"}}});
        let s = [0xb2, 0x01, 8, 0x0a, 6, b's', b't', b'r', b'i', b'n', b'g'];
        let mut named = vec![0x0a, 1, b'a', 0x12, s.len() as u8];
        named.extend_from_slice(&s);
        let mut defs = vec![0x0a, named.len() as u8];
        defs.extend_from_slice(&named);
        let mut want = vec![0x4a, defs.len() as u8];
        want.extend_from_slice(&defs);
        assert_eq!(encode_document(&doc), want);
    }
}
