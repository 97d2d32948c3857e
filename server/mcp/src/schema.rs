//! A server's `inputSchema`, made acceptable to every provider we talk to. The schema goes to the
//! model as the server gives it, except for what a provider would reject the whole request for:
//!
//! - The top level must be an object schema: `type: "object"` is set when missing (Anthropic and
//!   OpenAI both require it), and `oneOf`, `anyOf`, `allOf`, `enum` and `not` are removed from the
//!   top level (OpenAI rejects them there; the server still validates the arguments).
//! - OpenAI rejects an object schema without `properties` and an array schema without `items`,
//!   at any depth: `properties: {}` and `items: {}` are added.
//! - `$schema` and `$id` are dropped: some OpenAI-compatible servers reject unknown meta keys, and
//!   they tell the model nothing.
//! - A subschema that is `true` (anything goes) becomes `{}`, which means the same and which
//!   providers that do not take boolean schemas accept.

use serde_json::{Map, Value};

/// The keywords whose value is one subschema.
const ONE_SCHEMA: &[&str] =
    &["items", "additionalProperties", "not", "contains", "propertyNames", "if", "then", "else"];
/// The keywords whose value is a list of subschemas.
const SCHEMA_LIST: &[&str] = &["anyOf", "oneOf", "allOf", "prefixItems"];
/// The keywords whose value maps names to subschemas.
const SCHEMA_MAP: &[&str] = &["properties", "patternProperties", "$defs", "definitions"];

/// The schema of a tool's arguments, as sent to the model.
pub fn normalize_input_schema(schema: &Map<String, Value>) -> Value {
    let mut schema = schema.clone();
    for keyword in ["oneOf", "anyOf", "allOf", "enum", "not"] {
        schema.remove(keyword);
    }
    if !schema.contains_key("type") {
        schema.insert("type".into(), Value::String("object".into()));
    }
    let mut schema = Value::Object(schema);
    normalize(&mut schema);
    schema
}

fn normalize(schema: &mut Value) {
    if *schema == Value::Bool(true) {
        *schema = Value::Object(Map::new());
    }
    let Value::Object(map) = schema else { return };
    map.remove("$schema");
    map.remove("$id");
    if has_type(map, "object") && !map.contains_key("properties") {
        map.insert("properties".into(), Value::Object(Map::new()));
    }
    if has_type(map, "array") && !map.contains_key("items") && !map.contains_key("prefixItems") {
        map.insert("items".into(), Value::Object(Map::new()));
    }
    for (keyword, value) in map.iter_mut() {
        let keyword = keyword.as_str();
        if ONE_SCHEMA.contains(&keyword) {
            normalize(value);
        } else if SCHEMA_LIST.contains(&keyword) {
            if let Value::Array(items) = value {
                items.iter_mut().for_each(normalize);
            }
        } else if SCHEMA_MAP.contains(&keyword)
            && let Value::Object(entries) = value
        {
            entries.values_mut().for_each(normalize);
        }
    }
}

/// Whether `type` is `kind`, or a list that holds it.
fn has_type(map: &Map<String, Value>, kind: &str) -> bool {
    match map.get("type") {
        Some(Value::String(name)) => name == kind,
        Some(Value::Array(names)) => names.iter().any(|name| name == kind),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};
    use serde_json::json;

    use super::*;

    fn check(schema: Value, expected: Expect) {
        let Value::Object(map) = schema else { panic!("not an object") };
        expected.assert_eq(&normalize_input_schema(&map).to_string());
    }

    #[test]
    fn a_clean_schema_is_unchanged() {
        check(
            json!({"type": "object", "properties": {"message": {"type": "string", "description": "what to echo"}},
                   "required": ["message"], "additionalProperties": false}),
            expect![[
                r#"{"type":"object","properties":{"message":{"type":"string","description":"what to echo"}},"required":["message"],"additionalProperties":false}"#
            ]],
        );
    }

    #[test]
    fn an_empty_schema_becomes_an_object_with_no_properties() {
        check(json!({}), expect![[r#"{"type":"object","properties":{}}"#]]);
        check(
            json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"}),
            expect![[r#"{"type":"object","properties":{}}"#]],
        );
    }

    #[test]
    fn top_level_combinators_are_dropped() {
        check(
            json!({"type": "object", "properties": {"a": {"type": "string"}},
                   "anyOf": [{"required": ["a"]}, {"required": ["b"]}]}),
            expect![[r#"{"type":"object","properties":{"a":{"type":"string"}}}"#]],
        );
    }

    #[test]
    fn nested_objects_and_arrays_get_properties_and_items() {
        check(
            json!({"type": "object", "properties": {
                "tags": {"type": "array"},
                "meta": {"type": ["object", "null"]},
                "pair": {"type": "array", "prefixItems": [{"type": "string"}, true]},
                "any": true,
                "choice": {"anyOf": [{"type": "object"}, {"type": "array", "items": {"type": "object", "$id": "x"}}]},
                "map": {"type": "object", "additionalProperties": {"type": "array"}}
            }, "$defs": {"node": {"type": "object"}}}),
            expect![[
                r#"{"type":"object","properties":{"tags":{"type":"array","items":{}},"meta":{"type":["object","null"],"properties":{}},"pair":{"type":"array","prefixItems":[{"type":"string"},{}]},"any":{},"choice":{"anyOf":[{"type":"object","properties":{}},{"type":"array","items":{"type":"object","properties":{}}}]},"map":{"type":"object","additionalProperties":{"type":"array","items":{}},"properties":{}}},"$defs":{"node":{"type":"object","properties":{}}}}"#
            ]],
        );
    }

    #[test]
    fn property_names_are_not_mistaken_for_keywords() {
        // A property called `items` or `$schema` is data, not a keyword.
        check(
            json!({"type": "object", "properties": {"items": {"type": "string"}, "$schema": {"type": "string"}}}),
            expect![[r#"{"type":"object","properties":{"items":{"type":"string"},"$schema":{"type":"string"}}}"#]],
        );
    }
}
