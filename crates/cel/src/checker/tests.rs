//! Data-driven checker tests: (rule, schema) → result type name or cel-go's error text.

use kube_cel::cel::common::ast::{
    CallExpr, ComprehensionExpr, EntryExpr, Expr, IdedExpr, ListExpr, LiteralValue,
};
use kube_cel::cel::parser::Parser;
use serde_json::{Value, json};

use super::{Checked, Compat, Env, Type, check, require_bool, require_string};

/// Rewrites the forms the integrator's macro expansion turns into comprehensions
/// (`cel.bind`, two-variable `all`/`exists`/`existsOne`, `transformList`, `transformMap`,
/// `transformMapEntry`) the way cel-go expands them, so the checker sees the same trees.
struct Expander {
    next: u64,
}

impl Expander {
    fn id(&mut self) -> u64 {
        self.next += 1;
        self.next
    }
    fn mk(&mut self, expr: Expr) -> IdedExpr {
        IdedExpr {
            id: self.id(),
            expr,
        }
    }
    fn ident(&mut self, n: &str) -> IdedExpr {
        self.mk(Expr::Ident(n.to_string()))
    }
    fn call(&mut self, f: &str, args: Vec<IdedExpr>) -> IdedExpr {
        self.mk(Expr::Call(CallExpr {
            func_name: f.to_string(),
            target: None,
            args,
        }))
    }
    fn boolean(&mut self, b: bool) -> IdedExpr {
        self.mk(Expr::Literal(LiteralValue::Boolean(b.into())))
    }

    fn expand(&mut self, e: IdedExpr) -> IdedExpr {
        let id = e.id;
        let expr = match e.expr {
            Expr::Call(mut c) => {
                c.args = c.args.into_iter().map(|a| self.expand(a)).collect();
                c.target = c.target.map(|t| Box::new(self.expand(*t)));
                let var = |a: &IdedExpr| match &a.expr {
                    Expr::Ident(n) => Some(n.clone()),
                    _ => None,
                };
                let is_cel = c
                    .target
                    .as_deref()
                    .is_some_and(|t| matches!(&t.expr, Expr::Ident(n) if n == "cel"));
                if c.func_name == "bind" && is_cel && c.args.len() == 3 {
                    let mut args = c.args;
                    let body = args.pop().unwrap_or_default();
                    let init = args.pop().unwrap_or_default();
                    let v = var(&args[0]).unwrap_or_default();
                    let range = self.mk(Expr::List(ListExpr::new(vec![])));
                    let cond = self.boolean(false);
                    let step = self.ident(&v);
                    return IdedExpr {
                        id,
                        expr: Expr::Comprehension(Box::new(ComprehensionExpr {
                            iter_range: range,
                            iter_var: "#unused".into(),
                            iter_var2: None,
                            accu_var: v,
                            accu_init: init,
                            loop_cond: cond,
                            loop_step: step,
                            result: body,
                        })),
                    };
                }
                let two = c.args.len() >= 3 && c.target.is_some();
                if two
                    && matches!(
                        c.func_name.as_str(),
                        "all" | "exists" | "existsOne" | "transformList" | "transformMap"
                    )
                {
                    return self.two_var(id, c);
                }
                Expr::Call(c)
            }
            Expr::Select(mut s) => {
                s.operand = Box::new(self.expand(*s.operand));
                Expr::Select(s)
            }
            Expr::List(mut l) => {
                l.elements = l.elements.into_iter().map(|a| self.expand(a)).collect();
                Expr::List(l)
            }
            Expr::Map(mut m) => {
                for entry in &mut m.entries {
                    if let EntryExpr::MapEntry(me) = &mut entry.expr {
                        me.key = self.expand(std::mem::take(&mut me.key));
                        me.value = self.expand(std::mem::take(&mut me.value));
                    }
                }
                Expr::Map(m)
            }
            Expr::Comprehension(mut c) => {
                c.iter_range = self.expand(c.iter_range);
                c.loop_step = self.expand(c.loop_step);
                c.result = self.expand(c.result);
                Expr::Comprehension(c)
            }
            other => other,
        };
        IdedExpr { id, expr }
    }

