//! One client connection: read whatever arrived, answer every complete frame in it into one
//! output buffer, write that buffer once. Coalescing this way turns a read holding hundreds of
//! SENDs into a single write of their receipts, and a FLOW into one write of its messages.
//! SEND_RECEIPTs may also wait up to `receipt_delay` for the receipts of later reads: at a steady
//! unbatched rate each read holds one or two SENDs, and a receipt per read costs the client more
//! (a wake-up and a callback hand-over each) than a broker's group commit does.
//! While the client is producing (the last read held SENDs), after a small read (under a quarter
//! of the read buffer) the thread sleeps `read_pause` before answering it and reading again, as a
//! busy broker reads late and answers after its sync. A
//! server always waiting in read() is woken by every SEND the client writes, and that costs the
//! official client more per message than the broker's work saves (README.md has the figures).

use crate::frames::*;
use crate::proto::{bytes_field, parse_command, put_bytes, put_uint, uints, Command};
use crate::topic::{Topic, LEDGER_ID};
use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// Larger than the client's 5 MiB frame limit plus padding: anything bigger is garbage.
const MAX_FRAME: usize = 6 * 1024 * 1024;
const READ_CHUNK: usize = 256 * 1024;

/// Read position and outstanding permits (in messages, as FLOW grants them) of one consumer.
struct Cursor {
    next_entry: usize,
    permits: i64,
}

/// Per-connection state; the topic is shared read-only by every connection.
struct Session {
    topic: Arc<Topic>,
    batched: bool,
    own_url: String,
    peer_port: u16,
    consumers: HashMap<u64, Cursor>,
    next_receipt_entry: u64,
}

/// How the connection times its reads and receipts (see the module comment).
#[derive(Clone, Copy)]
pub struct Pacing {
    pub receipt_delay: Duration,
    pub read_pause: Duration,
}

/// SEND_RECEIPTs written together once the oldest has waited `delay` (at once for a zero delay).
struct HeldReceipts {
    frames: Vec<u8>,
    since: Option<Instant>,
    delay: Duration,
}

impl HeldReceipts {
    /// How long the next read may block: None = until input arrives (nothing held).
    fn read_timeout(&self) -> Option<Duration> {
        self.since.map(|since| self.delay.saturating_sub(since.elapsed()))
    }

    fn write_to(&mut self, stream: &mut TcpStream) -> io::Result<()> {
        if !self.frames.is_empty() {
            stream.write_all(&self.frames)?;
            self.frames.clear();
        }
        self.since = None;
        Ok(())
    }
}

/// Answer one client until it disconnects (Ok) or sends something unparseable (Err).
pub fn serve(mut stream: TcpStream, topic: Arc<Topic>, batched: bool, pacing: Pacing) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let mut session = Session::new(&stream, topic, batched)?;
    let mut input = vec![0u8; READ_CHUNK];
    let mut filled = 0;
    let mut out = Vec::with_capacity(READ_CHUNK);
    let mut receipts = HeldReceipts { frames: Vec::with_capacity(READ_CHUNK), since: None, delay: pacing.receipt_delay };
    let mut producing = false; // the last read held SENDs: pace reads (a consumer's FLOW is answered at once)
    loop {
        let timeout = receipts.read_timeout();
        if timeout == Some(Duration::ZERO) {
            receipts.write_to(&mut stream)?;
            continue;
        }
        if filled == input.len() {
            input.resize(input.len() * 2, 0); // a frame larger than the buffer: grow to fit it
        }
        stream.set_read_timeout(timeout)?;
        let n = match stream.read(&mut input[filled..]) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => continue,
            Err(e) => return Err(e),
        };
        filled += n;
        if producing && n < READ_CHUNK / 4 && !pacing.read_pause.is_zero() {
            thread::sleep(pacing.read_pause);
        }
        let held = receipts.frames.len();
        let used = session.handle_frames(&input[..filled], &mut out, &mut receipts.frames)?;
        producing = receipts.frames.len() > held;
        input.copy_within(used..filled, 0);
        filled -= used;
        if !receipts.frames.is_empty() && receipts.since.is_none() {
            receipts.since = Some(Instant::now());
        }
        if !out.is_empty() {
            receipts.write_to(&mut stream)?; // replies keep their order behind the receipts before them
            stream.write_all(&out)?;
            out.clear();
        }
    }
}

