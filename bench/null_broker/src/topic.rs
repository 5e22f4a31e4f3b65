//! The pre-built topic every subscription reads: all entries' payload blocks in one buffer.
//!
//! Each block is `[0x0e01][crc32c][metadata size u32][MessageMetadata][payload]`, exactly what a
//! broker forwards after a MESSAGE command, with the CRC computed over everything from the
//! metadata size to the end. Building it once at start-up keeps checksums and metadata encoding
//! off the dispatch path, which then only writes a small command and copies a slice.

use crate::crc32c::crc32c;
use crate::proto::{put_bytes, put_uint};
use std::time::{SystemTime, UNIX_EPOCH};

/// Ledger id the pre-built entries are numbered under.
pub const LEDGER_ID: u64 = 1;

const PRODUCER_NAME: &[u8] = b"null-broker";
const MAGIC_CRC32C: [u8; 2] = [0x0e, 0x01];

/// What the topic holds: `messages` payloads of `size` bytes, `batch` messages per entry
/// (0 = one plain message per entry, without batch metadata).
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub messages: u64,
    pub size: usize,
    pub batch: u64,
}

/// One entry: where its block sits in the buffer and how many messages it carries.
pub struct Entry {
    pub start: usize,
    pub end: usize,
    pub messages: u64,
}

pub struct Topic {
    blocks: Vec<u8>,
    pub entries: Vec<Entry>,
}

impl Topic {
    pub fn build(shape: Shape) -> Topic {
        let payload = vec![b'x'; shape.size];
        let publish_time = now_ms();
        let per_entry = shape.batch.max(1);
        let mut topic = Topic { blocks: Vec::new(), entries: Vec::new() };
        let mut sequence_id = 0;
        while sequence_id < shape.messages {
            let count = per_entry.min(shape.messages - sequence_id);
            let batched = shape.batch > 0;
            topic.push_entry(sequence_id, count, batched, &payload, publish_time);
            sequence_id += count;
        }
        topic
    }

    /// The payload block of entry `index`.
    pub fn block(&self, index: usize) -> &[u8] {
        let entry = &self.entries[index];
        &self.blocks[entry.start..entry.end]
    }

    /// (entry id, batch index of its last message when batched) of the newest message.
    pub fn last_message_id(&self, batched: bool) -> Option<(u64, Option<u64>)> {
        let last = self.entries.last()?;
        let index = batched.then(|| last.messages - 1);
        Some((self.entries.len() as u64 - 1, index))
    }

    fn push_entry(&mut self, first_seq: u64, count: u64, batched: bool, payload: &[u8], publish_time: u64) {
        let body = if batched { batch_payload(first_seq, count, payload) } else { payload.to_vec() };
        let metadata = message_metadata(first_seq, batched.then_some(count), body.len(), publish_time);
        let start = self.blocks.len();
        self.blocks.extend_from_slice(&MAGIC_CRC32C);
        self.blocks.extend_from_slice(&[0u8; 4]);
        let checked_from = self.blocks.len();
        self.blocks.extend_from_slice(&(metadata.len() as u32).to_be_bytes());
        self.blocks.extend_from_slice(&metadata);
        self.blocks.extend_from_slice(&body);
        let crc = crc32c(&self.blocks[checked_from..]);
        self.blocks[start + 2..checked_from].copy_from_slice(&crc.to_be_bytes());
        self.entries.push(Entry { start, end: self.blocks.len(), messages: count });
    }
}

/// MessageMetadata; `batch_count` is set only for batch entries, since a consumer treats any
/// entry carrying num_messages_in_batch as a batch and would split a plain payload.
fn message_metadata(sequence_id: u64, batch_count: Option<u64>, body_len: usize, publish_time: u64) -> Vec<u8> {
    let mut meta = Vec::with_capacity(48);
    put_bytes(&mut meta, 1, PRODUCER_NAME);
    put_uint(&mut meta, 2, sequence_id);
    put_uint(&mut meta, 3, publish_time);
    put_uint(&mut meta, 9, body_len as u64); // uncompressed_size
    if let Some(count) = batch_count {
        put_uint(&mut meta, 11, count); // num_messages_in_batch
    }
    meta
}

/// `count` repetitions of `[single metadata size u32][SingleMessageMetadata][payload]`.
fn batch_payload(first_seq: u64, count: u64, payload: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    for seq in first_seq..first_seq + count {
        let mut single = Vec::with_capacity(16);
        put_uint(&mut single, 3, payload.len() as u64); // payload_size
        put_uint(&mut single, 8, seq); // sequence_id
        body.extend_from_slice(&(single.len() as u32).to_be_bytes());
        body.extend_from_slice(&single);
        body.extend_from_slice(payload);
    }
    body
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_checksum_covers_metadata_size_to_end() {
        let topic = Topic::build(Shape { messages: 5, size: 10, batch: 2 });
        assert_eq!(topic.entries.len(), 3);
        assert_eq!(topic.entries[2].messages, 1);
        let block = topic.block(1);
        assert_eq!(&block[..2], &MAGIC_CRC32C);
        let crc = u32::from_be_bytes(block[2..6].try_into().unwrap());
        assert_eq!(crc, crc32c(&block[6..]));
        assert_eq!(topic.last_message_id(true), Some((2, Some(0))));
    }
}