    fn two_var(&mut self, id: u64, c: CallExpr) -> IdedExpr {
        let mut args = c.args;
        let range = c.target.map(|t| *t).unwrap_or_default();
        let name = |a: &IdedExpr| match &a.expr {
            Expr::Ident(n) => n.clone(),
            _ => String::new(),
        };
        let v1 = name(&args[0]);
        let v2 = name(&args[1]);
        let last = args.pop().unwrap_or_default();
        let acc = "@result";
        let (init, cond, step, result) = match c.func_name.as_str() {
            "all" | "exists" => {
                let all = c.func_name == "all";
                let init = self.boolean(all);
                let a = self.ident(acc);
                let cond_arg = if all { a } else { self.call("!_", vec![a]) };
                let cond = self.call("@not_strictly_false", vec![cond_arg]);
                let a2 = self.ident(acc);
                let step = self.call(if all { "_&&_" } else { "_||_" }, vec![a2, last]);
                let result = self.ident(acc);
                (init, cond, step, result)
            }
            "existsOne" => {
                let init = self.mk(Expr::Literal(LiteralValue::Int(0.into())));
                let cond = self.boolean(true);
                let a = self.ident(acc);
                let one = self.mk(Expr::Literal(LiteralValue::Int(1.into())));
                let inc = self.call("_+_", vec![a, one]);
                let a2 = self.ident(acc);
                let step = self.call("_?_:_", vec![last, inc, a2]);
                let a3 = self.ident(acc);
                let one2 = self.mk(Expr::Literal(LiteralValue::Int(1.into())));
                let result = self.call("_==_", vec![a3, one2]);
                (init, cond, step, result)
            }
            "transformList" => {
                let init = self.mk(Expr::List(ListExpr::new(vec![])));
                let cond = self.boolean(true);
                let a = self.ident(acc);
                let wrapped = self.mk(Expr::List(ListExpr::new(vec![last])));
                let mut step = self.call("_+_", vec![a, wrapped]);
                if args.len() == 3 {
                    let filter = args.pop().unwrap_or_default();
                    let a2 = self.ident(acc);
                    step = self.call("_?_:_", vec![filter, step, a2]);
                }
                let result = self.ident(acc);
                (init, cond, step, result)
            }
            _ => {
                // transformMap
                let init = self.mk(Expr::Map(kube_cel::cel::common::ast::MapExpr {
                    entries: vec![],
                }));
                let cond = self.boolean(true);
                let a = self.ident(acc);
                let k = self.ident(&v1);
                let mut step = self.call("cel.@mapInsert", vec![a, k, last]);
                if args.len() == 3 {
                    let filter = args.pop().unwrap_or_default();
                    let a2 = self.ident(acc);
                    step = self.call("_?_:_", vec![filter, step, a2]);
                }
                let result = self.ident(acc);
                (init, cond, step, result)
            }
        };
        IdedExpr {
            id,
            expr: Expr::Comprehension(Box::new(ComprehensionExpr {
                iter_range: range,
                iter_var: v1,
                iter_var2: Some(v2),
                accu_var: acc.into(),
                accu_init: init,
                loop_cond: cond,
                loop_step: step,
                result,
            })),
        }
    }
}

fn max_id(e: &IdedExpr) -> u64 {
    let kids: Vec<&IdedExpr> = match &e.expr {
        Expr::Call(c) => c.target.iter().map(|t| &**t).chain(&c.args).collect(),
        Expr::Select(s) => vec![&*s.operand],
        Expr::List(l) => l.elements.iter().collect(),
        Expr::Map(m) => m
            .entries
            .iter()
            .flat_map(|en| match &en.expr {
                EntryExpr::MapEntry(me) => vec![&me.key, &me.value],
                EntryExpr::StructField(sf) => vec![&sf.value],
            })
            .collect(),
        Expr::Comprehension(c) => vec![
            &c.iter_range,
            &c.accu_init,
            &c.loop_cond,
            &c.loop_step,
            &c.result,
        ],
        _ => vec![],
    };
    kids.into_iter().map(max_id).fold(e.id, u64::max)
}

