// recurrence.cu compiled for the host (build.rs), with the thread index its kernels read.
#include "emulate.h"

thread_local nmt_dim3 threadIdx, blockIdx, blockDim, gridDim;

extern "C" void nmt_emu_index(unsigned block, unsigned thread, unsigned block_dim, unsigned grid_dim) {
  blockIdx = {block, 0, 0};
  threadIdx = {thread, 0, 0};
  blockDim = {block_dim, 1, 1};
  gridDim = {grid_dim, 1, 1};
}

#include "recurrence.cu"
