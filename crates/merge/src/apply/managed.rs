//! `metadata.managedFields`: the entries' wire form, their identity, decoding with
//! apimachinery's errors, validation as ObjectMeta validation does it, encoding in upstream
//! order, and the cap on Update entries.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::fieldset::FieldSet;

/// The operation a managed-fields entry records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Operation {
    /// Server-side apply.
    Apply,
    /// Create, update and non-apply patch.
    Update,
}

impl Operation {
    /// Returns the wire name (`Apply`, `Update`).
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// Who owns an entry. Update entries are per manager, apiVersion and subresource; Apply entries
/// per manager and subresource (apimachinery's `BuildManagerIdentifier`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ManagerId {
    /// The field manager's name.
    pub manager: String,
    /// Apply or Update.
    pub operation: Operation,
    /// The apiVersion of Update entries; empty for Apply entries.
    pub api_version: String,
    /// The subresource written through (`status`), or empty.
    pub subresource: String,
}

impl ManagerId {
    /// Returns the identity of `manager` writing with `operation` at `api_version` through
    /// `subresource`.
    pub fn new(manager: &str, operation: Operation, api_version: &str, subresource: &str) -> Self {
        ManagerId {
            manager: if manager.is_empty() {
                "unknown".to_owned()
            } else {
                manager.to_owned()
            },
            operation,
            api_version: match operation {
                Operation::Apply => String::new(),
                Operation::Update => api_version.to_owned(),
            },
            subresource: subresource.to_owned(),
        }
    }

    /// Returns the manager as conflict messages print it (`"kubectl" using v1`,
    /// `"m" with subresource "status"`).
    pub fn describe(&self) -> String {
        let mut s = String::new();
        super::value::go_quote(&mut s, &self.manager);
        if !self.subresource.is_empty() {
            s.push_str(" with subresource ");
            super::value::go_quote(&mut s, &self.subresource);
        }
        if self.operation == Operation::Update {
            s.push_str(" using ");
            s.push_str(&self.api_version);
        }
        s
    }
}

/// One manager's fields.
#[derive(Clone, Debug)]
pub struct Entry {
    /// The fields it owns.
    set: FieldSet,
    /// The apiVersion the field paths are expressed in.
    pub api_version: String,
    /// The last time the manager changed the object (RFC 3339, UTC), if known.
    pub time: Option<String>,
    /// The `fieldsV1` this entry was decoded from, reused when encoding while `set` is
    /// unchanged.
    raw: Option<Value>,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.set == other.set && self.api_version == other.api_version && self.time == other.time
    }
}

impl Eq for Entry {}

impl Entry {
    /// Returns an entry owning `set` at `api_version`, last changed at `time`.
    pub fn new(set: FieldSet, api_version: String, time: Option<String>) -> Self {
        Entry {
            set,
            api_version,
            time,
            raw: None,
        }
    }

    /// Returns the fields the manager owns.
    pub fn set(&self) -> &FieldSet {
        &self.set
    }

    /// Replaces the fields the manager owns.
    pub fn replace_set(&mut self, set: FieldSet) {
        self.set = set;
        self.raw = None;
    }

    /// Removes `paths` from the fields the manager owns.
    pub fn remove_paths(&mut self, paths: &FieldSet) {
        if self.set.difference_in_place(paths) {
            self.raw = None;
        }
    }

    /// Keeps `previous`'s encoding when this entry owns the same fields.
    pub(crate) fn reuse_encoding(&mut self, previous: Entry) {
        if self.raw.is_none() && previous.set == self.set {
            self.raw = previous.raw;
        }
    }
}

/// The decoded `metadata.managedFields` of an object.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ManagedFields {
    /// The entries by manager identity.
    pub entries: BTreeMap<ManagerId, Entry>,
}

/// Why `metadata.managedFields` could not be decoded (apimachinery's `DecodeManagedFields`
/// messages).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DecodeError(pub String);

/// One violation found by [`validate_managed_fields`], for the server to turn into a field
/// error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The field (`metadata.managedFields[0].operation`).
    pub field: String,
    /// What kind of error it is.
    pub kind: ViolationKind,
    /// The offending value.
    pub value: Value,
}

/// The kinds of managed-fields violations, with their details.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ViolationKind {
    /// `field.Invalid` with this detail (``must be `Apply` or `Update` ``).
    Invalid(String),
    /// `field.TooLong` with this maximum length.
    TooLong(usize),
}

/// The longest field manager name kube-apiserver accepts.
pub const FIELD_MANAGER_MAX_LENGTH: usize = 128;
/// The longest subresource name kube-apiserver accepts in a managed-fields entry.
pub const MAX_SUBRESOURCE_NAME_LENGTH: usize = 256;