fn run_env(rule: &str, schema: &Value, root: bool, compat: Compat) -> Result<Checked, String> {
    let parsed = Parser::new()
        .enable_optional_syntax(true)
        .parse(rule)
        .map_err(|e| format!("parse: {e}"))?;
    let mut x = Expander {
        next: max_id(&parsed),
    };
    let expr = x.expand(parsed);
    let env = Env {
        dyn_vars: &[],
        self_schema: schema,
        resource_root: root,
        old_self: true,
        optional_old_self: false,
        compat,
        typed_vars: &[],
        mutation: false,
    };
    check(&expr, rule, &env)
}

fn run(rule: &str, schema: &Value) -> Result<String, String> {
    run_env(rule, schema, false, Compat::StoredExpressions).map(|c| c.result.name())
}

fn int() -> Value {
    json!({"type": "integer"})
}

/// Schema fitting the seed's example rules.
fn example_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "minReplicas": {"type": "integer"},
            "replicas": {"type": "integer"},
            "maxReplicas": {"type": "integer"},
            "stateCounts": {"type": "object", "additionalProperties": {"type": "integer"}},
            "list1": {"type": "array", "items": {"type": "string"}},
            "list2": {"type": "array", "items": {"type": "string"}},
            "map1": {"type": "object", "additionalProperties": {"type": "string"}},
            "envars": {"type": "array", "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "properties": {
                    "name": {"type": "string"}, "value": {"type": "string"}}}},
            "expired": {"type": "string", "format": "date-time"},
            "created": {"type": "string", "format": "date-time"},
            "ttl": {"type": "string", "format": "duration"},
            "health": {"type": "string"},
            "widgets": {"type": "array", "items": {"type": "object", "properties": {
                "key": {"type": "string"}, "foo": {"type": "integer"}}}},
            "prefix": {"type": "string"},
            "set1": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "set2": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "names": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "details": {"type": "object", "additionalProperties": {"type": "string"}},
            "clusters": {"type": "array", "items": {"type": "object", "properties": {
                "name": {"type": "string"}}}},
            "primary": {"type": "string"},
            "spec": {"type": "object", "properties": {
                "minReplicas": {"type": "integer"}, "maxDesired": {"type": "integer"}}},
            "status": {"type": "object", "properties": {
                "availableReplicas": {"type": "integer"}, "actual": {"type": "integer"}}},
            "components": {"type": "object", "additionalProperties": {"type": "object",
                "properties": {"priority": {"type": "integer"}}}},
            "values": {"type": "array", "items": {"type": "integer"}},
            "foo": {"type": "integer"},
            "namespace": {"type": "integer"},
            "x-prop": {"type": "integer"},
            "redact__d": {"type": "integer"},
            "field": {"type": "string"},
            "ios": {"x-kubernetes-int-or-string": true},
            "q": {"type": "string"},
            "unknown": {"x-kubernetes-preserve-unknown-fields": true},
        }
    })
}

#[test]
fn seed_errors() {
    assert_eq!(
        run("self == true", &int()),
        Err("ERROR: <input>:1:6: found no matching overload for '_==_' applied to '(int, bool)'\n | self == true\n | .....^".into())
    );
    let obj = json!({"type": "object", "properties": {"a": {"type": "integer"}}});
    assert_eq!(
        run("self.nonExistingField > 0", &obj),
        Err("ERROR: <input>:1:5: undefined field 'nonExistingField'\n | self.nonExistingField > 0\n | ....^".into())
    );
    // `has(self)` is refused by the parser (cel-go: `<input>:1:4: invalid argument to has()
    // macro`); cel 0.13 reports it at column 5, which the parse step must adjust.
    assert!(run("has(self)", &obj).is_err());
}

