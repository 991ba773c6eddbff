//! Training by maximum likelihood: the loop, validation, checkpoints and resume.
pub mod average;
pub mod checkpoint;
pub mod log;
pub mod optim;
pub mod trainer;
pub mod validate;

pub use trainer::{train, Progress, StepInfo, TrainOptions, TrainSummary};