fn str_field<'v>(o: &'v Map<String, Value>, k: &str) -> &'v str {
    o.get(k).and_then(Value::as_str).unwrap_or("")
}

/// Validates `metadata.managedFields` as apimachinery's `ValidateManagedFields` does.
pub fn validate_managed_fields(list: &Value) -> Vec<Violation> {
    let mut out = Vec::new();
    let Some(items) = list.as_array() else {
        return out;
    };
    for (i, item) in items.iter().enumerate() {
        let empty = Map::new();
        let o = item.as_object().unwrap_or(&empty);
        let at = |f: &str| format!("metadata.managedFields[{i}].{f}");
        let op = str_field(o, "operation");
        if op != "Apply" && op != "Update" {
            out.push(Violation {
                field: at("operation"),
                kind: ViolationKind::Invalid("must be `Apply` or `Update`".to_owned()),
                value: Value::String(op.to_owned()),
            });
        }
        let ft = str_field(o, "fieldsType");
        if !ft.is_empty() && ft != "FieldsV1" {
            out.push(Violation {
                field: at("fieldsType"),
                kind: ViolationKind::Invalid("must be `FieldsV1`".to_owned()),
                value: Value::String(ft.to_owned()),
            });
        }
        let manager = str_field(o, "manager");
        if manager.len() > FIELD_MANAGER_MAX_LENGTH {
            out.push(Violation {
                field: at("manager"),
                kind: ViolationKind::TooLong(FIELD_MANAGER_MAX_LENGTH),
                value: Value::String(manager.to_owned()),
            });
        }
        for (pos, c) in manager.char_indices() {
            if !is_go_printable(c) {
                out.push(Violation {
                    field: at("manager"),
                    kind: ViolationKind::Invalid(format!(
                        "invalid character {} (at position {pos})",
                        go_unicode_repr(c)
                    )),
                    value: Value::String(manager.to_owned()),
                });
            }
        }
        let sub = str_field(o, "subresource");
        if sub.len() > MAX_SUBRESOURCE_NAME_LENGTH {
            out.push(Violation {
                field: at("subresource"),
                kind: ViolationKind::TooLong(MAX_SUBRESOURCE_NAME_LENGTH),
                value: Value::String(sub.to_owned()),
            });
        }
    }
    out
}

/// Go's `unicode.IsPrint` for the characters that matter: letters, marks, numbers,
/// punctuation, symbols and the ASCII space.
fn is_go_printable(c: char) -> bool {
    c == ' '
        || !(c.is_control()
            || c.is_whitespace()
            || matches!(c as u32, 0xFFF9..=0xFFFB | 0xFEFF | 0x200B..=0x200F | 0x2028..=0x202E | 0x2060..=0x2064))
}

/// Go's `%#U`: `U+0009`, or `U+00E9 'é'` for printable characters.
fn go_unicode_repr(c: char) -> String {
    if is_go_printable(c) {
        format!("U+{:04X} '{c}'", c as u32)
    } else {
        format!("U+{:04X}", c as u32)
    }
}

/// Returns whether a request's `metadata.managedFields` asks for a reset: `[]` or `[{}]`
/// (apimachinery's `isResetManagedFields`).
pub fn is_reset(list: Option<&Value>) -> bool {
    match list {
        Some(Value::Array(items)) => match items.as_slice() {
            [] => true,
            [Value::Object(o)] => o.iter().all(|(k, v)| match k.as_str() {
                "manager" | "operation" | "apiVersion" | "fieldsType" | "subresource" => {
                    v.is_null() || v.as_str() == Some("")
                }
                "time" | "fieldsV1" => v.is_null(),
                _ => true,
            }),
            _ => false,
        },
        _ => false,
    }
}

impl ManagedFields {
    /// Decodes `metadata.managedFields` taken out of an object, as [`ManagedFields::decode`]
    /// does; entries whose `fieldsV1` is canonical keep it, and [`ManagedFields::encode`] reuses
    /// it while their fields do not change.
    pub fn decode_owned(list: Option<Value>) -> Result<ManagedFields, DecodeError> {
        let mut out = Self::decode_marking_canonical(list.as_ref(), true)?;
        if let Some(Value::Array(items)) = list {
            for item in items {
                let Value::Object(mut o) = item else { continue };
                let operation = match str_field(&o, "operation") {
                    "Apply" => Operation::Apply,
                    _ => Operation::Update,
                };
                let id = ManagerId {
                    manager: str_field(&o, "manager").to_owned(),
                    operation,
                    api_version: match operation {
                        Operation::Apply => String::new(),
                        Operation::Update => str_field(&o, "apiVersion").to_owned(),
                    },
                    subresource: str_field(&o, "subresource").to_owned(),
                };
                if let Some(e) = out.entries.get_mut(&id)
                    && e.raw.is_some()
                {
                    e.raw = o.remove("fieldsV1");
                }
            }
        }
        for e in out.entries.values_mut() {
            if e.raw == Some(Value::Null) {
                e.raw = None;
            }
        }
        Ok(out)
    }

