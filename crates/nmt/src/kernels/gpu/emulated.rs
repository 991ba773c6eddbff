//! The GPU kernels run on the host: every `.cu` source of this folder compiled by the host's C
//! compiler (build.rs), each kernel called once per thread index of the grid the GPU would
//! launch (in ascending order, or in the tests a seeded permutation: `in_permuted_order`), and
//! our GEMM (`kernels::gemm`) where the GPU calls cuBLAS (on the bf16 values widened to `f32`
//! for a bf16 product). Exact, since every kernel
//! is elementwise or one thread per row (no shared memory, no synchronisation between
//! threads). The tests run it against the CPU ops; production runs it in one place, the
//! composed search's pick of each row's best tokens on a CPU tensor (`row_best.rs`). Before a
//! kernel first runs, its argument struct's Rust layout is checked against the C compiler's.
use candle_core::Result;

use std::any::TypeId;
use std::cell::{Cell, RefCell};
use std::ffi::{c_char, CStr};
use std::sync::Mutex;

use rand::seq::SliceRandom;
use rand::SeedableRng;

use super::launch::{Addr, ArgLayout, ArgStruct, Gemm, Kernel, KernelArgs, Launch, Module, View, BLOCK};
use crate::kernels::fused_op::Device;
use crate::kernels::gemm::{matmul, Mat};

extern "C" {
    /// Sets the thread index the next kernel call reads (`emulate.c`).
    fn nmt_emu_index(block: u32, thread: u32, block_dim: u32, grid_dim: u32);
    /// The C compiler's layout of every argument struct: one row per field (build.rs).
    static nmt_layouts: CRow;
    static nmt_layouts_len: usize;
}

/// A row of `nmt_layouts`: struct `Nmt{name}`'s field `field` at `offset`, the struct's size.
#[repr(C)]
struct CRow {
    name: *const c_char,
    field: *const c_char,
    offset: usize,
    size: usize,
}

/// `l`'s C twin's fields, in order, as `(field, offset, struct size)`.
fn c_layout(l: &ArgLayout) -> Vec<(&'static str, usize, usize)> {
    // SAFETY: build.rs writes `nmt_layouts_len` rows of static strings into `nmt_layouts`.
    let rows = unsafe { std::slice::from_raw_parts(std::ptr::addr_of!(nmt_layouts), nmt_layouts_len) };
    let text = |p: *const c_char| unsafe { CStr::from_ptr(p) }.to_str().unwrap_or("");
    rows.iter().filter(|r| text(r.name) == l.name).map(|r| (text(r.field), r.offset, r.size)).collect()
}

/// Whether Rust lays out `l` as the C compiler lays out its twin: same fields in the same
/// order at the same offsets, same size. A mirror that drifted from its `.cu` source would
/// hand a kernel garbage on both devices.
pub fn check_layout(l: &ArgLayout) -> Result<()> {
    let c = c_layout(l);
    let rust: Vec<_> = l.fields.iter().map(|&(f, o)| (f, o, l.size)).collect();
    if c != rust {
        candle_core::bail!("argument struct {}: Rust's layout {rust:?} is not the C struct Nmt{}'s {c:?}", l.name, l.name);
    }
    Ok(())
}

/// Checks `A`'s layout the first time a kernel of it runs in this process.
fn check_once<A: ArgStruct>() -> Result<()> {
    static CHECKED: Mutex<Vec<TypeId>> = Mutex::new(Vec::new());
    let id = TypeId::of::<A>();
    if CHECKED.lock().map(|c| c.contains(&id)).unwrap_or(false) {
        return Ok(());
    }
    check_layout(&A::LAYOUT)?;
    if let Ok(mut c) = CHECKED.lock() {
        c.push(id);
    }
    Ok(())
}

/// The order in which [`Emulated`] runs a grid's threads on this thread of the host.
#[derive(Clone, Copy)]
enum ThreadOrder {
    Ascending,
    /// A fresh shuffle per launch, drawn from `seed` and the launch's number. Only the unit
    /// tests set it ([`in_permuted_order`]); production launches ascend.
    #[cfg_attr(not(test), allow(dead_code))]
    Permuted {
        seed: u64,
        launches: u64,
    },
}