#[test]
fn seed_examples_type_as_bool() {
    let schema = example_schema();
    let rules = [
        "self.minReplicas <= self.replicas && self.replicas <= self.maxReplicas",
        "'Available' in self.stateCounts",
        "(size(self.list1) == 0) != (size(self.list2) == 0)",
        "!('MY_KEY' in self.map1) || self.map1['MY_KEY'].matches('^[a-zA-Z]*$')",
        "self.envars.filter(e, e.name == 'MY_ENV').all(e, e.value.matches('^[a-zA-Z]*$'))",
        "has(self.expired) && self.created + self.ttl < self.expired",
        "self.health.startsWith('ok')",
        "self.widgets.exists(w, w.key == 'x' && w.foo < 10)",
        "self.set1.all(e, !(e in self.set2))",
        "size(self.names) == size(self.details) && self.names.all(n, n in self.details)",
        "size(self.clusters.filter(c, c.name == self.primary)) == 1",
        "self.status.availableReplicas >= self.spec.minReplicas",
        "has(self.foo)",
        "self.status.actual <= self.spec.maxDesired",
        "self.components['Widget'].priority < 10",
        "self.values.all(value, value >= 0 && value < 100)",
        "self.__namespace__ > 0",
        "self.x__dash__prop > 0",
        "self.redact__underscores__d > 0",
        "self.foo == oldSelf.foo",
        "!has(oldSelf.field) || has(self.field)",
        "self.widgets.exists_one(w, w.foo == 1)",
        "self.values.map(v, v * 2).all(v, v < 200)",
        "self.values.map(v, v > 1, v * 2).exists(v, v == 4)",
        "self.details.all(k, k.startsWith('a'))",
        "self.stateCounts.exists(k, self.stateCounts[k] > 1)",
        "self.foo > 1 ? self.health == 'ok' : self.health != 'ok'",
        "self.values.isSorted() && self.values.sum() < 100 && self.values.min() >= 0",
        "self.values.indexOf(1) >= 0 && self.list1.lastIndexOf('a') < 3",
        "self.health.find('[0-9]+') != '' && self.health.findAll('x', 2).size() < 3",
        "url(self.health).getHost() == 'example.com' && isURL(self.health)",
        "self.health.charAt(0) == 'o' && self.health.lowerAscii().split(',').size() > 0",
        "self.list1.join(',') == 'a' && self.health.substring(1, 2).trim() == 'k'",
        "sets.contains(self.set1, self.set2) || sets.intersects(self.set1, ['a'])",
        "self.created < timestamp('2024-01-01T00:00:00Z') && self.ttl > duration('1h')",
        "self.created.getFullYear() > 2000 && self.ttl.getHours() < 24",
        "int(self.health) > 0 || double(self.foo) > 1.0 || string(self.foo) == '1'",
        "self.foo < 1.5 && self.foo >= 1u",
        "self.list1 + self.list2 == ['a']",
        "dyn(self.foo) == 'x'",
        "self.ios == 1 || self.ios == 'x'",
        "type(self.ios) == string ? self.ios == '100%' : self.ios == 1000",
        "type(self.foo) == int",
        "self.map1.size() < 3 && size(self.health) < 10",
        "{'a': 1}['a'] == 1 && [1, 2, 3][0] == 1",
        "'%s'.format([self.foo]) == '1'",
        "self.health.matches('^ok') && matches(self.health, 'k$')",
        "b'abc' + b'd' == bytes('abcd')",
        "null == null",
        "self.q.indexOf('a', 1) > 0 && self.q.replace('a', 'b') != ''",
    ];
    for rule in rules {
        assert_eq!(run(rule, &schema), Ok("bool".into()), "{rule}");
    }
}

