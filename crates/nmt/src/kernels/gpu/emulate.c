// The GPU kernels compiled for the host (build.rs), with the thread index they read.
#include "emulate.h"

_Thread_local nmt_dim3 threadIdx, blockIdx, blockDim, gridDim;

void nmt_emu_index(unsigned block, unsigned thread, unsigned block_dim, unsigned grid_dim) {
  blockIdx.x = block;
  threadIdx.x = thread;
  blockDim.x = block_dim;
  gridDim.x = grid_dim;
}

#include "recurrence.cu"
#include "attention.cu"
#include "search.cu"
#include "update.cu"
#include "feedback.cu"