thread_local! {
    static ORDER: Cell<ThreadOrder> = const { Cell::new(ThreadOrder::Ascending) };
    /// The modules launched while [`ThreadOrder::Permuted`] held, in first-launch order.
    static PERMUTED: RefCell<Vec<Module>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` with every emulated launch it makes on this thread running its grid's threads in a
/// seeded random order, not ascending; returns `f`'s value and the kernel modules that ran so.
///
/// Why: a GPU runs a launch's threads in no order, in parallel. A kernel in which one thread
/// reads what another thread of the same launch writes gives the ascending order's bits here
/// and other bits there (a race the ascending emulation cannot see). Every kernel here is
/// elementwise or one thread per row, so the order must not change a bit; each kernel module
/// has one test that says so (issue 74 item 6). The previous order comes back even if `f`
/// panics.
#[cfg(test)]
pub fn in_permuted_order<R>(seed: u64, f: impl FnOnce() -> R) -> (R, Vec<Module>) {
    struct Restore(ThreadOrder, Vec<Module>);
    impl Drop for Restore {
        fn drop(&mut self) {
            ORDER.with(|o| o.set(self.0));
            PERMUTED.with(|p| *p.borrow_mut() = std::mem::take(&mut self.1));
        }
    }
    let restore = Restore(ORDER.with(|o| o.replace(ThreadOrder::Permuted { seed, launches: 0 })), PERMUTED.take());
    let out = f();
    let launched = PERMUTED.take();
    drop(restore);
    (out, launched)
}

/// Runs `f` in ascending order, then in two permuted orders, and demands the same bits (the
/// outputs' `Debug` forms, which print an `f32`'s shortest round-trip digits and its sign, so
/// equal forms are equal bits, NaN payloads aside), with `module` among the modules launched.
#[cfg(test)]
pub fn same_bits_in_any_order<T: std::fmt::Debug>(module: Module, f: impl Fn() -> T) -> T {
    let want = f();
    for seed in [1, 2] {
        let (got, launched) = in_permuted_order(seed, &f);
        assert!(launched.contains(&module), "{module:?} did not run on this thread (launched: {launched:?})");
        assert!(format!("{got:?}") == format!("{want:?}"), "{module:?}: threads in a permuted order (seed {seed}) gave other bits");
    }
    want
}

/// The host as a [`Launch`].
pub struct Emulated;

/// A host buffer the kernels write through raw addresses, as a device buffer: owned, never
/// borrowed by Rust references while a kernel or product runs.
pub struct HostBuf<T> {
    ptr: *mut T,
    len: usize,
}

// A uniquely owned allocation, like a Vec.
unsafe impl<T: Send> Send for HostBuf<T> {}
unsafe impl<T: Sync> Sync for HostBuf<T> {}

impl<T: Copy> HostBuf<T> {
    /// A copy of `x`.
    pub fn from_slice(x: &[T]) -> Self {
        Self::from_vec(x.to_vec())
    }

    fn from_vec(v: Vec<T>) -> Self {
        let len = v.len();
        HostBuf { ptr: Box::into_raw(v.into_boxed_slice()).cast::<T>(), len }
    }

    /// A copy of the contents.
    pub fn to_vec(&self) -> Vec<T> {
        // SAFETY: `ptr` holds `len` initialised elements and no kernel runs during this call
        // (the emulated launches are synchronous).
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }.to_vec()
    }
}

impl<T> Drop for HostBuf<T> {
    fn drop(&mut self) {
        // SAFETY: `ptr` and `len` came from `Box::into_raw` of a boxed slice of `len` elements.
        drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(self.ptr, self.len)) });
    }
}

/// The `f32`s a view of `rows × cols` (as stored) with leading dimension `ld` spans.
fn extent(rows: usize, cols: usize, ld: usize) -> usize {
    if rows == 0 || cols == 0 {
        0
    } else {
        (rows - 1) * ld + cols
    }
}

/// `op(v)` of `rows × cols` as a matrix view over host memory.
///
/// # Safety
/// `v.addr` must point at `extent` readable `f32`s of a live buffer that nothing writes
/// while the view is used.
unsafe fn mat<'a>(v: View, rows: usize, cols: usize) -> Mat<'a, f32> {
    let (sr, sc) = if v.t { (cols, rows) } else { (rows, cols) };
    // SAFETY: the caller's contract.
    let data = unsafe { std::slice::from_raw_parts(v.addr.0 as *const f32, extent(sr, sc, v.ld)) };
    let m = Mat::strided(data, 0, sr, sc, v.ld);
    if v.t {
        m.t()
    } else {
        m
    }
}

/// A view's stored `(rows, cols)` for its use as `rows × cols`.
fn stored(v: View, rows: usize, cols: usize) -> (usize, usize) {
    if v.t {
        (cols, rows)
    } else {
        (rows, cols)
    }
}

/// The byte range a view of `rows × cols` (as used) spans.
fn span(v: View, rows: usize, cols: usize) -> std::ops::Range<u64> {
    let (sr, sc) = stored(v, rows, cols);
    v.addr.0..v.addr.0 + 4 * extent(sr, sc, v.ld) as u64
}

/// What cuBLAS refuses or leaves undefined, refused here too, so that an orchestration the
/// emulation accepts runs on the GPU: a leading dimension below the stored row's width (cuBLAS's
/// `lda >= max(1, rows)` in its column-major terms) and an output that overlaps an input.
fn cublas_rules(g: &Gemm) -> Result<()> {
    for (name, v, r, c) in [("A", g.a, g.m, g.k), ("B", g.b, g.k, g.n), ("C", g.c, g.m, g.n)] {
        let (_, sc) = stored(v, r, c);
        if v.ld < sc.max(1) {
            candle_core::bail!("gemm: {name}'s leading dimension {} is below its stored width {sc} (cuBLAS refuses it)", v.ld);
        }
    }
    let c = span(g.c, g.m, g.n);
    for (name, v, r, k) in [("A", g.a, g.m, g.k), ("B", g.b, g.k, g.n)] {
        let x = span(v, r, k);
        if k > 0 && x.start < c.end && c.start < x.end {
            candle_core::bail!("gemm: the output overlaps {name} (undefined in cuBLAS)");
        }
    }
    Ok(())
}

impl Device for Emulated {
    type In<'a> = Addr;
    type Floats = HostBuf<f32>;
}

impl Launch for Emulated {
    type Ints = HostBuf<i64>;

    fn zeros(&self, n: usize) -> Result<HostBuf<f32>> {
        Ok(HostBuf::from_vec(vec![0.0; n]))
    }

    fn scratch(&self, n: usize) -> Result<HostBuf<f32>> {
        Ok(HostBuf::from_vec(vec![f32::NAN; n]))
    }

    fn upload(&self, x: &[f32]) -> Result<HostBuf<f32>> {
        Ok(HostBuf::from_vec(x.to_vec()))
    }

    fn upload_ints(&self, x: &[i64]) -> Result<HostBuf<i64>> {
        Ok(HostBuf::from_vec(x.to_vec()))
    }

    fn addr(&self, b: &HostBuf<f32>) -> Addr {
        Addr(b.ptr as u64)
    }

    fn ints_addr(&self, b: &HostBuf<i64>) -> Addr {
        Addr(b.ptr as u64)
    }

    fn gemm(&self, g: Gemm) -> Result<()> {
        if g.m == 0 || g.n == 0 {
            return Ok(());
        }
        cublas_rules(&g)?;
        // SAFETY: the orchestration passes views inside buffers it owns or was given, and
        // `cublas_rules` refused an output that overlaps an input.
        unsafe {
            let (a, b) = (mat(g.a, g.m, g.k), mat(g.b, g.k, g.n));
            let c = std::slice::from_raw_parts_mut(g.c.addr.0 as *mut f32, extent(g.m, g.n, g.c.ld));
            matmul(c, 0, g.c.ld, a, b, g.accumulate, 1);
        }
        Ok(())
    }

    const POISONS_SCRATCH: bool = true;

    fn fill(&self, dst: Addr, n: usize, value: f32) -> Result<()> {
        // SAFETY: the caller names `n` values of a live buffer; launches are synchronous here.
        unsafe { std::slice::from_raw_parts_mut(dst.0 as *mut f32, n) }.fill(value);
        Ok(())
    }

    fn write(&self, dst: Addr, x: &[f32]) -> Result<()> {
        // SAFETY: as for `fill`, `x.len()` values.
        unsafe { std::slice::from_raw_parts_mut(dst.0 as *mut f32, x.len()) }.copy_from_slice(x);
        Ok(())
    }

    fn write_ints(&self, dst: Addr, x: &[i64]) -> Result<()> {
        // SAFETY: as for `fill`, `x.len()` integers.
        unsafe { std::slice::from_raw_parts_mut(dst.0 as *mut i64, x.len()) }.copy_from_slice(x);
        Ok(())
    }

    fn read(&self, src: Addr, n: usize) -> Result<Vec<f32>> {
        // SAFETY: as for `fill`.
        Ok(unsafe { std::slice::from_raw_parts(src.0 as *const f32, n) }.to_vec())
    }

    fn gemm_bf16(&self, g: Gemm) -> Result<()> {
        if g.m == 0 || g.n == 0 {
            return Ok(());
        }
        let c = span(g.c, g.m, g.n);
        let [a, b] = [(g.a, g.m, g.k), (g.b, g.k, g.n)].map(|(v, r, c)| (v, stored(v, r, c)));
        for (name, (v, (sr, sc))) in [("A", a), ("B", b)] {
            let x = v.addr.0..v.addr.0 + 2 * extent(sr, sc, v.ld) as u64;
            if x.start < c.end && c.start < x.end {
                candle_core::bail!("gemm_bf16: the output overlaps {name} (undefined in cuBLAS)");
            }
        }
        // Each operand widened to f32 with its own leading dimension, so that `gemm` checks
        // cuBLAS's rules on the same numbers; a bf16 is the upper half of an f32, so the
        // product multiplies exactly the values the GPU's `cublasGemmEx` reads.
        let widen = |(v, (sr, sc)): (View, (usize, usize))| {
            // SAFETY: the views lie inside live buffers of bf16 values (the caller's contract).
            let bits = unsafe { std::slice::from_raw_parts(v.addr.0 as *const u16, extent(sr, sc, v.ld)) };
            HostBuf::from_vec(bits.iter().map(|&h| f32::from_bits(u32::from(h) << 16)).collect())
        };
        let (wa, wb) = (widen(a), widen(b));
        self.gemm(Gemm { a: View { addr: self.addr(&wa), ..g.a }, b: View { addr: self.addr(&wb), ..g.b }, ..g })
    }

    fn launch<A: KernelArgs>(&self, k: &Kernel<A>, threads: usize, a: A) -> Result<()> {
        check_once::<A>()?;
        let grid = threads.div_ceil(BLOCK);
        let run = |i: usize| {
            // SAFETY: the kernel reads and writes the buffers its arguments name, which the
            // orchestration sized for this grid; the index is set for this thread.
            unsafe {
                nmt_emu_index((i / BLOCK) as u32, (i % BLOCK) as u32, BLOCK as u32, grid as u32);
                (k.host)(a);
            }
        };
        match ORDER.with(Cell::get) {
            ThreadOrder::Ascending => (0..grid * BLOCK).for_each(run),
            ThreadOrder::Permuted { seed, launches } => {
                ORDER.with(|o| o.set(ThreadOrder::Permuted { seed, launches: launches + 1 }));
                PERMUTED.with(|p| {
                    let mut p = p.borrow_mut();
                    if !p.contains(&k.module) {
                        p.push(k.module);
                    }
                });
                let mut order: Vec<usize> = (0..grid * BLOCK).collect();
                order.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ launches));
                order.into_iter().for_each(run);
            }
        }
        Ok(())
    }
}
