#!/usr/bin/env python3
"""Mines k8s-openapi's `DeepMerge` impls for each type's list and map merge strategies.

k8s-openapi generates `merge_from` from upstream's OpenAPI extensions: a list with a strategic
merge key becomes `merge_strategies::list::map(.., &[|lhs, rhs| lhs.key == rhs.key])`, an
`x-kubernetes-list-type: set` list becomes `list::set`, an `x-kubernetes-map-type: atomic` map
becomes `map::atomic`. This script reads those calls back out of the generated source and writes
`data/merge_strategies.json`: { "<definition name>": { "<json field>": {strategy, keys} } }.

Usage: python3 tools/mine_merge_strategies.py <k8s-openapi src/v1_33 dir> > data/merge_strategies.json
"""
import json
import os
import re
import sys


def camel(snake):
    if snake.endswith("_"):
        snake = snake[:-1]
    head, *rest = snake.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


SERIALIZE_OPT = r'self\.(\w+) \{\s*crate::serde::ser::SerializeStruct::serialize_field\(&mut state, "([^"]+)"'
SERIALIZE_REQ = r'serialize_field\(&mut state, "([^"]+)", &self\.(\w+)\)'


def json_names(root):
    """Rust field name -> JSON name over all types (e.g. resource_id -> resourceID), for the
    list-map key closures, which name the item type's fields."""
    seen = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            if f.endswith(".rs"):
                src = open(os.path.join(dirpath, f), encoding="utf-8").read()
                for m in re.finditer(SERIALIZE_OPT, src):
                    seen.setdefault(m.group(1), set()).add(m.group(2))
                for m in re.finditer(SERIALIZE_REQ, src):
                    seen.setdefault(m.group(2), set()).add(m.group(1))
    return {k: next(iter(v)) for k, v in seen.items() if len(v) == 1}


def main(root):
    out = {}
    names = json_names(root)
    for dirpath, _, files in os.walk(root):
        for f in sorted(files):
            if not f.endswith(".rs"):
                continue
            src = open(os.path.join(dirpath, f), encoding="utf-8").read()
            name = re.search(r'fn schema_name\(\) -> [^{]*\{\s*"([^"]+)"\.into\(\)', src)
            if not name:
                continue
            # Rust field -> JSON field, from the Serialize impl.
            fields = {}
            for m in re.finditer(SERIALIZE_OPT, src):
                fields[m.group(1)] = m.group(2)
            for m in re.finditer(SERIALIZE_REQ, src):
                fields[m.group(2)] = m.group(1)
            entry = {}
            for m in re.finditer(r'merge_strategies::list::map\(\s*&mut self\.(\w+),\s*other\.\w+,\s*&\[(.*?)\],', src, re.S):
                keys = [names.get(k, camel(k)) for k in re.findall(r'lhs\.(\w+) ==', m.group(2))]
                entry[fields.get(m.group(1), camel(m.group(1)))] = {"strategy": "map", "keys": keys}
            for kind in ("set", "atomic"):
                for m in re.finditer(r'merge_strategies::list::%s\(&mut self\.(\w+),' % kind, src):
                    entry[fields.get(m.group(1), camel(m.group(1)))] = {"strategy": kind}
            for m in re.finditer(r'merge_strategies::map::atomic\(&mut self\.(\w+),', src):
                entry[fields.get(m.group(1), camel(m.group(1)))] = {"strategy": "atomic-map"}
            if entry:
                out[name.group(1)] = dict(sorted(entry.items()))
    json.dump(dict(sorted(out.items())), sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])