#[test]
fn transition_examples_type_as_bool() {
    let s = json!({"type": "string"});
    for rule in [
        "!(self == 'high' && oldSelf == 'low') && !(self == 'low' && oldSelf == 'high')",
        "oldSelf != 'bar' || self == 'bar'",
        "oldSelf != 'X' || self in ['A', 'B']",
    ] {
        assert_eq!(run(rule, &s), Ok("bool".into()), "{rule}");
    }
    assert_eq!(run("self >= oldSelf", &int()), Ok("bool".into()));
    let set = json!({"type": "array", "items": {"type": "string"}});
    assert_eq!(
        run("self.all(element, element in oldSelf)", &set),
        Ok("bool".into())
    );
}

#[test]
fn result_types() {
    let schema = example_schema();
    let cases: [(&str, &str); 16] = [
        ("self.foo", "int"),
        ("self.values", "list(int)"),
        ("self.stateCounts", "map(string, int)"),
        ("self.created", "google.protobuf.Timestamp"),
        ("self.ttl", "google.protobuf.Duration"),
        ("self.ios", "dyn"),
        ("self.?foo", "optional_type(int)"),
        ("self.?foo.orValue(1)", "int"),
        ("self.map1[?'k']", "optional_type(string)"),
        ("type(self.foo)", "type(int)"),
        ("[]", "list(dyn)"),
        ("{}", "map(dyn, dyn)"),
        ("self.values.map(v, string(v))", "list(string)"),
        ("self.spec", "selfType0.spec"),
        ("self.widgets[0]", "object"),
        ("optional.none()", "optional_type(dyn)"),
    ];
    for (rule, want) in cases {
        assert_eq!(run(rule, &schema), Ok(want.into()), "{rule}");
    }
}

#[test]
fn errors_match_cel_go() {
    let schema = example_schema();
    let cases: [(&str, &str); 14] = [
        (
            "self.health.startsWith(1)",
            "ERROR: <input>:1:23: found no matching overload for 'startsWith' applied to 'string.(int)'\n | self.health.startsWith(1)\n | ......................^",
        ),
        (
            "self.foo == 1.5",
            "ERROR: <input>:1:10: found no matching overload for '_==_' applied to '(int, double)'\n | self.foo == 1.5\n | .........^",
        ),
        (
            "x > 1",
            "ERROR: <input>:1:1: undeclared reference to 'x' (in container '')\n | x > 1\n | ^",
        ),
        (
            "self.values.all(v, v)",
            "ERROR: <input>:1:20: expected type 'bool' but found 'int'\n | self.values.all(v, v)\n | ...................^",
        ),
        (
            "[1, 'a'].size() > 0",
            "ERROR: <input>:1:5: expected type 'int' but found 'string'\n | [1, 'a'].size() > 0\n | ....^",
        ),
        (
            "self.foo.bar == 1",
            "ERROR: <input>:1:9: type 'int' does not support field selection\n | self.foo.bar == 1\n | ........^",
        ),
        (
            "self.foo.all(x, x)",
            "ERROR: <input>:1:5: expression of type 'int' cannot be range of a comprehension (must be list, map, or dynamic)\n | self.foo.all(x, x)\n | ....^",
        ),
        (
            "self.health == null",
            "ERROR: <input>:1:13: found no matching overload for '_==_' applied to '(string, null_type)'\n | self.health == null\n | ............^",
        ),
        (
            "self.unknown == 1",
            "ERROR: <input>:1:5: undefined field 'unknown'\n | self.unknown == 1\n | ....^",
        ),
        (
            "self.foo > 0 &&\n  self.bogus",
            "ERROR: <input>:2:7: undefined field 'bogus'\n |   self.bogus\n | ......^",
        ),
        (
            "self.foo + 'a' == 'b' || self.nope",
            "ERROR: <input>:1:10: found no matching overload for '_+_' applied to '(int, string)'\n | self.foo + 'a' == 'b' || self.nope\n | .........^\nERROR: <input>:1:30: undefined field 'nope'\n | self.foo + 'a' == 'b' || self.nope\n | .............................^",
        ),
        (
            "self.values.filter(v, v > 'a').size() == 0",
            "ERROR: <input>:1:25: found no matching overload for '_>_' applied to '(int, string)'\n | self.values.filter(v, v > 'a').size() == 0\n | ........................^",
        ),
        ("1 + 1", ""),
        (
            "Foo{a: 1}",
            "ERROR: <input>:1:4: undeclared reference to 'Foo' (in container '')\n | Foo{a: 1}\n | ...^",
        ),
    ];
    for (rule, want) in cases {
        if want.is_empty() {
            assert_eq!(run(rule, &schema), Ok("int".into()));
            continue;
        }
        assert_eq!(run(rule, &schema), Err(want.into()), "{rule}");
    }
}