fn invalid(why: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, why.to_string())
}

impl Session {
    fn new(stream: &TcpStream, topic: Arc<Topic>, batched: bool) -> io::Result<Session> {
        Ok(Session {
            topic,
            batched,
            // Lookups answer with the address the client reached, so it stays on this connection.
            own_url: format!("pulsar://{}", stream.local_addr()?),
            peer_port: stream.peer_addr()?.port(),
            consumers: HashMap::new(),
            next_receipt_entry: 0,
        })
    }

    /// Answer every complete frame at the start of `input`; returns how many bytes were used.
    fn handle_frames(&mut self, input: &[u8], out: &mut Vec<u8>, receipts: &mut Vec<u8>) -> io::Result<usize> {
        let mut pos = 0;
        while input.len() - pos >= 8 {
            let total = u32::from_be_bytes(input[pos..pos + 4].try_into().unwrap()) as usize;
            if !(4..=MAX_FRAME).contains(&total) {
                return Err(invalid("bad frame size"));
            }
            if input.len() - pos < 4 + total {
                break;
            }
            let frame = &input[pos + 4..pos + 4 + total];
            let command_size = u32::from_be_bytes(frame[..4].try_into().unwrap()) as usize;
            let command = frame.get(4..4 + command_size).and_then(parse_command);
            self.handle(command.ok_or_else(|| invalid("bad command"))?, out, receipts);
            pos += 4 + total;
        }
        Ok(pos)
    }

    fn handle(&mut self, cmd: Command, out: &mut Vec<u8>, receipts: &mut Vec<u8>) {
        match cmd.kind {
            CONNECT => connected(cmd.body, out),
            PARTITIONED_METADATA => partitioned_metadata(cmd.body, out),
            LOOKUP => self.lookup(cmd.body, out),
            PRODUCER => self.producer(cmd.body, out),
            SEND => self.send_receipt(cmd.body, receipts),
            CLOSE_PRODUCER => put_success(out, uints(cmd.body, [2])[0].unwrap_or(0)),
            SUBSCRIBE => self.subscribe(cmd.body, out),
            FLOW => self.flow(cmd.body, out),
            CLOSE_CONSUMER | UNSUBSCRIBE => self.close_consumer(cmd.body, out),
            SEEK => self.seek(cmd.body, out),
            GET_LAST_MESSAGE_ID => self.last_message_id(cmd.body, out),
            PING => put_command(out, PONG, |_| {}),
            // ACK, REDELIVER_UNACKNOWLEDGED_MESSAGES, PONG, ...: nothing is stored, nothing to say.
            _ => {}
        }
    }

    fn lookup(&self, body: &[u8], out: &mut Vec<u8>) {
        let [request_id] = uints(body, [2]);
        put_command(out, LOOKUP_RESPONSE, |b| {
            put_bytes(b, 1, self.own_url.as_bytes());
            put_uint(b, 3, 1); // response = Connect
            put_uint(b, 4, request_id.unwrap_or(0));
            put_uint(b, 5, 1); // authoritative
        });
    }

    fn producer(&self, body: &[u8], out: &mut Vec<u8>) {
        let [producer_id, request_id] = uints(body, [2, 3]);
        let generated = format!("null-broker-{}-{}", self.peer_port, producer_id.unwrap_or(0));
        let name = bytes_field(body, 4).unwrap_or(generated.as_bytes());
        put_command(out, PRODUCER_SUCCESS, |b| {
            put_uint(b, 1, request_id.unwrap_or(0));
            put_bytes(b, 2, name);
        });
    }

    /// Echo the sequence ids of the SEND with a fresh message id: the producer only checks that
    /// receipts come back in order for the sequence id at the head of its queue.
    fn send_receipt(&mut self, body: &[u8], out: &mut Vec<u8>) {
        let [producer_id, sequence_id, highest] = uints(body, [1, 2, 6]);
        let entry = self.next_receipt_entry;
        self.next_receipt_entry += 1;
        put_command(out, SEND_RECEIPT, |b| {
            put_uint(b, 1, producer_id.unwrap_or(0));
            put_uint(b, 2, sequence_id.unwrap_or(0));
            put_message_id(b, 3, LEDGER_ID, entry, None);
            if let Some(highest) = highest {
                put_uint(b, 4, highest);
            }
        });
    }

