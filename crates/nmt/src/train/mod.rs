//! Training by maximum likelihood: the loop, validation, checkpoints and resume.
pub mod average;
pub mod checkpoint;
pub mod collective;
mod graph;
pub mod log;
mod milestone;
pub mod moment_scale;
pub mod optim;
pub mod options;
pub mod progress;
mod schedule;
mod setup;
mod train_data;
pub mod trainer;
mod update;
pub mod validate;

pub use collective::{Collective, Single};
pub use options::{StopReason, TrainOptions, TrainSummary};
pub use progress::{Progress, StepInfo};
pub use trainer::train;