#[test]
fn int_or_string_and_root_metadata() {
    let ios = json!({"x-kubernetes-int-or-string": true});
    assert_eq!(
        run("type(self) == string ? self == '100%' : self == 1000", &ios),
        Ok("bool".into())
    );
    let root = json!({"type": "object", "properties": {"prefix": {"type": "string"},
        "metadata": {"type": "object", "properties": {"labels": {"type": "object",
            "additionalProperties": {"type": "string"}}}}}});
    let ok = run_env(
        "self.metadata.name.startsWith(self.prefix) && self.kind == 'X' && self.apiVersion != ''",
        &root,
        true,
        Compat::StoredExpressions,
    );
    assert_eq!(ok.map(|c| c.result.name()), Ok("bool".into()));
    let labels = run_env(
        "size(self.metadata.labels) > 0",
        &root,
        true,
        Compat::StoredExpressions,
    );
    assert_eq!(
        labels.map(|c| c.result.name()),
        Err("ERROR: <input>:1:19: undefined field 'labels'\n | size(self.metadata.labels) > 0\n | ..................^".into())
    );
    let embedded = json!({"type": "object", "properties": {"inner": {"type": "object",
        "x-kubernetes-embedded-resource": true, "properties": {}}}});
    assert_eq!(
        run("self.inner.metadata.generateName == 'x'", &embedded),
        Ok("bool".into())
    );
}

#[test]
fn optional_syntax() {
    let obj = json!({"type": "object", "properties": {"a": {"type": "integer"},
        "m": {"type": "object", "additionalProperties": {"type": "string"}},
        "l": {"type": "array", "items": {"type": "integer"}}}});
    for rule in [
        "self.?a.orValue(1) == 1",
        "self.?a.hasValue()",
        "self.?a.or(optional.of(2)).value() > 0",
        "self.m[?'x'].orValue('') == ''",
        "self.l[?0].orValue(0) == 0",
        "self.?a.optMap(v, v + 1).orValue(0) > 0",
        "optional.ofNonZeroValue(self.a).hasValue()",
        "self.l.first().orValue(0) == self.l.last().orValue(0)",
        "[?self.?a, 1].size() > 0",
    ] {
        assert_eq!(run(rule, &obj), Ok("bool".into()), "{rule}");
    }
    let opt_old = Env {
        dyn_vars: &[],
        self_schema: &obj,
        resource_root: false,
        old_self: true,
        optional_old_self: true,
        compat: Compat::NewExpressions,
        typed_vars: &[],
        mutation: false,
    };
    let rule = "oldSelf.hasValue() && oldSelf.value().a == self.a";
    let parsed = Parser::new()
        .enable_optional_syntax(true)
        .parse(rule)
        .unwrap_or_default();
    let checked = check(&parsed, rule, &opt_old);
    assert_eq!(checked.map(|c| c.result.name()), Ok("bool".into()));
}

