//! A settings file rewritten with its keys where the person put them.
//!
//! `serde_json`'s maps sort their keys (and must here: a tool input's
//! fingerprint relies on it), so a settings file read, edited and written back
//! would come out re-sorted — a diff over every line of a file a team reviews.
//! This records each object's key order from the text as it was, and writes the
//! edited document in that order, keys new to an object after the old ones.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::Value;

/// The key order of one JSON value: an object's keys as written, with each
/// member's own order; an array's elements' orders by index.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct KeyOrder {
    keys: Vec<String>,
    members: BTreeMap<String, KeyOrder>,
    elements: Vec<KeyOrder>,
}

impl KeyOrder {
    /// The order of `text`'s keys; none when it is not JSON (the edited file is
    /// then written sorted).
    pub fn of(text: &str) -> KeyOrder {
        serde_json::from_str(text).unwrap_or_default()
    }

    /// `doc` as pretty JSON (two-space indents, a final newline), each object's
    /// keys in this order.
    pub fn pretty(&self, doc: &Value) -> String {
        serde_json::to_string_pretty(&Ordered {
            value: doc,
            order: Some(self),
        })
        .unwrap_or_else(|_| serde_json::to_string_pretty(doc).unwrap_or_default())
            + "\n"
    }
}

/// `doc` as pretty JSON for the file at `path`, in the key order the file has
/// now (sorted where it has none).
pub fn pretty_as_on_disk(path: &std::path::Path, doc: &Value) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    KeyOrder::of(&text).pretty(doc)
}

impl<'de> Deserialize<'de> for KeyOrder {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(OrderVisitor)
    }
}

struct OrderVisitor;

impl<'de> Visitor<'de> for OrderVisitor {
    type Value = KeyOrder;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<KeyOrder, A::Error> {
        let mut order = KeyOrder::default();
        while let Some(key) = map.next_key::<String>()? {
            let member = map.next_value::<KeyOrder>()?;
            if !order.members.contains_key(&key) {
                order.keys.push(key.clone());
            }
            order.members.insert(key, member);
        }
        Ok(order)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<KeyOrder, A::Error> {
        let mut order = KeyOrder::default();
        while let Some(element) = seq.next_element::<KeyOrder>()? {
            order.elements.push(element);
        }
        Ok(order)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<KeyOrder, E> {
        Ok(KeyOrder::default())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<KeyOrder, E> {
        Ok(KeyOrder::default())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<KeyOrder, E> {
        Ok(KeyOrder::default())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<KeyOrder, E> {
        Ok(KeyOrder::default())
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<KeyOrder, E> {
        Ok(KeyOrder::default())
    }
    fn visit_unit<E: de::Error>(self) -> Result<KeyOrder, E> {
        Ok(KeyOrder::default())
    }
}

/// A value serialised with its objects' keys in `order`.
struct Ordered<'a> {
    value: &'a Value,
    order: Option<&'a KeyOrder>,
}

impl Serialize for Ordered<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.value {
            Value::Object(object) => {
                let known = self.order.map(|o| o.keys.as_slice()).unwrap_or_default();
                let keys = known
                    .iter()
                    .filter(|k| object.contains_key(*k))
                    .chain(object.keys().filter(|k| !known.contains(k)));
                let mut map = serializer.serialize_map(Some(object.len()))?;
                for key in keys {
                    let member = self.order.and_then(|o| o.members.get(key));
                    map.serialize_entry(
                        key,
                        &Ordered {
                            value: &object[key],
                            order: member,
                        },
                    )?;
                }
                map.end()
            }
            Value::Array(elements) => {
                let mut seq = serializer.serialize_seq(Some(elements.len()))?;
                for (i, element) in elements.iter().enumerate() {
                    seq.serialize_element(&Ordered {
                        value: element,
                        order: self.order.and_then(|o| o.elements.get(i)),
                    })?;
                }
                seq.end()
            }
            other => other.serialize(serializer),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_keep_their_place_and_new_ones_come_after() {
        let text = r#"{"zeta": 1, "permissions": {"deny": [], "allow": ["Bash(ls)"]}, "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x"}]}]}, "alpha": true}"#;
        let mut doc: Value = serde_json::from_str(text).unwrap();
        doc["hooks"]["PreToolUse"] = serde_json::json!([]);
        doc["env"] = serde_json::json!({"B": "1", "A": "2"});
        let out = KeyOrder::of(text).pretty(&doc);
        let keys: Vec<&str> = out
            .lines()
            .filter_map(|l| {
                let (key, after) = l.trim().strip_prefix('"')?.split_once('"')?;
                after.starts_with(':').then_some(key)
            })
            .collect();
        assert_eq!(
            keys,
            [
                "zeta",
                "permissions",
                "deny",
                "allow",
                "hooks",
                "Stop",
                "hooks",
                "type",
                "command",
                "PreToolUse",
                "alpha",
                "env",
                "A",
                "B"
            ]
        );
        let back: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(back, doc);
    }
}
