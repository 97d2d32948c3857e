//! ISO 8601 timestamps (`2024-12-03T14:00:00.000Z`) as pi writes them, without a date crate, and
//! the random ids of sessions and entries.

use std::time::{SystemTime, UNIX_EPOCH};

/// Now, as `YYYY-MM-DDTHH:MM:SS.mmmZ` in UTC.
pub fn now_iso() -> String {
    let ms = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0);
    iso_from_ms(ms)
}

pub fn iso_from_ms(ms: u64) -> String {
    let secs = ms / 1000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (year, month, day) = civil_from_days(days);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z", rem / 3600, rem / 60 % 60, rem % 60, ms % 1000)
}

/// Milliseconds since the epoch of an ISO timestamp in UTC (`Z`), or `None` when it is not one.
/// Offsets other than `Z` are not written by pi or reins, so they are not accepted.
pub fn ms_from_iso(text: &str) -> Option<u64> {
    let bytes = text.as_bytes();
    if bytes.len() < 20 || bytes[4] != b'-' || bytes[7] != b'-' || bytes[10] != b'T' || !text.ends_with('Z') {
        return None;
    }
    let num = |range: std::ops::Range<usize>| text.get(range)?.parse::<u64>().ok();
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let millis = match text.get(19..text.len() - 1) {
        Some("") => 0,
        Some(fraction) if fraction.starts_with('.') && fraction.len() > 1 => {
            let digits = &fraction[1..fraction.len().min(4)];
            let value = digits.parse::<u64>().ok()?;
            value * 10u64.pow(3 - digits.len() as u32)
        }
        _ => return None,
    };
    // A date before 1970 has no place on this clock: None, not a wrapped-around number.
    let days = u64::try_from(days_from_civil(year as i64, month as u32, day as u32)).ok()?;
    let secs = days.checked_mul(86_400)?.checked_add(hour * 3600 + minute * 60 + second)?;
    secs.checked_mul(1000)?.checked_add(millis)
}

/// A new session id (a random UUID).
pub fn new_session_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// A new entry id: 8 hex characters, as pi makes them, not yet in `taken`.
pub fn new_entry_id(taken: impl Fn(&str) -> bool) -> String {
    for _ in 0..100 {
        let id = format!("{:08x}", next_entry_bits());
        if !taken(&id) {
            return id;
        }
    }
    uuid::Uuid::new_v4().to_string()
}

thread_local! {
    /// The state of [`next_entry_bits`], seeded from the OS's random source once per thread.
    static ENTRY_BITS: std::cell::Cell<u64> = std::cell::Cell::new(uuid::Uuid::new_v4().as_u64_pair().0);
}

/// 32 random-looking bits (SplitMix64): an entry id needs to differ from its file's others, which
/// [`new_entry_id`] checks, not to be secret, and asking the OS for each one is a system call per
/// message.
fn next_entry_bits() -> u32 {
    ENTRY_BITS.with(|state| {
        let next = state.get().wrapping_add(0x9e37_79b9_7f4a_7c15);
        state.set(next);
        let mut z = next;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) >> 32) as u32
    })
}

// Howard Hinnant's civil calendar algorithms.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let yoe = year.rem_euclid(400);
    let mp = i64::from((month + 9) % 12);
    let doy = (153 * mp + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Entry ids are pi's shape and never one already taken, over more ids than a long session
    /// holds; another thread starts from its own seed.
    #[test]
    fn entry_ids_are_eight_hex_characters_and_new() {
        let mut taken = std::collections::HashSet::new();
        for _ in 0..20_000 {
            let id = new_entry_id(|id| taken.contains(id));
            assert!(
                id.len() == 8 && id.bytes().all(|byte| byte.is_ascii_hexdigit() && !byte.is_ascii_uppercase()),
                "{id}"
            );
            assert!(taken.insert(id));
        }
        let here = new_entry_id(|_| false);
        let there = std::thread::spawn(|| new_entry_id(|_| false)).join().expect("the thread ends");
        assert_ne!(here, there);
    }

    #[test]
    fn iso_round_trips() {
        assert_eq!(iso_from_ms(1_733_234_400_123), "2024-12-03T14:00:00.123Z");
        assert_eq!(ms_from_iso("2024-12-03T14:00:00.123Z"), Some(1_733_234_400_123));
        assert_eq!(ms_from_iso("2024-12-03T14:00:00Z"), Some(1_733_234_400_000));
        assert_eq!(ms_from_iso("yesterday"), None);
    }

    /// Found by AFL++ (`tests/fuzz/regressions/session_file`): a year before 1970 overflowed.
    #[test]
    fn dates_before_the_epoch_are_not_timestamps() {
        assert_eq!(ms_from_iso("1969-12-31T23:59:59.999Z"), None);
        assert_eq!(ms_from_iso("0000-01-01T00:00:00.000Z"), None);
        assert_eq!(ms_from_iso("1970-01-01T00:00:00.001Z"), Some(1));
        assert_eq!(ms_from_iso("9999-99-99T99:99:99.999Z").map(|ms| ms > 0), Some(true));
    }
}
