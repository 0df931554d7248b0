"""A small JSON Schema validator for the keywords ``design.schema.json`` uses (jsonschema is not a
dependency). It refuses any keyword it does not know, so the schema cannot quietly outgrow it."""

from __future__ import annotations

import re
from typing import Any

ANNOTATIONS = {"title", "description", "default", "$schema", "$defs", "examples"}
KNOWN = ANNOTATIONS | {
    "$ref", "type", "properties", "required", "additionalProperties", "items", "enum", "const",
    "anyOf", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "pattern",
    "minLength", "maxLength", "minItems", "maxItems",
}  # fmt: skip

TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def errors(instance: Any, schema: dict[str, Any], root: dict[str, Any], at: str = "$") -> list[str]:
    """Every way ``instance`` violates ``schema`` (empty when it is valid)."""
    unknown = set(schema) - KNOWN
    if unknown:
        raise AssertionError(f"{at}: the test validator does not know {sorted(unknown)}")
    out: list[str] = []
    if "$ref" in schema:
        name = schema["$ref"].removeprefix("#/$defs/")
        out += errors(instance, root["$defs"][name], root, at)
    if "type" in schema:
        kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(TYPES[k](instance) for k in kinds):
            return [f"{at}: {instance!r} is not of type {schema['type']}"]
    if "const" in schema and instance != schema["const"]:
        out.append(f"{at}: {instance!r} != {schema['const']!r}")
    if "enum" in schema and instance not in schema["enum"]:
        out.append(f"{at}: {instance!r} not in {schema['enum']}")
    if "anyOf" in schema:
        options = [errors(instance, sub, root, at) for sub in schema["anyOf"]]
        if all(options):
            out.append(f"{at}: matches none of anyOf: {options}")
    if isinstance(instance, int | float) and not isinstance(instance, bool):
        for key, ok in (
            ("minimum", lambda b: instance >= b),
            ("maximum", lambda b: instance <= b),
            ("exclusiveMinimum", lambda b: instance > b),
            ("exclusiveMaximum", lambda b: instance < b),
        ):
            if key in schema and not ok(schema[key]):
                out.append(f"{at}: {instance!r} violates {key} {schema[key]}")
    if isinstance(instance, str):
        if "pattern" in schema and not re.search(schema["pattern"], instance):
            out.append(f"{at}: {instance!r} does not match {schema['pattern']}")
        if len(instance) < schema.get("minLength", 0):
            out.append(f"{at}: shorter than {schema['minLength']}")
        if "maxLength" in schema and len(instance) > schema["maxLength"]:
            out.append(f"{at}: longer than {schema['maxLength']}")
    if isinstance(instance, list):
        if len(instance) < schema.get("minItems", 0):
            out.append(f"{at}: fewer than {schema['minItems']} items")
        if "maxItems" in schema and len(instance) > schema["maxItems"]:
            out.append(f"{at}: more than {schema['maxItems']} items")
        if "items" in schema:
            for i, item in enumerate(instance):
                out += errors(item, schema["items"], root, f"{at}[{i}]")
    if isinstance(instance, dict):
        props = schema.get("properties", {})
        for key in schema.get("required", []):
            if key not in instance:
                out.append(f"{at}: missing required {key!r}")
        extra = schema.get("additionalProperties", True)
        for key, value in instance.items():
            if key in props:
                out += errors(value, props[key], root, f"{at}.{key}")
            elif extra is False:
                out.append(f"{at}: unexpected property {key!r}")
            elif isinstance(extra, dict):
                out += errors(value, extra, root, f"{at}.{key}")
    return out


def validate(instance: Any, schema: dict[str, Any]) -> list[str]:
    return errors(instance, schema, schema)
