//! Hand-rolled protobuf (proto2 wire format) for the few Pulsar messages the null broker handles.
//!
//! Writers append to a `Vec<u8>` without allocating: a nested message gets a one-byte length
//! placeholder that is patched afterwards (widened in the rare case the body is 128 bytes or
//! more). Readers scan a message body for the handful of fields they need.

const VARINT: u32 = 0;
const FIXED64: u32 = 1;
const LEN: u32 = 2;
const FIXED32: u32 = 5;

pub fn put_varint(buf: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        buf.push((value as u8) | 0x80);
        value >>= 7;
    }
    buf.push(value as u8);
}

fn put_key(buf: &mut Vec<u8>, field: u32, wire: u32) {
    put_varint(buf, u64::from(field << 3 | wire));
}

/// A varint field (uint32/uint64/int32 >= 0/bool/enum).
pub fn put_uint(buf: &mut Vec<u8>, field: u32, value: u64) {
    put_key(buf, field, VARINT);
    put_varint(buf, value);
}

/// A length-delimited field (string/bytes).
pub fn put_bytes(buf: &mut Vec<u8>, field: u32, bytes: &[u8]) {
    put_key(buf, field, LEN);
    put_varint(buf, bytes.len() as u64);
    buf.extend_from_slice(bytes);
}

/// A nested message whose body `body` writes.
pub fn put_message(buf: &mut Vec<u8>, field: u32, body: impl FnOnce(&mut Vec<u8>)) {
    put_key(buf, field, LEN);
    let len_at = buf.len();
    buf.push(0);
    body(buf);
    let len = buf.len() - len_at - 1;
    if len < 0x80 {
        buf[len_at] = len as u8;
    } else {
        let mut prefix = Vec::with_capacity(10);
        put_varint(&mut prefix, len as u64);
        buf.splice(len_at..len_at + 1, prefix);
    }
}

/// The value of one field as found on the wire.
#[derive(Clone, Copy)]
pub enum Value<'a> {
    Uint(u64),
    Bytes(&'a [u8]),
    Fixed,
}

/// Iterator over the (field number, value) pairs of one message body; stops at malformed input.
pub struct Fields<'a> {
    buf: &'a [u8],
    pos: usize,
    pub malformed: bool,
}

impl<'a> Fields<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Fields { buf, pos: 0, malformed: false }
    }

    fn varint(&mut self) -> Option<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = *self.buf.get(self.pos)?;
            self.pos += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return Some(value);
            }
        }
        None
    }

    fn skip(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|&end| end <= self.buf.len())?;
        let slice = &self.buf[self.pos..end];
        self.pos = end;
        Some(slice)
    }

    fn field(&mut self) -> Option<(u32, Value<'a>)> {
        let key = self.varint()?;
        let value = match (key & 7) as u32 {
            VARINT => Value::Uint(self.varint()?),
            LEN => {
                let n = self.varint()? as usize;
                Value::Bytes(self.skip(n)?)
            }
            FIXED64 => self.skip(8).map(|_| Value::Fixed)?,
            FIXED32 => self.skip(4).map(|_| Value::Fixed)?,
            _ => return None,
        };
        Some(((key >> 3) as u32, value))
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = (u32, Value<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.pos >= self.buf.len() || self.malformed {
            return None;
        }
        let item = self.field();
        self.malformed = item.is_none();
        item
    }
}

/// The varint values of `fields` in `body`, in the same order (None where absent).
pub fn uints<const N: usize>(body: &[u8], fields: [u32; N]) -> [Option<u64>; N] {
    let mut found = [None; N];
    for (number, value) in Fields::new(body) {
        if let (Some(i), Value::Uint(v)) = (fields.iter().position(|&f| f == number), value) {
            found[i] = Some(v);
        }
    }
    found
}

/// The bytes of the length-delimited field `field` in `body`, if present.
pub fn bytes_field(body: &[u8], field: u32) -> Option<&[u8]> {
    Fields::new(body).find_map(|(number, value)| match value {
        Value::Bytes(bytes) if number == field => Some(bytes),
        _ => None,
    })
}

/// A BaseCommand split into its type and the body of its one sub-command.
pub struct Command<'a> {
    pub kind: u32,
    pub body: &'a [u8],
}

/// Parse a BaseCommand: `type` is field 1 and the sub-command's field number equals the type.
pub fn parse_command(bytes: &[u8]) -> Option<Command<'_>> {
    let mut kind = None;
    let mut body: &[u8] = &[];
    let mut fields = Fields::new(bytes);
    for (number, value) in &mut fields {
        match value {
            Value::Uint(v) if number == 1 => kind = Some(v as u32),
            Value::Bytes(b) => body = b,
            _ => {}
        }
    }
    if fields.malformed {
        return None;
    }
    kind.map(|kind| Command { kind, body })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_message_longer_than_127_bytes_gets_a_wide_length() {
        let mut buf = Vec::new();
        put_message(&mut buf, 3, |b| put_bytes(b, 1, &[7u8; 200]));
        let (field, value) = Fields::new(&buf).next().unwrap();
        assert_eq!(field, 3);
        match value {
            Value::Bytes(inner) => assert_eq!(bytes_field(inner, 1).unwrap(), &[7u8; 200][..]),
            _ => panic!("expected bytes"),
        }
    }

    #[test]
    fn uints_finds_fields_in_any_order() {
        let mut buf = Vec::new();
        put_uint(&mut buf, 2, 300);
        put_bytes(&mut buf, 9, b"skip");
        put_uint(&mut buf, 1, 5);
        assert_eq!(uints(&buf, [1, 2, 6]), [Some(5), Some(300), None]);
    }
}