#[test]
fn bind_and_two_variable_comprehensions() {
    let obj = json!({"type": "object", "properties": {
        "l": {"type": "array", "items": {"type": "string"}},
        "m": {"type": "object", "additionalProperties": {"type": "integer"}}}});
    let cases: [(&str, &str); 8] = [
        ("cel.bind(x, self.l, x.size() > 0 && x[0] == 'a')", "bool"),
        ("self.l.all(i, v, i < 10 && v != '')", "bool"),
        ("self.m.exists(k, v, k == 'a' && v > 1)", "bool"),
        ("self.m.existsOne(k, v, v == 1)", "bool"),
        ("self.l.transformList(i, v, v + string(i))", "list(string)"),
        ("self.l.transformList(i, v, i > 0, i)", "list(int)"),
        ("self.m.transformMap(k, v, v * 2)", "map(string, int)"),
        ("cel.bind(n, 1, n + 1)", "int"),
    ];
    for (rule, want) in cases {
        assert_eq!(run(rule, &obj), Ok(want.into()), "{rule}");
    }
    assert_eq!(
        run("self.l.all(i, v, v > 1)", &obj),
        Err("ERROR: <input>:1:20: found no matching overload for '_>_' applied to '(string, int)'\n | self.l.all(i, v, v > 1)\n | ...................^".into())
    );
}

#[test]
fn kubernetes_libraries() {
    let s = json!({"type": "object", "properties": {"s": {"type": "string"}}});
    for rule in [
        "quantity(self.s).isLessThan(quantity('1Gi')) && isQuantity(self.s)",
        "quantity(self.s).add(1).asInteger() > 0 && quantity(self.s).compareTo(quantity('1')) == 0",
        "ip(self.s).family() == 4 && isIP(self.s) && ip.isCanonical(self.s)",
        "cidr(self.s).containsIP('10.0.0.1') && cidr(self.s).ip().isLoopback()",
        "string(cidr(self.s).masked()) == self.s && cidr(self.s).prefixLength() < 32",
        "url(self.s).getScheme() == 'https' && url(self.s).getQuery().size() == 0",
        "!format.dns1123Label().validate(self.s).hasValue()",
        "format.named('dns1123Label').hasValue()",
        "semver(self.s).isLessThan(semver('1.0.0')) && isSemver(self.s, true)",
        "semver(self.s, true).major() == 1",
        "strings.quote(self.s) != ''",
    ] {
        assert_eq!(run(rule, &s), Ok("bool".into()), "{rule}");
    }
}

#[test]
fn gating_by_compatibility_version() {
    let l = json!({"type": "array", "items": {"type": "integer"}});
    let rule = "self.reverse() == self";
    let stored = run_env(rule, &l, false, Compat::StoredExpressions);
    assert_eq!(stored.map(|c| c.result.name()), Ok("bool".into()));
    let new = run_env(rule, &l, false, Compat::NewExpressions);
    assert_eq!(
        new.map(|c| c.result.name()),
        Err("ERROR: <input>:1:13: undeclared reference to 'reverse' (in container '')\n | self.reverse() == self\n | ............^".into())
    );
    let range = run_env(
        "lists.range(3).size() == 3",
        &l,
        false,
        Compat::StoredExpressions,
    );
    assert_eq!(range.map(|c| c.result.name()), Ok("bool".into()));
    for rule in [
        "self.slice(0, 1).size() == 1",
        "self.sort() == self.distinct()",
        "[[1], [2]].flatten() == self",
    ] {
        let r = run_env(rule, &l, false, Compat::StoredExpressions);
        assert_eq!(r.map(|c| c.result.name()), Ok("bool".into()), "{rule}");
        assert!(run_env(rule, &l, false, Compat::NewExpressions).is_err());
    }
    // Semver (1.33) stays available to new expressions.
    let s = json!({"type": "string"});
    let r = run_env("isSemver(self)", &s, false, Compat::NewExpressions);
    assert_eq!(r.map(|c| c.result.name()), Ok("bool".into()));
}

