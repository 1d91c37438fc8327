//! Buffers: the memory an entry point reaches through a pointer or array parameter.
//!
//! A [`Buffer`] is a typed byte vector: an [`ElemType`] and `len * size` little-endian
//! bytes, exactly what a target copies into its simulated global memory and back. The
//! typed accessors ([`Buffer::get`], [`Buffer::to_vec`]) are for the host side: tests,
//! printing and JSON.

use crate::launch::elem::{Elem, ElemType, Value};

/// A typed, little-endian buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Buffer {
    elem: ElemType,
    bytes: Vec<u8>,
}

impl Buffer {
    /// `n` zero elements.
    pub fn zeros(elem: ElemType, n: usize) -> Buffer {
        Buffer {
            elem,
            bytes: vec![0; n.saturating_mul(elem.size())],
        }
    }

    /// A buffer over existing bytes; `None` when their length is not a multiple of the
    /// element size.
    pub fn from_bytes(elem: ElemType, bytes: Vec<u8>) -> Option<Buffer> {
        bytes
            .len()
            .is_multiple_of(elem.size())
            .then_some(Buffer { elem, bytes })
    }

    /// A buffer of `T`s.
    pub fn from_slice<T: Elem>(values: &[T]) -> Buffer {
        let mut bytes = Vec::with_capacity(values.len() * T::TYPE.size());
        for v in values {
            v.into_value().write_le(&mut bytes);
        }
        Buffer {
            elem: T::TYPE,
            bytes,
        }
    }

    /// A buffer of values that must all have type `elem`; `None` if one does not.
    pub fn from_values(elem: ElemType, values: impl IntoIterator<Item = Value>) -> Option<Buffer> {
        let mut bytes = Vec::new();
        for v in values {
            if v.elem_type() != elem {
                return None;
            }
            v.write_le(&mut bytes);
        }
        Some(Buffer { elem, bytes })
    }

    pub fn elem(&self) -> ElemType {
        self.elem
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.bytes.len() / self.elem.size()
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The raw little-endian bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The raw bytes, for a target to copy results back into (the length is fixed).
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.bytes
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }

    /// Element `i`, or `None` past the end.
    pub fn get(&self, i: usize) -> Option<Value> {
        let size = self.elem.size();
        let start = i.checked_mul(size)?;
        Value::from_le_bytes(self.elem, self.bytes.get(start..)?)
    }

    /// Stores element `i`; false (and nothing stored) past the end or when `v` has
    /// another type.
    pub fn set(&mut self, i: usize, v: Value) -> bool {
        let size = self.elem.size();
        if v.elem_type() != self.elem {
            return false;
        }
        let Some(slot) = i
            .checked_mul(size)
            .and_then(|s| self.bytes.get_mut(s..s + size))
        else {
            return false;
        };
        let mut tmp = Vec::with_capacity(size);
        v.write_le(&mut tmp);
        slot.copy_from_slice(&tmp);
        true
    }

