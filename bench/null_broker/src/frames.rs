//! Pulsar command types and the two frame layouts the null broker writes.
//!
//! Simple frame: `[total size u32][command size u32][BaseCommand]`, big-endian, where the total
//! counts every byte after itself. Payload frame (MESSAGE): the same followed by a pre-built
//! `[0x0e01][crc32c][metadata size][MessageMetadata][payload]` block counted in the total.

use crate::proto::{put_message, put_uint};

pub const CONNECT: u32 = 2;
pub const CONNECTED: u32 = 3;
pub const SUBSCRIBE: u32 = 4;
pub const PRODUCER: u32 = 5;
pub const SEND: u32 = 6;
pub const SEND_RECEIPT: u32 = 7;
pub const MESSAGE: u32 = 9;
pub const FLOW: u32 = 11;
pub const UNSUBSCRIBE: u32 = 12;
pub const SUCCESS: u32 = 13;
pub const CLOSE_PRODUCER: u32 = 15;
pub const CLOSE_CONSUMER: u32 = 16;
pub const PRODUCER_SUCCESS: u32 = 17;
pub const PING: u32 = 18;
pub const PONG: u32 = 19;
pub const PARTITIONED_METADATA: u32 = 21;
pub const PARTITIONED_METADATA_RESPONSE: u32 = 22;
pub const LOOKUP: u32 = 23;
pub const LOOKUP_RESPONSE: u32 = 24;
pub const SEEK: u32 = 28;
pub const GET_LAST_MESSAGE_ID: u32 = 29;
pub const GET_LAST_MESSAGE_ID_RESPONSE: u32 = 30;

/// Newest protocol version this server claims (the one the 4.x C++ client sends).
pub const MAX_PROTOCOL_VERSION: u64 = 20;

/// Append one command frame; `extra` bytes (a payload block) follow it and count in the total.
fn put_frame(out: &mut Vec<u8>, kind: u32, body: impl FnOnce(&mut Vec<u8>), extra: &[u8]) {
    let start = out.len();
    out.extend_from_slice(&[0u8; 8]);
    put_uint(out, 1, u64::from(kind));
    put_message(out, kind, body);
    let command_size = out.len() - start - 8;
    let total = 4 + command_size + extra.len();
    out[start..start + 4].copy_from_slice(&(total as u32).to_be_bytes());
    out[start + 4..start + 8].copy_from_slice(&(command_size as u32).to_be_bytes());
    out.extend_from_slice(extra);
}

/// A frame without payload.
pub fn put_command(out: &mut Vec<u8>, kind: u32, body: impl FnOnce(&mut Vec<u8>)) {
    put_frame(out, kind, body, &[]);
}

/// MessageIdData {ledgerId = 1, entryId = 2, batch_index = 4 when given} as field `field`.
pub fn put_message_id(out: &mut Vec<u8>, field: u32, ledger: u64, entry: u64, batch_index: Option<u64>) {
    put_message(out, field, |b| {
        put_uint(b, 1, ledger);
        put_uint(b, 2, entry);
        if let Some(index) = batch_index {
            put_uint(b, 4, index);
        }
    });
}

/// A MESSAGE frame for `consumer_id` carrying the pre-built payload `block` of entry `entry`.
pub fn put_message_frame(out: &mut Vec<u8>, consumer_id: u64, ledger: u64, entry: u64, block: &[u8]) {
    let body = |b: &mut Vec<u8>| {
        put_uint(b, 1, consumer_id);
        put_message_id(b, 2, ledger, entry, None);
    };
    put_frame(out, MESSAGE, body, block);
}

/// CommandSuccess {request_id}.
pub fn put_success(out: &mut Vec<u8>, request_id: u64) {
    put_command(out, SUCCESS, |b| put_uint(b, 1, request_id));
}