#[test]
fn schemas_follow_places() {
    let schema = example_schema();
    let rule = "self.widgets.all(w, w.foo > 0) && self.components['a'].priority > 0";
    let parsed = Parser::new()
        .enable_optional_syntax(true)
        .parse(rule)
        .unwrap_or_default();
    let env = Env {
        dyn_vars: &[],
        self_schema: &schema,
        resource_root: false,
        old_self: true,
        optional_old_self: false,
        compat: Compat::StoredExpressions,
        typed_vars: &[],
        mutation: false,
    };
    let checked = check(&parsed, rule, &env).unwrap_or_else(|e| panic!("{e}"));
    let mut found: Vec<String> = checked
        .schemas
        .values()
        .map(|v| serde_json::to_string(v).unwrap_or_default())
        .collect();
    found.sort();
    let want_item =
        r#"{"properties":{"foo":{"type":"integer"},"key":{"type":"string"}},"type":"object"}"#;
    assert!(found.iter().any(|s| s == want_item), "{found:?}");
    assert!(found.iter().any(|s| s == r#"{"type":"integer"}"#));
    assert!(
        found
            .iter()
            .any(|s| s == r#"{"properties":{"priority":{"type":"integer"}},"type":"object"}"#)
    );
    assert!(checked.types.values().all(|t| !matches!(t, Type::Var(_))));
}

#[test]
fn result_type_requirements() {
    let schema = example_schema();
    let c = run_env("self.foo", &schema, false, Compat::StoredExpressions)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        require_bool(&c),
        Err("cel expression must evaluate to a bool".into())
    );
    assert_eq!(
        require_string(&c),
        Err("messageExpression must evaluate to a string".into())
    );
    let c = run_env("self.ios", &schema, false, Compat::StoredExpressions)
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(require_bool(&c).is_err(), "dyn is not bool");
    let c = run_env(
        "'x' + self.health",
        &schema,
        false,
        Compat::StoredExpressions,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(require_string(&c), Ok(()));
}

#[test]
fn no_panics_on_odd_input() {
    let schema = example_schema();
    for rule in [
        "self[0]",
        "self.values[self.foo][1]",
        "a.b.c.d(1, 2, 3)",
        "-self.foo",
        "--1 == 1",
        "!!true",
        "self.values.map(x, x).map(x, x).filter(x, x > 0).all(x, x > 0)",
        "[{'a': [1]}, {'b': [2]}].size() == 2",
        "{1: 'a', 'b': 2}",
        "'\u{e9}' == self.foo",
        "r'''x''' + \"y\" == 'z' // comment",
        "0x10 + 1u",
        "1e3 < 2.5",
    ] {
        let _ = run(rule, &schema);
    }
    assert_eq!(
        run("'\u{e9}\u{e9}' == 1", &schema),
        Err("ERROR: <input>:1:6: found no matching overload for '_==_' applied to '(string, int)'\n | '\u{e9}\u{e9}' == 1\n | .\u{ff0e}\u{ff0e}..^".into())
    );
}

#[test]
fn literal_argument_validators() {
    let s = json!({"type": "string"});
    let cases: [(&str, &str); 4] = [
        (
            "duration('1x') > duration('1h')",
            "ERROR: <input>:1:10: invalid duration argument\n | duration('1x') > duration('1h')\n | .........^",
        ),
        (
            "timestamp('2024-13-01T00:00:00Z') == timestamp(0)",
            "ERROR: <input>:1:11: invalid timestamp argument\n | timestamp('2024-13-01T00:00:00Z') == timestamp(0)\n | ..........^",
        ),
        (
            "self.matches('[')",
            "ERROR: <input>:1:14: invalid matches argument\n | self.matches('[')\n | .............^",
        ),
        (
            "[1, 2].size() == 2 && ['%d', 1].size() == 2",
            "ERROR: <input>:1:30: expected type 'string' but found 'int'\n | [1, 2].size() == 2 && ['%d', 1].size() == 2\n | .............................^",
        ),
    ];
    for (rule, want) in cases {
        assert_eq!(run(rule, &s), Err(want.into()), "{rule}");
    }
    for rule in [
        "duration('1h30m') > duration('-1.5s') && duration('300ms') < duration('0')",
        "timestamp('2024-02-29T10:00:00.123+01:00') > timestamp('2024-01-01T00:00:00Z')",
        "self.matches('^[a-z]+$')",
        "'%s %d'.format(['a', 1]) == 'a 1'",
    ] {
        assert_eq!(run(rule, &s), Ok("bool".into()), "{rule}");
    }
}
