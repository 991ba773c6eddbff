//! Data-parallel training with its ranks as threads of one process (`InProcess`, a
//! [`Collective`] over shared memory), so that the trainer's data parallelism is checked where
//! MPI is not installed: here on the CPU (`tests/ranks.rs`) and on one GPU that both ranks
//! share (`tests/cuda.rs`; a GPU machine has no Open MPI). The trainer, the gradients' host
//! staging and the all-reduce's use are those of `mpirun -np 2 nmt train`
//! (`crates/nmt-cli/tests/mpi.rs` checks that on the CPU); only the transport differs.
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Condvar, Mutex};

use candle_core::Device;
use nmt::config::Config;
use nmt::error::{Error, Result};
use nmt::train::{train, Collective, Progress, TrainOptions};

use super::weights::{max_weight_diff, worst_tensors};

struct Quiet;
impl Progress for Quiet {}

/// What the ranks share: a barrier's count and generation, whether a rank gave up, and the
/// buffers of the all-reduce and the broadcasts.
#[derive(Default)]
struct State {
    arrived: usize,
    generation: u64,
    aborted: bool,
    floats: Vec<f32>,
    bytes: Vec<u8>,
}

/// Rank `rank` of `size` threads.
pub struct InProcess {
    rank: usize,
    size: usize,
    shared: Arc<(Mutex<State>, Condvar)>,
}

impl InProcess {
    /// The `size` ranks of one group.
    pub fn group(size: usize) -> Vec<InProcess> {
        let shared = Arc::new((Mutex::new(State::default()), Condvar::new()));
        (0..size).map(|rank| InProcess { rank, size, shared: shared.clone() }).collect()
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, State>> {
        self.shared.0.lock().map_err(|_| Error::Collective("a rank panicked".into()))
    }

    /// Waits for every rank; an error once a rank has aborted.
    fn wait(&self) -> Result<()> {
        let mut s = self.lock()?;
        let generation = s.generation;
        s.arrived += 1;
        if s.arrived == self.size {
            s.arrived = 0;
            s.generation += 1;
            self.shared.1.notify_all();
        }
        while s.generation == generation && !s.aborted {
            s = self.shared.1.wait(s).map_err(|_| Error::Collective("a rank panicked".into()))?;
        }
        match s.aborted {
            true => Err(Error::Collective("another rank aborted".into())),
            false => Ok(()),
        }
    }

    /// Rank 0's `buf` to every rank (`get`/`put` pick the shared buffer).
    fn share<T: Copy>(&self, buf: &mut [T], get: fn(&mut State) -> &mut Vec<T>) -> Result<()> {
        self.wait()?; // every rank is done with the buffer's last use
        if self.rank == 0 {
            *get(&mut *self.lock()?) = buf.to_vec();
        }
        self.wait()?;
        buf.copy_from_slice(get(&mut *self.lock()?));
        Ok(())
    }
}

impl Collective for InProcess {
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.size
    }
    fn all_reduce_sum(&self, buf: &mut [f32]) -> Result<()> {
        self.wait()?;
        if self.rank == 0 {
            let mut s = self.lock()?;
            s.floats.clear();
            s.floats.resize(buf.len(), 0.0);
        }
        self.wait()?;
        for (acc, x) in self.lock()?.floats.iter_mut().zip(buf.iter()) {
            *acc += x;
        }
        self.wait()?;
        buf.copy_from_slice(&self.lock()?.floats);
        Ok(())
    }
    fn broadcast(&self, buf: &mut [f32]) -> Result<()> {
        self.share(buf, |s| &mut s.floats)
    }
    fn broadcast_bytes(&self, buf: &mut [u8]) -> Result<()> {
        self.share(buf, |s| &mut s.bytes)
    }
    fn barrier(&self) -> Result<()> {
        self.wait()
    }
    fn abort(&self, _code: i32) {
        if let Ok(mut s) = self.lock() {
            s.aborted = true;
            self.shared.1.notify_all();
        }
    }
}

/// `data_parallel.toml` (`crates/nmt-cli/tests/mpi.rs`'s recipe), `steps` updates, with
/// `sets` (`key=value`, as `--set`).
pub fn config(steps: u64, sets: &[&str]) -> Config {
    let data = super::repo_root().join("data/bible-en-es");
    let data = data.to_str().expect("a UTF-8 path to data/");
    let text = include_str!("data_parallel.toml").replace("DATA", data).replace("STEPS", &steps.to_string());
    Config::from_toml_str(&text, &sets.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap()
}

/// Trains `cfg` into `dir` on `ranks` threads, each with the device `device()` gives it.
pub fn train_ranks(cfg: &Config, dir: &Path, ranks: usize, device: impl Fn() -> Device + Sync) {
    std::thread::scope(|scope| {
        let handles: Vec<_> = InProcess::group(ranks)
            .into_iter()
            .map(|rank| {
                let device = &device;
                scope.spawn(move || {
                    let (r, aborter) = (rank.rank, InProcess { shared: rank.shared.clone(), ..rank });
                    let mut opts = TrainOptions::new(dir.to_path_buf(), device(), Arc::new(AtomicBool::new(false)));
                    opts.collective = Box::new(rank);
                    let out = train(cfg, &opts, &mut Quiet);
                    if out.is_err() {
                        aborter.abort(1); // the other ranks would wait for ever
                    }
                    out.map(|_| ()).map_err(|e| format!("rank {r}: {e}"))
                })
            })
            .collect();
        for h in handles {
            h.join().expect("a rank panicked").unwrap();
        }
    });
}

/// 20 updates on 2 ranks sharing `device` against 1 rank, and the weights' largest
/// difference; that 20 updates moved the weights at all is checked against 1 update. `sets`
/// change the recipe (`key=value`, as `--set`).
pub fn two_ranks_against_one(device: impl Fn() -> Device + Sync, sets: &[&str]) -> f32 {
    let d = tempfile::tempdir().unwrap();
    let (one, two, fresh) = (d.path().join("one"), d.path().join("two"), d.path().join("fresh"));
    let config = |steps: u64| config(steps, sets);
    train_ranks(&config(20), &one, 1, &device);
    train_ranks(&config(20), &two, 2, &device);
    train_ranks(&config(1), &fresh, 1, &device);
    let ckpt = |p: &Path| p.join("checkpoint.safetensors");
    let moved = max_weight_diff(&ckpt(&one), &ckpt(&fresh));
    assert!(moved > 1e-3, "20 updates moved the weights by {moved} only");
    // The device against itself: one rank's 20 updates again. A device whose runs differ
    // (atomics, an algorithm chosen per run) sets the floor any comparison of ranks can reach.
    let again = d.path().join("again");
    train_ranks(&config(20), &again, 1, &device);
    eprintln!("1 rank against itself, 20 updates: max |diff| of the weights {:e}", max_weight_diff(&ckpt(&one), &ckpt(&again)));
    eprintln!("2 ranks against 1, the worst tensors: {}", worst_tensors(&ckpt(&one), &ckpt(&two), 4));
    max_weight_diff(&ckpt(&one), &ckpt(&two))
}