    /// Every element, in order.
    pub fn values(&self) -> impl Iterator<Item = Value> + '_ {
        self.bytes
            .chunks_exact(self.elem.size())
            .filter_map(move |c| Value::from_le_bytes(self.elem, c))
    }

    /// The elements as `T`s; `None` when `T` is not the element type.
    pub fn to_vec<T: Elem>(&self) -> Option<Vec<T>> {
        if T::TYPE != self.elem {
            return None;
        }
        self.values().map(T::from_value).collect()
    }

    /// The elements as JSON values (see [`Value::to_json`]).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::Value::Array(self.values().map(Value::to_json).collect())
    }

    /// `[v0, v1, ...]` on one line.
    pub fn format_inline(&self) -> String {
        let items: Vec<String> = self.values().map(|v| v.to_string()).collect();
        format!("[{}]", items.join(", "))
    }

    /// The `--print` form: `name = [v0, v1, ...]` on one line for up to
    /// [`Self::PRINT_PER_LINE`] values; longer buffers are printed in full, one line per
    /// 16 values, indented, with the brackets on their own lines. Ends with a newline.
    pub fn format_print(&self, name: &str) -> String {
        if self.len() <= Self::PRINT_PER_LINE {
            return format!("{name} = {}\n", self.format_inline());
        }
        let items: Vec<String> = self.values().map(|v| v.to_string()).collect();
        let mut out = format!("{name} = [\n");
        let rows: Vec<String> = items
            .chunks(Self::PRINT_PER_LINE)
            .map(|row| format!("    {}", row.join(", ")))
            .collect();
        out.push_str(&rows.join(",\n"));
        out.push_str("\n]\n");
        out
    }

    /// Values per line in [`Self::format_print`].
    pub const PRINT_PER_LINE: usize = 16;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_access() {
        let mut b = Buffer::from_slice(&[1.5f32, -2.0, 3.25]);
        assert_eq!(b.elem(), ElemType::F32);
        assert_eq!(b.len(), 3);
        assert_eq!(b.bytes().len(), 12);
        assert_eq!(b.get(1), Some(Value::F32(-2.0)));
        assert_eq!(b.get(3), None);
        assert_eq!(b.get(usize::MAX), None);
        assert!(b.set(0, Value::F32(9.0)));
        assert!(!b.set(0, Value::I32(9)));
        assert!(!b.set(3, Value::F32(9.0)));
        assert_eq!(b.to_vec::<f32>(), Some(vec![9.0, -2.0, 3.25]));
        assert_eq!(b.to_vec::<i32>(), None);
    }

    #[test]
    fn bytes_are_little_endian() {
        let b = Buffer::from_slice(&[0x0102_0304i32, -1]);
        assert_eq!(b.bytes(), &[4, 3, 2, 1, 255, 255, 255, 255]);
        assert_eq!(
            Buffer::from_bytes(ElemType::I16, vec![1, 0, 2, 0])
                .unwrap()
                .to_vec::<i16>(),
            Some(vec![1, 2])
        );
        assert_eq!(Buffer::from_bytes(ElemType::I16, vec![1, 0, 2]), None);
    }

    #[test]
    fn zeros_and_values() {
        let z = Buffer::zeros(ElemType::F64, 4);
        assert_eq!(z.to_vec::<f64>(), Some(vec![0.0; 4]));
        assert!(Buffer::zeros(ElemType::U8, 0).is_empty());
        let b = Buffer::from_values(ElemType::U8, [Value::U8(1), Value::U8(2)]).unwrap();
        assert_eq!(b.to_vec::<u8>(), Some(vec![1, 2]));
        assert_eq!(Buffer::from_values(ElemType::U8, [Value::I8(1)]), None);
    }

    #[test]
    fn print_forms() {
        let b = Buffer::from_slice(&[1i32, 2, 3]);
        assert_eq!(b.format_print("x"), "x = [1, 2, 3]\n");
        assert_eq!(
            Buffer::zeros(ElemType::F32, 0).format_print("e"),
            "e = []\n"
        );
        let b = Buffer::from_slice(&(0..16).collect::<Vec<i32>>());
        assert_eq!(b.format_print("x").lines().count(), 1);
        let b = Buffer::from_slice(&(0..33).collect::<Vec<u16>>());
        let text = b.format_print("y");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 5, "{text}");
        assert_eq!(lines[0], "y = [");
        assert_eq!(
            lines[1],
            "    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,"
        );
        assert_eq!(lines[3], "    32");
        assert_eq!(lines[4], "]");
        let b = Buffer::from_slice(&[true, false]);
        assert_eq!(b.format_inline(), "[true, false]");
        assert_eq!(
            Buffer::from_slice(&[0.1f32, 1e20]).format_inline(),
            "[0.1, 1e20]"
        );
    }

    #[test]
    fn json_array() {
        let b = Buffer::from_slice(&[0.5f64, f64::NAN]);
        assert_eq!(b.to_json(), serde_json::json!([0.5, "NaN"]));
    }
}