    fn subscribe(&mut self, body: &[u8], out: &mut Vec<u8>) {
        let [consumer_id, request_id] = uints(body, [4, 5]);
        self.consumers.insert(consumer_id.unwrap_or(0), Cursor { next_entry: 0, permits: 0 });
        put_success(out, request_id.unwrap_or(0));
    }

    fn flow(&mut self, body: &[u8], out: &mut Vec<u8>) {
        let [consumer_id, permits] = uints(body, [1, 2]);
        let consumer_id = consumer_id.unwrap_or(0);
        if let Some(cursor) = self.consumers.get_mut(&consumer_id) {
            cursor.permits += permits.unwrap_or(0) as i64;
            dispatch(&self.topic, consumer_id, cursor, out);
        }
    }

    fn close_consumer(&mut self, body: &[u8], out: &mut Vec<u8>) {
        let [consumer_id, request_id] = uints(body, [1, 2]);
        self.consumers.remove(&consumer_id.unwrap_or(0));
        put_success(out, request_id.unwrap_or(0));
    }

    /// Rewind to the sought entry (or the start for any id outside the pre-built ledger); the
    /// client drops its queue on seek, so the entries are simply sent again as permits allow.
    fn seek(&mut self, body: &[u8], out: &mut Vec<u8>) {
        let [consumer_id, request_id] = uints(body, [1, 2]);
        let target = bytes_field(body, 3).map(|id| uints(id, [1, 2])).and_then(|[ledger, entry]| {
            (ledger == Some(LEDGER_ID)).then(|| entry.unwrap_or(0) as usize)
        });
        if let Some(cursor) = self.consumers.get_mut(&consumer_id.unwrap_or(0)) {
            cursor.next_entry = target.unwrap_or(0).min(self.topic.entries.len());
        }
        put_success(out, request_id.unwrap_or(0));
    }

    fn last_message_id(&self, body: &[u8], out: &mut Vec<u8>) {
        let [request_id] = uints(body, [2]);
        // An empty topic answers the "earliest" sentinel (-1:-1 as unsigned).
        let (entry, batch_index) = self.topic.last_message_id(self.batched).unwrap_or((u64::MAX, None));
        let ledger = if entry == u64::MAX { u64::MAX } else { LEDGER_ID };
        put_command(out, GET_LAST_MESSAGE_ID_RESPONSE, |b| {
            put_message_id(b, 1, ledger, entry, batch_index);
            put_uint(b, 2, request_id.unwrap_or(0));
        });
    }
}

/// Send entries while permits remain; like Pulsar's dispatcher, a batch entry costs its message
/// count and may take the permits below zero.
fn dispatch(topic: &Topic, consumer_id: u64, cursor: &mut Cursor, out: &mut Vec<u8>) {
    while cursor.permits > 0 && cursor.next_entry < topic.entries.len() {
        let index = cursor.next_entry;
        put_message_frame(out, consumer_id, LEDGER_ID, index as u64, topic.block(index));
        cursor.permits -= topic.entries[index].messages as i64;
        cursor.next_entry += 1;
    }
}

fn connected(body: &[u8], out: &mut Vec<u8>) {
    let [client_version] = uints(body, [4]);
    put_command(out, CONNECTED, |b| {
        put_bytes(b, 1, b"null-broker");
        put_uint(b, 2, client_version.unwrap_or(0).min(MAX_PROTOCOL_VERSION));
        put_uint(b, 3, 5 * 1024 * 1024); // max_message_size
    });
}

/// Every topic is non-partitioned.
fn partitioned_metadata(body: &[u8], out: &mut Vec<u8>) {
    let [request_id] = uints(body, [2]);
    put_command(out, PARTITIONED_METADATA_RESPONSE, |b| {
        put_uint(b, 1, 0);
        put_uint(b, 2, request_id.unwrap_or(0));
        put_uint(b, 3, 0); // response = Success
    });
}