    /// Decodes `metadata.managedFields` (absent or `null` is empty) as apimachinery's
    /// `DecodeManagedFields` does, with its error messages.
    pub fn decode(list: Option<&Value>) -> Result<ManagedFields, DecodeError> {
        Self::decode_marking_canonical(list, false)
    }

    /// [`ManagedFields::decode`], with `raw` set to `null` on entries whose `fieldsV1` is
    /// canonical.
    fn decode_marking_canonical(
        list: Option<&Value>,
        check: bool,
    ) -> Result<ManagedFields, DecodeError> {
        let mut out = ManagedFields::default();
        let items = match list {
            None | Some(Value::Null) => return Ok(out),
            Some(Value::Array(items)) => items,
            Some(_) => {
                return Err(DecodeError("managedFields must be a list".to_owned()));
            }
        };
        for (i, item) in items.iter().enumerate() {
            let Some(o) = item.as_object() else {
                return Err(DecodeError(format!(
                    "managed fields entry {i} must be an object"
                )));
            };
            let operation = match str_field(o, "operation") {
                "Apply" => Operation::Apply,
                "Update" => Operation::Update,
                _ => {
                    return Err(DecodeError(
                        "operation must be `Apply` or `Update`".to_owned(),
                    ));
                }
            };
            let api_version = str_field(o, "apiVersion");
            if api_version.is_empty() {
                return Err(DecodeError("apiVersion must not be empty".to_owned()));
            }
            match str_field(o, "fieldsType") {
                "FieldsV1" => {}
                "" => {
                    return Err(DecodeError(format!(
                        "missing fieldsType in managed fields entry {i}"
                    )));
                }
                other => {
                    return Err(DecodeError(format!(
                        "invalid fieldsType {other:?} in managed fields entry {i}"
                    )));
                }
            }
            let (set, canonical) = match o.get("fieldsV1") {
                None | Some(Value::Null) => (FieldSet::new(), false),
                Some(v) => FieldSet::from_fields_v1_canonical(v, check).map_err(|e| {
                    DecodeError(format!(
                        "error decoding versioned set from {}: error decoding set: {e}",
                        entry_go_repr(o)
                    ))
                })?,
            };
            let id = ManagerId {
                manager: str_field(o, "manager").to_owned(),
                operation,
                api_version: match operation {
                    Operation::Apply => String::new(),
                    Operation::Update => api_version.to_owned(),
                },
                subresource: str_field(o, "subresource").to_owned(),
            };
            let time = o.get("time").and_then(Value::as_str).map(normalize_time);
            // The encoding is kept only by `decode_owned`, which can move it instead of copying.
            let raw = canonical.then_some(Value::Null);
            out.entries.insert(
                id,
                Entry {
                    set,
                    api_version: api_version.to_owned(),
                    time,
                    raw,
                },
            );
        }
        Ok(out)
    }

    /// Encodes the entries as `metadata.managedFields`, sorted as apimachinery sorts them
    /// (operation, time in seconds, manager, apiVersion, subresource). Returns `None` when there
    /// are no entries (the field is then absent).
    pub fn encode(&self) -> Option<Value> {
        if self.entries.is_empty() {
            return None;
        }
        let mut sorted: Vec<(&ManagerId, &Entry)> = self.entries.iter().collect();
        sorted.sort_by(|(pi, pe), (qi, qe)| {
            pi.operation
                .cmp(&qi.operation)
                .then_with(|| {
                    time_seconds(pe.time.as_deref()).cmp(&time_seconds(qe.time.as_deref()))
                })
                .then_with(|| pi.manager.cmp(&qi.manager))
                .then_with(|| pe.api_version.cmp(&qe.api_version))
                .then_with(|| pi.subresource.cmp(&qi.subresource))
        });
        let list = sorted
            .into_iter()
            .map(|(id, e)| {
                // Keys in byte order, as custom resources' unstructured JSON has them.
                let mut o = Map::new();
                o.insert(
                    "apiVersion".to_owned(),
                    Value::String(e.api_version.clone()),
                );
                o.insert(
                    "fieldsType".to_owned(),
                    Value::String("FieldsV1".to_owned()),
                );
                let fields = match &e.raw {
                    Some(raw) if raw.is_object() => raw.clone(),
                    _ => e.set.to_fields_v1(),
                };
                o.insert("fieldsV1".to_owned(), fields);
                if !id.manager.is_empty() {
                    o.insert("manager".to_owned(), Value::String(id.manager.clone()));
                }
                o.insert(
                    "operation".to_owned(),
                    Value::String(id.operation.as_str().to_owned()),
                );
                if !id.subresource.is_empty() {
                    o.insert(
                        "subresource".to_owned(),
                        Value::String(id.subresource.clone()),
                    );
                }
                if let Some(t) = &e.time {
                    o.insert("time".to_owned(), Value::String(t.clone()));
                }
                Value::Object(o)
            })
            .collect();
        Some(Value::Array(list))
    }

