//! Whether a typed result holds a number JSON cannot carry.
//!
//! `serde_json` writes a NaN or an infinite `f32`/`f64` as `null` without a word, so a typed
//! tool whose arithmetic overflowed would answer `{"sum": null}` as a success (and a field typed
//! `Option<f64>` would even conform to its schema). [`has_non_finite`] walks the value as serde
//! presents it, writing nothing, and says whether any float in it is not finite; the typed
//! constructors refuse such a result as the server's error before it is serialized.

use serde::Serialize;
use serde::ser;

/// True if `value` holds a NaN or an infinite float anywhere.
pub(crate) fn has_non_finite<T: Serialize + ?Sized>(value: &T) -> bool {
    let mut walk = Walk { found: false };
    // A value that does not serialize at all is refused later, by `serde_json`.
    let _ = value.serialize(&mut walk);
    walk.found
}

struct Walk {
    found: bool,
}

#[derive(Debug)]
struct Never;

impl std::fmt::Display for Never {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a value that does not serialize")
    }
}

impl std::error::Error for Never {}

impl ser::Error for Never {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        Never
    }
}

macro_rules! nothing {
    ($($name:ident: $ty:ty),* $(,)?) => {
        $(fn $name(self, _: $ty) -> Result<(), Never> { Ok(()) })*
    };
}

/// Methods that start a compound value: its parts are walked by the same walker.
macro_rules! compound {
    ($($name:ident($($arg:ty),*)),* $(,)?) => {
        $(fn $name(self, $(_: $arg),*) -> Result<Self, Never> { Ok(self) })*
    };
}

macro_rules! floats {
    ($($name:ident: $ty:ty),* $(,)?) => {
        $(fn $name(self, value: $ty) -> Result<(), Never> {
            self.found |= !value.is_finite();
            Ok(())
        })*
    };
}

impl ser::Serializer for &mut Walk {
    type Ok = ();
    type Error = Never;
    type SerializeSeq = Self;
    type SerializeTuple = Self;
    type SerializeTupleStruct = Self;
    type SerializeTupleVariant = Self;
    type SerializeMap = Self;
    type SerializeStruct = Self;
    type SerializeStructVariant = Self;

    nothing!(
        serialize_bool: bool, serialize_i8: i8, serialize_i16: i16, serialize_i32: i32, serialize_i64: i64,
        serialize_i128: i128, serialize_u8: u8, serialize_u16: u16, serialize_u32: u32, serialize_u64: u64,
        serialize_u128: u128, serialize_char: char, serialize_str: &str, serialize_bytes: &[u8],
        serialize_unit_struct: &'static str,
    );

    floats!(serialize_f32: f32, serialize_f64: f64);

    fn serialize_none(self) -> Result<(), Never> {
        Ok(())
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Never> {
        value.serialize(self)
    }

    fn serialize_unit(self) -> Result<(), Never> {
        Ok(())
    }

    fn serialize_unit_variant(self, _: &'static str, _: u32, _: &'static str) -> Result<(), Never> {
        Ok(())
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<(), Never> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        value: &T,
    ) -> Result<(), Never> {
        value.serialize(self)
    }

    compound!(
        serialize_seq(Option<usize>),
        serialize_tuple(usize),
        serialize_tuple_struct(&'static str, usize),
        serialize_tuple_variant(&'static str, u32, &'static str, usize),
        serialize_map(Option<usize>),
        serialize_struct(&'static str, usize),
        serialize_struct_variant(&'static str, u32, &'static str, usize),
    );
}

macro_rules! elements {
    ($($trait:ident :: $method:ident),* $(,)?) => {
        $(impl ser::$trait for &mut Walk {
            type Ok = ();
            type Error = Never;
            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Never> {
                value.serialize(&mut **self)
            }
            fn end(self) -> Result<(), Never> {
                Ok(())
            }
        })*
    };
}

elements!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field,
);

impl ser::SerializeMap for &mut Walk {
    type Ok = ();
    type Error = Never;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Never> {
        key.serialize(&mut **self)
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Never> {
        value.serialize(&mut **self)
    }
    fn end(self) -> Result<(), Never> {
        Ok(())
    }
}

macro_rules! fields {
    ($($trait:ident),* $(,)?) => {
        $(impl ser::$trait for &mut Walk {
            type Ok = ();
            type Error = Never;
            fn serialize_field<T: Serialize + ?Sized>(&mut self, _: &'static str, value: &T) -> Result<(), Never> {
                value.serialize(&mut **self)
            }
            fn end(self) -> Result<(), Never> {
                Ok(())
            }
        })*
    };
}

fields!(SerializeStruct, SerializeStructVariant);

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[derive(Serialize)]
    struct Reading {
        label: String,
        value: Option<f64>,
        history: Vec<f32>,
        by_name: BTreeMap<String, f64>,
    }

    #[test]
    fn a_non_finite_float_is_found_wherever_it_is() {
        let fine = Reading {
            label: "x".into(),
            value: Some(1.5),
            history: vec![1.0],
            by_name: BTreeMap::new(),
        };
        assert!(!has_non_finite(&fine));
        assert!(has_non_finite(&Reading {
            value: Some(f64::INFINITY),
            ..fine_clone(&fine)
        }));
        assert!(has_non_finite(&Reading {
            history: vec![0.0, f32::NAN],
            ..fine_clone(&fine)
        }));
        let by_name = [("a".to_string(), f64::NEG_INFINITY)].into_iter().collect();
        assert!(has_non_finite(&Reading {
            by_name,
            ..fine_clone(&fine)
        }));
        assert!(!has_non_finite(&serde_json::json!({ "n": 1 })));
    }

    fn fine_clone(r: &Reading) -> Reading {
        Reading {
            label: r.label.clone(),
            value: r.value,
            history: r.history.clone(),
            by_name: r.by_name.clone(),
        }
    }
}
