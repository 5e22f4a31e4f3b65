//! null-broker: the smallest Pulsar-protocol server the official client can produce to and
//! consume from, with no storage. It acknowledges every SEND at once and streams a pre-built
//! topic to every subscription as fast as permits allow, so throughput measured against it is
//! the client's own ceiling.
//!
//!     null_broker [--addr 127.0.0.1:6650] [--messages 100000] [--size 100] [--batch-size 0]
//!                 [--receipt-delay-us 1000]
//!
//! `--messages`/`--size` shape the topic each subscription reads from the start; `--batch-size N`
//! packs N messages per entry as a producer's batch would (0: one plain message per entry).
//! `--receipt-delay-us` lets SEND_RECEIPTs wait for each other up to that long (0: each read's
//! receipts go at once). Port 0 picks a free port; the first stdout line names the address actually bound.

mod conn;
mod crc32c;
mod frames;
mod proto;
mod topic;

use std::io::Write;
use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;
use std::{env, process, thread};
use topic::{Shape, Topic};

struct Options {
    addr: String,
    shape: Shape,
    pacing: conn::Pacing,
}

fn usage(problem: &str) -> ! {
    eprintln!("null_broker: {problem}");
    eprintln!("usage: null_broker [--addr HOST:PORT] [--messages N] [--size BYTES] [--batch-size N] [--receipt-delay-us N] [--read-pause-us N]");
    process::exit(2);
}

fn number<T: std::str::FromStr>(flag: &str, value: Option<String>) -> T {
    let value = value.unwrap_or_else(|| usage(&format!("{flag} needs a value")));
    value.parse().unwrap_or_else(|_| usage(&format!("{flag}: not a number: {value}")))
}

fn parse_options() -> Options {
    let mut options = Options {
        addr: "127.0.0.1:6650".to_string(),
        shape: Shape { messages: 100_000, size: 100, batch: 0 },
        pacing: conn::Pacing { receipt_delay: Duration::from_micros(1000), read_pause: Duration::from_micros(500) },
    };
    let mut args = env::args().skip(1);
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "--addr" => options.addr = args.next().unwrap_or_else(|| usage("--addr needs a value")),
            "--messages" => options.shape.messages = number(&flag, args.next()),
            "--size" => options.shape.size = number(&flag, args.next()),
            "--batch-size" => options.shape.batch = number(&flag, args.next()),
            "--receipt-delay-us" => options.pacing.receipt_delay = Duration::from_micros(number(&flag, args.next())),
            "--read-pause-us" => options.pacing.read_pause = Duration::from_micros(number(&flag, args.next())),
            "-h" | "--help" => usage("help"),
            other => usage(&format!("unknown argument {other}")),
        }
    }
    options
}

fn main() {
    let options = parse_options();
    let topic = Arc::new(Topic::build(options.shape));
    let batched = options.shape.batch > 0;
    let listener = TcpListener::bind(&options.addr).unwrap_or_else(|e| usage(&format!("bind {}: {e}", options.addr)));
    let shape = options.shape;
    let pacing = options.pacing;
    println!(
        "null-broker listening on {}: {} messages of {} B per subscription, {} per entry",
        listener.local_addr().expect("bound socket has an address"),
        shape.messages,
        shape.size,
        if batched { format!("batches of {}", shape.batch) } else { "one message".to_string() },
    );
    // The launcher waits for this line, so it must not sit in a pipe buffer.
    std::io::stdout().flush().ok();
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let topic = Arc::clone(&topic);
        // One thread per connection: a benchmark client opens one or two, and blocking I/O on a
        // dedicated thread is the shortest path from read to write.
        thread::spawn(move || {
            if let Err(e) = conn::serve(stream, topic, batched, pacing) {
                eprintln!("null-broker: connection closed: {e}");
            }
        });
    }
}
