//! CRC-32C (Castagnoli), the checksum Pulsar puts after the 0x0e01 magic of a payload frame.
//!
//! Only computed while the message buffer is pre-built at start-up, so a plain table-driven
//! implementation is fast enough; nothing on the per-message path calls it.

/// Reflected Castagnoli polynomial.
const POLY: u32 = 0x82F6_3B78;

const fn make_table() -> [u32; 256] {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = i as u32;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ POLY } else { crc >> 1 };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
}

static TABLE: [u32; 256] = make_table();

/// CRC-32C of `data` (initial value and final XOR all ones).
pub fn crc32c(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in data {
        crc = TABLE[((crc ^ byte as u32) & 0xff) as usize] ^ (crc >> 8);
    }
    !crc
}

#[cfg(test)]
mod tests {
    #[test]
    fn standard_check_value() {
        assert_eq!(super::crc32c(b"123456789"), 0xE306_9283);
    }
}
