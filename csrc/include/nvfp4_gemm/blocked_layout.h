// The cuBLAS 128x4 blocked scale layout (docs/formats.md), on the host and the device: the quantize kernels
// write it, the sm100 weight-only launch reads it (and its host proof with it).
#pragma once

#include <cstddef>

#ifndef NVFP4_HOST_DEVICE
#ifdef __CUDACC__
#define NVFP4_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define NVFP4_HOST_DEVICE inline
#endif
#endif

namespace nvfp4_gemm {

// Offset of scale (row, col) in one matrix's blocked layout, cols_padded = round_up(K / block, 4): a row part
// and a column part, so that a thread walking down one column computes only the first per row.
NVFP4_HOST_DEVICE std::size_t blocked_row_offset(unsigned row, int cols_padded) {
  return static_cast<std::size_t>(row / 128) * (static_cast<unsigned>(cols_padded) / 4 * 512) + (row % 32) * 16 +
         (row % 128) / 32 * 4;
}
NVFP4_HOST_DEVICE unsigned blocked_col_offset(unsigned col) { return col / 4 * 512 + col % 4; }
NVFP4_HOST_DEVICE std::size_t blocked_offset(int row, int col, int cols_padded) {
  return blocked_row_offset(row, cols_padded) + blocked_col_offset(col);
}

}  // namespace nvfp4_gemm