    /// Merges the oldest Update entries into `ancient-changes` entries (one per apiVersion) until
    /// at most `max` Update entries remain (apimachinery's `capManagersManager`).
    pub fn cap_update_managers(&mut self, max: usize) {
        let mut updaters: Vec<ManagerId> = self
            .entries
            .keys()
            .filter(|id| id.operation == Operation::Update)
            .cloned()
            .collect();
        if updaters.len() <= max {
            return;
        }
        updaters.sort_by(|a, b| {
            let ta = time_seconds(self.entries[a].time.as_deref());
            let tb = time_seconds(self.entries[b].time.as_deref());
            ta.cmp(&tb).then_with(|| identifier(a).cmp(&identifier(b)))
        });
        let mut first_by_version: BTreeMap<String, ManagerId> = BTreeMap::new();
        let mut length = updaters.len();
        for id in updaters {
            if length <= max {
                break;
            }
            let Some(entry) = self.entries.get(&id).cloned() else {
                continue;
            };
            let version = entry.api_version.clone();
            let bucket = ManagerId::new("ancient-changes", Operation::Update, &version, "");
            if let Some(first) = first_by_version.get(&version) {
                if !self.entries.contains_key(&bucket)
                    && let Some(s) = self.entries.remove(first)
                {
                    self.entries.insert(bucket.clone(), s);
                }
                let Some(b) = self.entries.get_mut(&bucket) else {
                    continue;
                };
                let merged = entry.set.union(&b.set);
                b.replace_set(merged);
                b.api_version = entry.api_version;
                b.time = entry.time;
                if id != bucket {
                    self.entries.remove(&id);
                }
                length -= 1;
            } else {
                first_by_version.insert(version, id);
            }
        }
    }
}

/// The manager identifier apimachinery builds (the entry's JSON without fields and time), used
/// where upstream orders by it.
pub(crate) fn identifier(id: &ManagerId) -> String {
    let quoted = |v: &str| Value::String(v.to_owned()).to_string();
    let mut s = format!(
        "{{\"manager\":{},\"operation\":\"{}\"",
        quoted(&id.manager),
        id.operation.as_str()
    );
    if !id.api_version.is_empty() {
        s.push_str(",\"apiVersion\":");
        s.push_str(&quoted(&id.api_version));
    }
    if !id.subresource.is_empty() {
        s.push_str(",\"subresource\":");
        s.push_str(&quoted(&id.subresource));
    }
    s.push('}');
    s
}

/// A Go `%v` rendering of an entry for decode errors (close to upstream's struct print).
fn entry_go_repr(o: &Map<String, Value>) -> String {
    format!(
        "{{{} {} {} {} {} {} {}}}",
        str_field(o, "manager"),
        str_field(o, "operation"),
        str_field(o, "apiVersion"),
        o.get("time").and_then(Value::as_str).unwrap_or("nil"),
        str_field(o, "fieldsType"),
        o.get("fieldsV1")
            .map_or_else(|| "nil".to_owned(), Value::to_string),
        str_field(o, "subresource"),
    )
}

/// Parses an RFC 3339 time into seconds since the epoch; unparsable or absent times are 0, as
/// a nil time is upstream.
pub(crate) fn time_seconds(t: Option<&str>) -> i64 {
    t.and_then(parse_rfc3339).unwrap_or(0)
}

fn parse_rfc3339(text: &str) -> Option<i64> {
    let bytes = text.as_bytes();
    if bytes.len() < 20 || bytes[4] != b'-' || bytes[7] != b'-' || !matches!(bytes[10], b'T' | b't')
    {
        return None;
    }
    let num = |r: std::ops::Range<usize>| text.get(r)?.parse::<i64>().ok();
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let mut rest = &text[19..];
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        rest = &frac[digits..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes().first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let oh = rest.get(1..3)?.parse::<i64>().ok()?;
            let om = rest.get(4..6)?.parse::<i64>().ok()?;
            sign * (oh * 3600 + om * 60)
        }
    };
    Some(days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second - offset)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Re-encodes a time as `metav1.Time` does (RFC 3339, UTC, whole seconds); unparsable times are
/// kept as they are.
pub(crate) fn normalize_time(t: &str) -> String {
    let Some(secs) = parse_rfc3339(t) else {
        return t.to_owned();
    };
    let (days, rem) = (secs.div_euclid(86400), secs.rem_euclid(86400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}
