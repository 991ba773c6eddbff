//! The recording launcher (`recording.rs`) against fresh eager steps, emulated: a training step
//! of a bidirectional GRU layer (both directions forward and backward, recurrent dropout,
//! padded sentences), its loss gradient `w` and Adam with warm-up and normalised updates, the
//! step's scalars on the device (`optim_step::DeviceUpdate`). Three replays of new batches of
//! one bucket must equal fresh steps bit for bit; a stale input, an upload inside the step or an
//! allocation after the recording must fail.
use super::emulated::Emulated;
use super::launch::Launch;
use super::recording::Recording;
use super::replay_check::{batches, eager, first_difference, replayed, After, Staging};

/// The updates recorded and replayed on the emulation's tape.
fn on_tape(staging: Staging) -> candle_core::Result<After> {
    replayed(&Emulated, &batches(), staging, &|rec: &Recording<'_, Emulated>, _| rec.replay())
}

/// Recorded once, replayed three times with new batches: each update's parameters and norm are
/// a fresh step's, bit for bit (warm-up, bias corrections and the clip factor change every
/// update, so a scalar baked into a launch would differ).
#[test]
fn replayed_steps_equal_fresh_steps_bit_for_bit() {
    let (want, got) = (eager(&Emulated, &batches()).unwrap(), on_tape(Staging::Each).unwrap());
    assert_eq!(got.len(), 4);
    assert_eq!(first_difference(&want, &got), None, "a replayed update differs from the fresh step's");
    // The updates moved the parameters and the norms are real: the comparison is not of constants.
    assert!(want.iter().all(|(_, n)| n.is_finite() && *n > 0.0));
    assert!(want[0].0 != want[3].0);
}

/// The comparison catches a replay that reads stale inputs (the first batch's).
#[test]
fn a_replay_of_stale_inputs_differs() {
    let (want, got) = (eager(&Emulated, &batches()).unwrap(), on_tape(Staging::Stale).unwrap());
    assert_eq!(first_difference(&want, &got), Some(1), "a stale batch went unnoticed");
}

/// Host data uploaded inside the step, or an allocation after it was recorded, is refused.
#[test]
fn uploads_and_late_allocations_are_refused() {
    let err = on_tape(Staging::Upload).unwrap_err();
    assert!(err.to_string().contains("upload inside a recorded step"), "{err}");
    let inner = Emulated;
    let rec = Recording::new(&inner);
    let x = rec.buffer(4).unwrap();
    rec.record(|r| r.fill(x.addr, 4, 1.0)).unwrap();
    assert_eq!(rec.tape_len(), 1);
    assert!(rec.zeros(4).is_err() && rec.buffer(4).is_err() && rec.upload(&[1.0]).is_err());
    rec.replay().unwrap();
    assert_eq!(inner.read(x.addr, 4).unwrap(), [1.0; 4]);
}
