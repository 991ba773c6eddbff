//! What the training loop reports as it goes: the CLI draws a bar from it, the library only logs.

/// What the progress display gets after each update.
#[derive(Clone, Debug)]
pub struct StepInfo {
    pub step: u64,
    pub epoch: u64,
    /// Token-weighted mean loss since the last log line.
    pub loss: f64,
    pub tok_per_s: f64,
    pub elapsed_s: f64,
    /// Fraction of the run done, when a limit is set (steps, minutes or epochs).
    pub fraction: Option<f64>,
}

/// Receives progress; the CLI draws a bar from it. The library itself only logs.
pub trait Progress {
    fn on_step(&mut self, _info: &StepInfo) {}
    /// Each line of `train_log.jsonl` as it is written (`log.rs`): training and validation
    /// records alike.
    fn on_log(&mut self, _record: &serde_json::Value) {}
    fn on_message(&mut self, msg: &str) {
        tracing::info!("{msg}");
    }
}
