//! Which [`Collective`] `nmt train` runs under: MPI's world when an MPI launcher started the
//! process (`mpirun -np N nmt train …`) and the binary has the `mpi` feature, else one process.
//! docs/DISTRIBUTED.md has the how-to; `nmt::train::collective` the arithmetic.
use anyhow::Result;
use nmt::train::{Collective, Single};

/// The number of ranks an MPI launcher announced (Open MPI's `mpirun`, or a PMI launcher such
/// as MPICH's Hydra or Slurm's `srun`), or `None` outside a launcher.
fn launched_ranks() -> Option<usize> {
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE"].iter().find_map(|k| std::env::var(k).ok()?.parse().ok())
}

/// The collective of this process.
pub fn collective() -> Result<Box<dyn Collective>> {
    match launched_ranks() {
        None => Ok(Box::new(Single)),
        Some(n) => world(n),
    }
}

#[cfg(feature = "mpi")]
fn world(_ranks: usize) -> Result<Box<dyn Collective>> {
    Ok(Box::new(mpi_world::Mpi::init()?))
}

#[cfg(not(feature = "mpi"))]
fn world(ranks: usize) -> Result<Box<dyn Collective>> {
    if ranks > 1 {
        anyhow::bail!(
            "started by an MPI launcher with {ranks} ranks, but this nmt was built without MPI: \
             cargo build --release -p nmt-cli --features mpi (docs/DISTRIBUTED.md)"
        );
    }
    Ok(Box::new(Single))
}

#[cfg(feature = "mpi")]
mod mpi_world {
    use anyhow::{anyhow, Result};
    use mpi::collective::SystemOperation;
    use mpi::environment::Universe;
    use mpi::topology::SimpleCommunicator;
    use mpi::traits::{Communicator, CommunicatorCollectives, Root};
    use mpi::Threading;
    use nmt::train::Collective;

    /// `MPI_COMM_WORLD`. MPI's default error handler aborts the job on any communication
    /// error, so the operations cannot fail in a way this code would see.
    pub struct Mpi {
        world: SimpleCommunicator,
        // Finalises MPI when dropped, after the communicator.
        _universe: Universe,
    }

    impl Mpi {
        pub fn init() -> Result<Self> {
            // Only the main thread calls MPI; the kernels' worker threads never do.
            let (universe, _) = mpi::initialize_with_threading(Threading::Funneled).ok_or_else(|| anyhow!("MPI was initialised twice"))?;
            Ok(Mpi { world: universe.world(), _universe: universe })
        }
    }

    impl Collective for Mpi {
        fn rank(&self) -> usize {
            self.world.rank() as usize
        }
        fn size(&self) -> usize {
            self.world.size() as usize
        }
        fn all_reduce_sum(&self, buf: &mut [f32]) -> nmt::Result<()> {
            // rsmpi has no in-place form; one copy of the gradients is cheap beside the step.
            let send = buf.to_vec();
            self.world.all_reduce_into(&send[..], buf, SystemOperation::sum());
            Ok(())
        }
        fn broadcast(&self, buf: &mut [f32]) -> nmt::Result<()> {
            self.world.process_at_rank(0).broadcast_into(buf);
            Ok(())
        }
        fn broadcast_bytes(&self, buf: &mut [u8]) -> nmt::Result<()> {
            self.world.process_at_rank(0).broadcast_into(buf);
            Ok(())
        }
        fn barrier(&self) -> nmt::Result<()> {
            self.world.barrier();
            Ok(())
        }
        fn abort(&self, code: i32) {
            self.world.abort(code)
        }
    }
}
