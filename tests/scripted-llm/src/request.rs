//! What a Chat Completions request asks for that shapes the answer, read straight from the body's
//! bytes. In a benchmark, reading every body into a `Value` was half of this server's CPU, and
//! the bench counts the server's CPU in the client's overhead per turn.
//!
//! On a JSON body, the direct read gives what the `Value` read gives: anything it does not expect (a
//! wrong type, a duplicate key, a list where an object belongs) makes it fail, and the body is then
//! read through a `Value` as before. (It reads past skipped fields without checking their numbers'
//! range or their strings' UTF-8, which no client's body gets wrong.)

use std::fmt;
use std::marker::PhantomData;

use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use crate::render::{self, RequestShape};

/// The parts of a body that shape the answer; other fields are skipped unread.
#[derive(serde::Deserialize)]
struct ChatBody {
    model: Option<String>,
    stream: Option<bool>,
    stream_options: Option<Object<StreamOptions>>,
    messages: Option<Vec<Object<ChatMessage>>>,
}

#[derive(serde::Deserialize)]
struct StreamOptions {
    include_usage: Option<bool>,
}

#[derive(serde::Deserialize)]
struct ChatMessage {
    content: Option<ContentChars>,
}

/// A `T` read only from a JSON object: serde's derived structs also take a list of their fields'
/// values, which the `Value` read would not see as fields.
struct Object<T>(T);

/// What a message's content counts for the usage estimate (see [`render::prompt_chars`]).
struct ContentChars(usize);

/// The request's shape and whether it asks for a stream.
pub fn chat_shape(body: &[u8]) -> (RequestShape, bool) {
    match serde_json::from_slice::<Object<ChatBody>>(body) {
        Ok(Object(body)) => {
            let shape = RequestShape {
                model: body.model.unwrap_or_else(|| "scripted".to_string()),
                include_usage: body.stream_options.and_then(|Object(options)| options.include_usage) == Some(true),
                prompt_chars: body.messages.unwrap_or_default().iter().map(|Object(message)| message.chars()).sum(),
            };
            (shape, body.stream == Some(true))
        }
        Err(_) => chat_shape_of_value(&serde_json::from_slice(body).unwrap_or(Value::Null)),
    }
}

/// [`chat_shape`] through a whole `Value`: the reading for bodies the direct one does not take.
pub fn chat_shape_of_value(body: &Value) -> (RequestShape, bool) {
    let shape = RequestShape {
        model: body.get("model").and_then(Value::as_str).unwrap_or("scripted").to_string(),
        include_usage: body.pointer("/stream_options/include_usage").and_then(Value::as_bool) == Some(true),
        prompt_chars: render::prompt_chars(body),
    };
    (shape, body.get("stream").and_then(Value::as_bool) == Some(true))
}

impl ChatMessage {
    fn chars(&self) -> usize {
        self.content.as_ref().map_or(0, |ContentChars(chars)| *chars)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ObjectVisitor<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjectVisitor<T> {
            type Value = Object<T>;
            fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
                formatter.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Object<T>, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map)).map(Object)
            }
        }
        deserializer.deserialize_map(ObjectVisitor(PhantomData))
    }
}

impl<'de> Deserialize<'de> for ContentChars {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct CharsVisitor;
        impl<'de> Visitor<'de> for CharsVisitor {
            type Value = ContentChars;
            fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
                formatter.write_str("message content")
            }
            fn visit_str<E: de::Error>(self, text: &str) -> Result<ContentChars, E> {
                Ok(ContentChars(text.chars().count()))
            }
            /// A list of parts counts as its compact JSON text, as the `Value` read counts it.
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<ContentChars, A::Error> {
                let parts = Value::deserialize(SeqAccessDeserializer::new(seq))?;
                Ok(ContentChars(parts.to_string().len()))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<ContentChars, A::Error> {
                IgnoredAny::deserialize(MapAccessDeserializer::new(map))?;
                Ok(ContentChars(0))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<ContentChars, E> {
                Ok(ContentChars(0))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<ContentChars, E> {
                Ok(ContentChars(0))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<ContentChars, E> {
                Ok(ContentChars(0))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<ContentChars, E> {
                Ok(ContentChars(0))
            }
        }
        deserializer.deserialize_any(CharsVisitor)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The direct read and the `Value` read agree on every body, odd ones included.
    #[test]
    fn the_direct_read_gives_what_the_value_read_gives() {
        let bodies = [
            json!({"model": "m", "stream": true, "stream_options": {"include_usage": true, "x": 1},
                   "messages": [{"role": "user", "content": "héllo"}, {"role": "assistant", "content": null},
                                {"content": [{"type": "text", "text": "a \"quoted\" é"}]}, {"content": 7},
                                {"content": {"a": [1, 2]}}, {"role": "tool"}],
                   "tools": [{"type": "function"}], "temperature": 0.5}),
            json!({"stream": false}),
            json!({"model": null, "stream": null, "stream_options": null, "messages": null}),
            json!({"model": 3, "messages": [{"content": "abc"}]}),
            json!({"stream": "yes", "messages": [{"content": "abc"}]}),
            json!({"stream_options": [true], "stream": true}),
            json!({"stream_options": {"include_usage": "true"}, "stream": true}),
            json!({"messages": {"content": "abc"}}),
            json!({"messages": ["abc", {"content": "de"}]}),
            json!({"messages": [["abc"], {"content": "de"}]}),
            json!({"messages": [{"content": true}, {"content": -1.5}, {"content": "\u{1F600}x"}]}),
            json!(["m", true]),
            json!("text"),
            json!(null),
        ];
        for body in bodies {
            let text = body.to_string();
            let (direct, stream) = chat_shape(text.as_bytes());
            let (through_value, value_stream) = chat_shape_of_value(&body);
            assert_eq!((direct, stream), (through_value, value_stream), "body: {text}");
        }
        let duplicate = br#"{"model": "a", "model": "b", "messages": [{"content": "x", "content": "yz"}]}"#;
        let through_value = chat_shape_of_value(&serde_json::from_slice(duplicate).unwrap());
        assert_eq!(chat_shape(duplicate), through_value);
        assert_eq!(chat_shape(b"not json"), chat_shape_of_value(&Value::Null));
        assert_eq!(chat_shape(b""), chat_shape_of_value(&Value::Null));
    }

    #[test]
    fn a_usual_body_is_read_directly() {
        let body = json!({"model": "m", "stream": true, "stream_options": {"include_usage": true},
                          "messages": [{"role": "user", "content": "héllo"}, {"content": [{"t": 1}]}]});
        let (shape, stream) = chat_shape(body.to_string().as_bytes());
        assert!(stream);
        assert_eq!(shape, RequestShape { model: "m".into(), include_usage: true, prompt_chars: 5 + 9 });
        assert!(serde_json::from_slice::<Object<ChatBody>>(body.to_string().as_bytes()).is_ok());
    }
}
