//! The fuzz targets' checks (`eboard_bridge::sim::fuzzing`) on every `cargo test`,
//! without libFuzzer: each seed of `fuzz/seeds/<target>/` as it is, then a few
//! hundred mutations of it (bytes flipped, cut, repeated, spliced with another
//! seed) from a fixed seed, so a failure reproduces. The real fuzzing runs off
//! CI with `cargo fuzz` (docs/dgt-codec.md, "Fuzzing").

use std::path::{Path, PathBuf};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const MUTATIONS_PER_SEED: usize = 300;

fn seeds(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/seeds")
        .join(target);
    let mut out: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect();
    out.sort();
    assert!(out.len() >= 5, "{}: too few seeds", dir.display());
    out
}

/// One mutation of `input`, in the spirit of libFuzzer's: a byte changed,
/// a range removed or repeated, random bytes put in, or a splice.
fn mutate(rng: &mut SmallRng, input: &[u8], other: &[u8]) -> Vec<u8> {
    let mut v = input.to_vec();
    let at = |rng: &mut SmallRng, len: usize| {
        if len == 0 {
            0
        } else {
            rng.random_range(0..len)
        }
    };
    for _ in 0..rng.random_range(1..4) {
        match rng.random_range(0..6) {
            0 if !v.is_empty() => {
                let i = at(rng, v.len());
                v[i] ^= 1 << rng.random_range(0..8);
            }
            1 if !v.is_empty() => {
                let i = at(rng, v.len());
                v[i] = [b'{', b'}', b'"', b'\n', b'0', b'9', b'f', 0xff, 0x80, b':']
                    [rng.random_range(0..10)];
            }
            2 if v.len() > 1 => {
                let a = at(rng, v.len());
                let b = (a + rng.random_range(1..64)).min(v.len());
                v.drain(a..b);
            }
            3 if !v.is_empty() => {
                let a = at(rng, v.len());
                let b = (a + rng.random_range(1..64)).min(v.len());
                let piece = v[a..b].to_vec();
                let i = at(rng, v.len());
                v.splice(i..i, piece);
            }
            4 => {
                let i = at(rng, v.len() + 1);
                let n = rng.random_range(1..16);
                let bytes: Vec<u8> = (0..n).map(|_| rng.random()).collect();
                v.splice(i..i, bytes);
            }
            _ if !other.is_empty() => {
                let i = at(rng, v.len() + 1);
                let a = at(rng, other.len());
                let b = (a + rng.random_range(1..128)).min(other.len());
                v.splice(i..i, other[a..b].iter().copied());
            }
            _ => {}
        }
    }
    v
}

fn smoke(target: &str, check: fn(&[u8])) {
    let seeds = seeds(target);
    let mut rng = SmallRng::seed_from_u64(16);
    for (i, (path, bytes)) in seeds.iter().enumerate() {
        check(bytes);
        let other = &seeds[(i + 1) % seeds.len()].1;
        for n in 0..MUTATIONS_PER_SEED {
            let input = mutate(&mut rng, bytes, other);
            let result = std::panic::catch_unwind(|| check(&input));
            if result.is_err() {
                let keep = std::env::temp_dir().join(format!("{target}-smoke-failure"));
                std::fs::write(&keep, &input).unwrap();
                panic!(
                    "{target}: mutation {n} of {} fails; the input is in {} (run the fuzz target \
                     on it to reproduce)",
                    path.display(),
                    keep.display()
                );
            }
        }
    }
}

#[test]
fn the_capture_reader_survives_its_seeds_and_their_mutations() {
    smoke(
        "capture_reader",
        eboard_bridge::sim::fuzzing::capture_reader,
    );
}

#[test]
fn the_operator_api_survives_its_seeds_and_their_mutations() {
    smoke("operator_api", eboard_bridge::sim::fuzzing::operator_api);
}
