#!/usr/bin/env python3
"""Validate a JSON file written by `replay` against one of the schemas in schemas/.

    validate_schema.py FILE SCHEMA        (FILE may be "-" for standard input)

Uses the `jsonschema` package (draft 2020-12) when it can be imported; otherwise a built-in
validator for the subset of keywords the schemas in schemas/ use, and says so. Exit status 0 when
the file is valid, 1 when it is not (or is not JSON), 2 for usage errors.

NaN and Infinity are rejected: the tool writes them as null, so a bare NaN in a file is a bug.
"""
import json
import math
import re
import sys


def _reject_constant(name):
    raise ValueError(f"{name} is not JSON (NaN/Infinity must be written as null)")


def load_json(path):
    if path == "-":
        return json.load(sys.stdin, parse_constant=_reject_constant)
    with open(path, "r", encoding="utf-8") as f:
        return json.load(f, parse_constant=_reject_constant)


def json_path(parts):
    out = "$"
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out


# ---- fallback: the keyword subset used by schemas/*.schema.json ------------------------------

class SubsetValidator:
    def __init__(self, schema):
        self.root = schema

    def resolve(self, ref):
        if not ref.startswith("#"):
            raise ValueError(f"only local $ref is supported without jsonschema: {ref}")
        node = self.root
        for part in ref[1:].split("/")[1:]:
            part = part.replace("~1", "/").replace("~0", "~")
            node = node[int(part)] if isinstance(node, list) else node[part]
        return node

    @staticmethod
    def is_type(value, t):
        if t == "null":
            return value is None
        if t == "boolean":
            return isinstance(value, bool)
        if t == "object":
            return isinstance(value, dict)
        if t == "array":
            return isinstance(value, list)
        if t == "string":
            return isinstance(value, str)
        if t == "number":
            return isinstance(value, (int, float)) and not isinstance(value, bool)
        if t == "integer":
            if isinstance(value, bool):
                return False
            return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value) and value.is_integer())
        raise ValueError(f"unknown type {t}")

    def evaluated_names(self, schema, value):
        """Property names a schema (and its applicators) evaluates, for unevaluatedProperties."""
        if not isinstance(schema, dict):
            return set()
        if "$ref" in schema:
            names = self.evaluated_names(self.resolve(schema["$ref"]), value)
        else:
            names = set()
        names |= set(schema.get("properties", {}))
        for sub in schema.get("allOf", []):
            names |= self.evaluated_names(sub, value)
        for key in ("anyOf", "oneOf"):
            for sub in schema.get(key, []):
                if not list(self.errors(sub, value, [])):
                    names |= self.evaluated_names(sub, value)
        if "if" in schema:
            ok = not list(self.errors(schema["if"], value, []))
            branch = schema.get("then" if ok else "else")
            if branch is not None:
                names |= self.evaluated_names(branch, value)
        return names

    def errors(self, schema, value, path):
        if schema is True:
            return
        if schema is False:
            yield path, "not allowed here"
            return
        if "$ref" in schema:
            yield from self.errors(self.resolve(schema["$ref"]), value, path)
        if "type" in schema:
            types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
            if not any(self.is_type(value, t) for t in types):
                yield path, f"{json.dumps(value)[:80]} is not of type {' or '.join(types)}"
                return
        if "const" in schema and value != schema["const"]:
            yield path, f"{json.dumps(value)[:80]} is not {json.dumps(schema['const'])}"
        if "enum" in schema and value not in schema["enum"]:
            yield path, f"{json.dumps(value)[:80]} is not one of {schema['enum']}"
        if self.is_type(value, "number"):
            if "minimum" in schema and value < schema["minimum"]:
                yield path, f"{value} is less than the minimum of {schema['minimum']}"
            if "maximum" in schema and value > schema["maximum"]:
                yield path, f"{value} is greater than the maximum of {schema['maximum']}"
            if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
                yield path, f"{value} is not greater than {schema['exclusiveMinimum']}"
            if "exclusiveMaximum" in schema and value >= schema["exclusiveMaximum"]:
                yield path, f"{value} is not less than {schema['exclusiveMaximum']}"
        if isinstance(value, str):
            if "minLength" in schema and len(value) < schema["minLength"]:
                yield path, f"{json.dumps(value)} is shorter than {schema['minLength']}"
            if "pattern" in schema and not re.search(schema["pattern"], value):
                yield path, f"{json.dumps(value)} does not match {schema['pattern']}"
        if isinstance(value, list):
            if "minItems" in schema and len(value) < schema["minItems"]:
                yield path, f"has {len(value)} items, fewer than {schema['minItems']}"
            if "maxItems" in schema and len(value) > schema["maxItems"]:
                yield path, f"has {len(value)} items, more than {schema['maxItems']}"
            if schema.get("uniqueItems") and len({json.dumps(v, sort_keys=True) for v in value}) != len(value):
                yield path, "has non-unique items"
            if "items" in schema:
                for i, v in enumerate(value):
                    yield from self.errors(schema["items"], v, path + [i])
        if isinstance(value, dict):
            for name in schema.get("required", []):
                if name not in value:
                    yield path, f"{json.dumps(name)} is a required property"
            for name, needed in schema.get("dependentRequired", {}).items():
                if name in value:
                    for n in needed:
                        if n not in value:
                            yield path, f"{json.dumps(n)} is required when {json.dumps(name)} is present"
            props = schema.get("properties", {})
            for name, v in value.items():
                if name in props:
                    yield from self.errors(props[name], v, path + [name])
                elif "additionalProperties" in schema:
                    extra = schema["additionalProperties"]
                    if extra is False:
                        yield path, f"additional property {json.dumps(name)} is not allowed"
                    elif isinstance(extra, dict):
                        yield from self.errors(extra, v, path + [name])
            if "propertyNames" in schema:
                for name in value:
                    for p, msg in self.errors(schema["propertyNames"], name, path):
                        yield p, f"property name {json.dumps(name)}: {msg}"
            if schema.get("unevaluatedProperties") is False:
                known = self.evaluated_names(schema, value)
                for name in value:
                    if name not in known:
                        yield path, f"unevaluated property {json.dumps(name)} is not allowed"
        for sub in schema.get("allOf", []):
            yield from self.errors(sub, value, path)
        if "anyOf" in schema and not any(not list(self.errors(s, value, path)) for s in schema["anyOf"]):
            yield path, f"{json.dumps(value)[:80]} matches none of anyOf"
        if "oneOf" in schema and sum(not list(self.errors(s, value, path)) for s in schema["oneOf"]) != 1:
            yield path, f"{json.dumps(value)[:80]} does not match exactly one of oneOf"
        if "not" in schema and not list(self.errors(schema["not"], value, path)):
            yield path, "matches a schema it must not match"
        if "if" in schema:
            ok = not list(self.errors(schema["if"], value, path))
            branch = schema.get("then" if ok else "else")
            if branch is not None:
                yield from self.errors(branch, value, path)


