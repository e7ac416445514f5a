//! The prepared sets of an [`super::Executable`], by input-shape key, and which one a set of new
//! shapes is rebuilt from.
//!
//! A set of shapes seen before is taken from the pool. A set of new shapes is rebuilt from an
//! idle set of other shapes where one is going spare (`prepare.rs` keeps each step's buffers and
//! dispatches where its shapes did not change), else prepared from nothing. A set goes spare when
//! it served shapes seen only once while another such set exists — a decoder whose cache grows
//! every token never repeats a key, so its newest two sets stay and the older one is rebuilt — or
//! when the pool is full, the least recently used first. Shapes that recur (seen twice or more)
//! keep their sets until the pool is full.

use std::collections::HashMap;

/// Pooled sets kept per shape key; more concurrent runs than this allocate and then drop.
pub(super) const POOL_DEPTH: usize = 4;

/// Most input shapes whose sets are kept.
pub(super) const POOL_SHAPES: usize = 16;

/// Keys whose use counts are remembered (the counts restart when this is exceeded).
const COUNTED_KEYS: usize = 1024;

pub(super) struct SetPool<T> {
    entries: HashMap<Vec<u64>, Entry<T>>,
    /// Runs per key, kept after a key's sets are gone, so a key that returns counts as recurring.
    uses: HashMap<Vec<u64>, u64>,
    tick: u64,
}

struct Entry<T> {
    sets: Vec<T>,
    /// `tick` of the entry's last take or put.
    last: u64,
}

impl<T> Default for SetPool<T> {
    fn default() -> Self {
        SetPool { entries: HashMap::new(), uses: HashMap::new(), tick: 0 }
    }
}

impl<T> SetPool<T> {
    /// Counts a run of `key` and takes an idle set of it, if one is pooled.
    pub fn take(&mut self, key: &[u64]) -> Option<T> {
        if self.uses.len() >= COUNTED_KEYS && !self.uses.contains_key(key) {
            self.uses.clear();
        }
        *self.uses.entry(key.to_vec()).or_insert(0) += 1;
        self.tick += 1;
        let entry = self.entries.get_mut(key)?;
        entry.last = self.tick;
        entry.sets.pop()
    }

    /// After [`SetPool::take`] found no set of `key`: an idle set of other shapes that is going
    /// spare, to rebuild (see the module's note), with its key (to [`SetPool::put`] it back if the
    /// rebuild fails), or `None` (prepare from nothing).
    pub fn template(&mut self, key: &[u64]) -> Option<(Vec<u64>, T)> {
        let idle = || self.entries.iter().filter(|(k, e)| k.as_slice() != key && !e.sets.is_empty());
        let once = |k: &Vec<u64>| self.uses.get(k).copied().unwrap_or(0) <= 1;
        let lru = |it: &mut dyn Iterator<Item = (&Vec<u64>, &Entry<T>)>| {
            it.min_by_key(|(_, e)| e.last).map(|(k, _)| k.clone())
        };
        let spare = if idle().filter(|(k, _)| once(k)).count() >= 2 {
            lru(&mut idle().filter(|(k, _)| once(k)))
        } else if self.entries.len() >= POOL_SHAPES {
            lru(&mut idle())
        } else {
            None
        }?;
        let entry = self.entries.get_mut(&spare)?;
        let set = entry.sets.pop();
        if entry.sets.is_empty() {
            self.entries.remove(&spare);
        }
        set.map(|s| (spare, s))
    }

    /// Returns a set to the pool after a run (or after preparing it ahead of the first run).
    pub fn put(&mut self, key: Vec<u64>, set: T) {
        self.tick += 1;
        let tick = self.tick;
        if !self.entries.contains_key(&key) && self.entries.len() >= POOL_SHAPES {
            if let Some(old) = self.entries.iter().min_by_key(|(_, e)| e.last).map(|(k, _)| k.clone()) {
                self.entries.remove(&old);
            }
        }
        let entry = self.entries.entry(key).or_insert_with(|| Entry { sets: Vec::new(), last: tick });
        entry.last = tick;
        if entry.sets.len() < POOL_DEPTH {
            entry.sets.push(set);
        }
    }

    /// A pooled set of `key`, to inspect.
    pub fn peek(&self, key: &[u64]) -> Option<&T> {
        self.entries.get(key).and_then(|e| e.sets.first())
    }

    /// Keys with pooled sets.
    #[cfg(test)]
    fn keys(&self) -> Vec<Vec<u64>> {
        let mut k: Vec<_> = self.entries.keys().cloned().collect();
        k.sort();
        k
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One run of `key`: a pooled set, else a rebuilt one (its old key), else a new one.
    fn run(pool: &mut SetPool<u64>, key: u64) -> Option<u64> {
        let (hit, from) = match pool.take(&[key]) {
            Some(_) => (true, None),
            None => (false, pool.template(&[key]).map(|(_, s)| s)),
        };
        pool.put(vec![key], key);
        if hit {
            Some(key)
        } else {
            from
        }
    }

    #[test]
    fn a_growing_key_rebuilds_the_older_of_its_last_two_sets() {
        let mut pool = SetPool::default();
        assert_eq!(run(&mut pool, 100), None, "the prompt: nothing to rebuild");
        assert_eq!(run(&mut pool, 1), None, "one spare set is not enough");
        for t in 2..40 {
            let from = run(&mut pool, t);
            let want = if t == 2 { 100 } else { t - 2 };
            assert_eq!(from, Some(want), "token {t}");
            assert_eq!(pool.keys().len(), 2, "token {t}: the pool stays at two sets");
        }
    }

    #[test]
    fn recurring_keys_keep_their_sets() {
        let mut pool = SetPool::default();
        for _ in 0..3 {
            for k in [1, 2, 3] {
                run(&mut pool, k);
            }
        }
        // After the first rounds every key has recurred: each run now finds its own set.
        for _ in 0..5 {
            for k in [1, 2, 3] {
                assert_eq!(run(&mut pool, k), Some(k));
            }
        }
        // A stream of new keys beside them rebuilds only the new keys' sets.
        for k in 10..30 {
            assert!(run(&mut pool, k).is_none_or(|from| from >= 10), "key {k}");
            for r in [1, 2, 3] {
                assert_eq!(run(&mut pool, r), Some(r), "key {k}: recurring {r}");
            }
        }
    }

    #[test]
    fn a_full_pool_rebuilds_its_least_recently_used_set() {
        let mut pool = SetPool::default();
        for k in 0..POOL_SHAPES as u64 {
            pool.put(vec![k], k);
            pool.take(&[k]);
            pool.take(&[k]);
            pool.put(vec![k], k);
        }
        // Every key has recurred; key 0 is the least recently used.
        assert_eq!(run(&mut pool, 99), Some(0));
        assert_eq!(pool.keys().len(), POOL_SHAPES);
    }
}
