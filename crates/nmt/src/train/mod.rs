//! Training by maximum likelihood: the loop, validation, checkpoints and resume.
pub mod average;
pub mod checkpoint;
pub mod collective;
pub mod log;
pub mod optim;
pub mod progress;
mod setup;
mod train_data;
pub mod trainer;
mod update;
pub mod validate;

pub use collective::{Collective, Single};
pub use progress::{Progress, StepInfo};
pub use trainer::{train, TrainOptions, TrainSummary};