def main(argv):
    if len(argv) != 3 or argv[1] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    path, schema_path = argv[1], argv[2]
    try:
        schema = load_json(schema_path)
    except (OSError, ValueError) as e:
        print(f"{schema_path}: cannot read the schema: {e}", file=sys.stderr)
        return 2
    try:
        document = load_json(path)
    except OSError as e:
        print(f"{path}: cannot read: {e}", file=sys.stderr)
        return 1
    except ValueError as e:
        print(f"{path}: not valid JSON: {e}", file=sys.stderr)
        return 1

    try:
        import jsonschema  # noqa: F401
        from jsonschema import Draft202012Validator
    except ImportError:
        Draft202012Validator = None

    if Draft202012Validator is not None:
        try:
            Draft202012Validator.check_schema(schema)
        except jsonschema.exceptions.SchemaError as e:
            print(f"{schema_path}: not a valid draft 2020-12 schema: {e.message}", file=sys.stderr)
            return 2
        validator = Draft202012Validator(schema)
        errors = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
        found = [(json_path(list(e.absolute_path)), e.message) for e in errors]
        how = "jsonschema " + _version()
    else:
        found = [(json_path(p), msg) for p, msg in SubsetValidator(schema).errors(schema, document, [])]
        how = "the built-in subset validator (jsonschema is not installed)"

    if found:
        print(f"{path}: INVALID against {schema_path} ({len(found)} error(s), checked with {how}):", file=sys.stderr)
        for where, message in found[:25]:
            print(f"  at {where}: {message}", file=sys.stderr)
        if len(found) > 25:
            print(f"  ... and {len(found) - 25} more", file=sys.stderr)
        return 1
    print(f"{path}: valid against {schema_path} (checked with {how})")
    return 0


def _version():
    try:
        from importlib.metadata import version

        return version("jsonschema")
    except Exception:  # noqa: BLE001
        return ""


if __name__ == "__main__":
    sys.exit(main(sys.argv))
