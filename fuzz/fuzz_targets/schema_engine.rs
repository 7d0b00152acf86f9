//! The structural-schema engine over a fuzzed schema and object: the schema checks a CRD write
//! runs, then pruning, null pruning, defaulting and validation (create and update, embedded
//! resources, list sets and maps), as the custom-object write path applies them.
//!
//! Input: the schema as JSON, `%%`, the object as JSON, optionally `%%` and the old object.
#![no_main]

use crd_core::Path;
use crd_schema::{checks, default, prune, validate};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let docs = crd_apiserver_fuzz::parts(data, 3);
    let Some(schema) = crd_apiserver_fuzz::json(docs[0]) else {
        return;
    };
    let path = Path::new("spec")
        .child("validation")
        .child("openAPIV3Schema");
    let _ = checks::check_schema(&schema, &path, &checks::CheckOptions::create());
    let _ = checks::check_schema(
        &schema,
        &path,
        &checks::CheckOptions::create()
            .with_status_subresource(true)
            .ratcheted([&schema]),
    );
    let _ = checks::structural_conversion_error(&schema);
    let _ = checks::has_defaults(&schema);
    let _ = checks::has_kubernetes_extensions(&schema);
    let _ = checks::format_warnings(&schema);

    let Some(mut obj) = docs.get(1).and_then(|d| crd_apiserver_fuzz::json(d)) else {
        return;
    };
    let old = docs.get(2).and_then(|d| crd_apiserver_fuzz::json(d));
    let _ = prune::prune(&mut obj, &schema, true);
    prune::prune_nulls(&mut obj, &schema);
    default::apply_defaults(&mut obj, &schema);
    let root = Path::root();
    let _ = validate::validate(&schema, &obj);
    let _ = validate::validate_embedded_resources(&schema, &obj, &root);
    let _ = validate::validate_list_sets_and_maps(&schema, &obj, &root);
    if let Some(old) = &old {
        let _ = validate::validate_update(&schema, &obj, old);
    }
});
