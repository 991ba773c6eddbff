//! The one op trait: a fused op of three inputs states its forward and backward passes once per
//! device, and the backward pass reuses what the forward pass kept ([`FusedOp`]). Two devices
//! run it, each with its candle plumbing (`cpu/op.rs`, `gpu/op.rs`: the same file stem, as every
//! twin): the host computing in `f32` or `f64` on slices ([`Host`]), and a GPU launcher
//! computing on device addresses (`gpu::launch::Launch`, on an NVIDIA GPU or emulated on the
//! host).
use std::marker::PhantomData;

use candle_core::{Result, Shape};

use super::math::Real;

/// Where an op's passes run: how they read their inputs and what buffers they return.
pub trait Device {
    /// An input (or the output, or its gradient) as the passes read it: a host slice, or a
    /// device address.
    type In<'a>: Copy;
    /// A buffer the passes return (the output, the gradients) or keep.
    type Floats: Send + Sync + 'static;
}

/// The host, computing in `T`: `f32`, or `f64` for the gradient checks.
pub struct Host<T>(PhantomData<T>);

impl<T> Default for Host<T> {
    fn default() -> Host<T> {
        Host(PhantomData)
    }
}

impl<T: Real> Device for Host<T> {
    type In<'a> = &'a [T];
    type Floats = Vec<T>;
}

/// A fused op of three inputs on device `D`, whose backward pass reuses what its forward pass
/// kept. A CPU op implements it for `Host<T>` for every `T: Real`; a GPU op for every launcher.
pub trait FusedOp<D: Device>: Send + Sync + 'static {
    const NAME: &'static str;
    /// `profile` slots of the forward and backward pass (the host's `f32` passes only; `None`:
    /// not timed).
    const SLOTS: Option<(usize, usize)> = None;
    /// What the forward pass keeps for the backward pass.
    type Saved: Send + Sync + 'static;
    fn out_shape(&self) -> Shape;
    /// The output and what the backward pass needs, from the three inputs.
    fn forward(&self, d: &D, x: [D::In<'_>; 3]) -> Result<(D::Floats, Self::Saved)>;
    /// The three inputs' gradients from the inputs, what the forward pass kept, its output and
    /// the output's gradient.
    fn backward(&self, d: &D, x: [D::In<'_>; 3], saved: Self::Saved, out: D::In<'_>, dout: D::In<'_>) -> Result<[D::Floats; 3]>;
}
