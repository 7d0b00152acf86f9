//! Compile and evaluate the rules of a realistic CRD: a Deployment-like spec with replica bounds,
//! a list-map of containers with per-item rules, a label map, a transition rule and a
//! messageExpression. `cargo bench -p crd-cel --bench cel`.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};

fn schema() -> Value {
    json!({"type": "object", "properties": {"spec": {"type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.minReplicas <= self.replicas && self.replicas <= self.maxReplicas",
             "messageExpression": "'replicas ' + string(self.replicas) + ' out of range'"},
            {"rule": "self.containers.exists(c, c.name == self.primary)", "message": "primary must name a container"},
            {"rule": "self.containers.all(c, c.ports.all(p, p > 0 && p < 65536))"},
            {"rule": "!has(self.strategy) || self.strategy in ['Recreate', 'RollingUpdate']"}],
        "properties": {
            "replicas": {"type": "integer", "x-kubernetes-validations": [{"rule": "self >= 0"}]},
            "minReplicas": {"type": "integer"},
            "maxReplicas": {"type": "integer"},
            "primary": {"type": "string", "maxLength": 63},
            "strategy": {"type": "string", "maxLength": 32},
            "image": {"type": "string", "maxLength": 256,
                "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "image is immutable"}]},
            "labels": {"type": "object", "maxProperties": 32,
                "additionalProperties": {"type": "string", "maxLength": 63},
                "x-kubernetes-validations": [{"rule": "self.all(k, k.matches('^[a-z0-9./-]+$'))"}]},
            "containers": {"type": "array", "maxItems": 16, "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "required": ["name"],
                    "x-kubernetes-validations": [
                        {"rule": "self.name.matches('^[a-z][a-z0-9-]*$')"},
                        {"rule": "!has(self.cpu) || quantity(self.cpu).isLessThan(quantity('8'))"}],
                    "properties": {
                        "name": {"type": "string", "maxLength": 63},
                        "cpu": {"type": "string", "maxLength": 16},
                        "ports": {"type": "array", "maxItems": 8, "items": {"type": "integer"}}}}}}}}})
}

fn object(image: &str) -> Value {
    let containers: Vec<Value> = (0..4)
        .map(|i| json!({"name": format!("c{i}"), "cpu": "500m", "ports": [8080 + i, 9090 + i]}))
        .collect();
    json!({"apiVersion": "example.com/v1", "kind": "App", "metadata": {"name": "a"},
        "spec": {"replicas": 3, "minReplicas": 1, "maxReplicas": 10, "primary": "c0",
                 "strategy": "RollingUpdate", "image": image,
                 "labels": {"app": "web", "tier": "frontend", "example.com/team": "a"},
                 "containers": containers}})
}

fn bench(c: &mut Criterion) {
    let schema = schema();
    c.bench_function("compile 12 rules", |b| {
        b.iter(|| crd_cel::CompiledRules::compile(black_box(&schema)));
    });
    let rules = crd_cel::CompiledRules::compile(&schema);
    let new = object("nginx:1.27");
    let (errs, _) = crd_cel::validate(&rules, &new, None);
    assert!(
        errs.is_empty(),
        "the benchmark object must be valid: {errs:?}"
    );
    c.bench_function("validate on create", |b| {
        b.iter(|| crd_cel::validate(&rules, black_box(&new), None));
    });
    let old = object("nginx:1.27");
    c.bench_function("validate on update", |b| {
        b.iter(|| crd_cel::validate(&rules, black_box(&new), Some(black_box(&old))));
    });
    c.bench_function("check rules at CRD write", |b| {
        let path = crd_core::Path::new("spec")
            .child("validation")
            .child("openAPIV3Schema");
        b.iter(|| crd_cel::check_rules(black_box(&schema), &path, &[]));
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
