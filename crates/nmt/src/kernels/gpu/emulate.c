// The thread index the GPU kernels read, for the host (build.rs includes this file, then every
// `.cu` source of this folder, in one translation unit).
#include "emulate.h"

_Thread_local nmt_dim3 threadIdx, blockIdx, blockDim, gridDim;

void nmt_emu_index(unsigned block, unsigned thread, unsigned block_dim, unsigned grid_dim) {
  blockIdx.x = block;
  threadIdx.x = thread;
  blockDim.x = block_dim;
  gridDim.x = grid_dim;
}
