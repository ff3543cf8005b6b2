//! Shards: a run belongs to shard `i` of `n` when `blake3(run key) mod n == i`, so machines
//! split one experiment with no coordinator, and adding a value to an axis moves no other run.

use crate::cache::CacheKey;
use std::fmt;
use std::str::FromStr;

/// Shard `index` of `count` (0-based, as a GitHub Actions matrix index or a Kubernetes
/// indexed Job's `JOB_COMPLETION_INDEX` counts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Shard {
    pub index: u64,
    pub count: u64,
}

impl Shard {
    /// The shard a run key belongs to among `count`: the blake3 hash of the key's hex text,
    /// its first eight bytes read as a little-endian integer, modulo `count`.
    pub fn of(key: &CacheKey, count: u64) -> u64 {
        let hash = blake3::hash(key.0.as_bytes());
        let mut first = [0u8; 8];
        first.copy_from_slice(&hash.as_bytes()[..8]);
        u64::from_le_bytes(first) % count.max(1)
    }

    /// Whether the run with this key is this shard's to execute.
    pub fn contains(&self, key: &CacheKey) -> bool {
        Self::of(key, self.count) == self.index
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let usage = || format!("`{s}` is not a shard: write INDEX/COUNT with 0 <= INDEX < COUNT, e.g. `0/4` (shards are numbered from 0)");
        let (index, count) = s.trim().split_once('/').ok_or_else(usage)?;
        let index: u64 = index.trim().parse().map_err(|_| usage())?;
        let count: u64 = count.trim().parse().map_err(|_| usage())?;
        if count == 0 || index >= count {
            return Err(usage());
        }
        Ok(Self { index, count })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: u32) -> CacheKey {
        CacheKey(blake3::hash(format!("run {i}").as_bytes()).to_hex().to_string())
    }

    #[test]
    fn parses_index_over_count_and_refuses_the_rest() {
        assert_eq!("2/4".parse::<Shard>(), Ok(Shard { index: 2, count: 4 }));
        assert_eq!(" 0 / 1 ".parse::<Shard>(), Ok(Shard { index: 0, count: 1 }));
        for bad in ["4/4", "1/0", "a/2", "3", "-1/2", ""] {
            let error = bad.parse::<Shard>().expect_err(bad);
            assert!(error.contains("INDEX/COUNT"), "{error}");
        }
        assert_eq!(Shard { index: 3, count: 8 }.to_string(), "3/8");
    }

    #[test]
    fn every_key_belongs_to_exactly_one_shard_and_they_are_balanced() {
        let keys: Vec<CacheKey> = (0..4000).map(key).collect();
        let shards: Vec<Shard> = (0..4).map(|index| Shard { index, count: 4 }).collect();
        let mut sizes = [0usize; 4];
        for k in &keys {
            let owners: Vec<u64> = shards.iter().filter(|s| s.contains(k)).map(|s| s.index).collect();
            assert_eq!(owners.len(), 1, "key {k} belongs to {owners:?}");
            sizes[owners[0] as usize] += 1;
        }
        // A uniform split of 4000 keys: each shard within 10 % of 1000.
        assert!(sizes.iter().all(|&n| (900..=1100).contains(&n)), "{sizes:?}");
    }

    #[test]
    fn the_assignment_is_the_documented_hash() {
        let k = CacheKey("00".repeat(32));
        let hash = blake3::hash(k.0.as_bytes());
        let expected = u64::from_le_bytes(hash.as_bytes()[..8].try_into().expect("8 bytes")) % 7;
        assert_eq!(Shard::of(&k, 7), expected);
        // A run's shard depends on its key only: it does not move when other runs are added.
        assert_eq!(Shard::of(&key(5), 3), Shard::of(&key(5), 3));
    }
}
