"""sm120 kernels on an sm120 GPU (RTX 50, RTX PRO 6000: 12.0; DGX Spark GB10: 12.1).

Not yet run: no such GPU has been available. Until the rows join the extension, each row's proof
library (tests/sm120_proof_build.py) launches its kernels through the registry entry's own prepared
launch (`proof_run`: prepare + AddressKeyedLaunch::run, as the op would). Every output is poisoned
first and compared with the exact float64 reference under the earned FP32-accumulation tolerance,
for split_k = 1 and, on stream-K rows, a split of 3. Elsewhere every test skips with the reason.
"""

import pytest
import torch

from nvfp4_gemm import families, sm120_rules
from nvfp4_gemm.configs import OUT_DTYPES
from nvfp4_gemm.testing import check_against_reference, random_operands

from conftest import cuda_device_or_skip, poisoned
from sm120_proof_build import ProofLibrary, build

ROWS = sm120_rules.load_configs()

SHAPES = [
    # (m, n, k, l): M residues 1 and 129, N = 8 x odd, K = 32 x odd, a batch of 3, and a decode shape
    (1, 8, 32, 1),
    (129, 24, 96, 3),
    (1, 136, 160, 3),
    (129, 264, 288, 1),
    (16, 7168, 7168, 1),
    (300, 1032, 544, 2),
]


def sm120_device_or_skip():
    device = cuda_device_or_skip()
    major, minor = torch.cuda.get_device_capability(device)
    if major != families.by_name("sm120").sm_major:
        pytest.skip(
            f"{torch.cuda.get_device_name(device)} has compute capability {major}.{minor}; "
            "the sm120 kernels need 12.x (RTX 50, RTX PRO 6000, DGX Spark)"
        )
    return device


def run(lib, i, ops, out, split_k, device):
    m, n, l = out.shape
    k = 2 * ops.a.shape[-1]
    sm_count = torch.cuda.get_device_properties(device).multi_processor_count
    bytes_needed = lib.proof_workspace_bytes(i, m, n, k, l, device.index or 0, sm_count, split_k)
    workspace = torch.empty(max(bytes_needed, 1), dtype=torch.uint8, device=device)
    stream = torch.cuda.current_stream(device)
    error = lib.proof_run(
        i, ops.a.data_ptr(), ops.b.data_ptr(), ops.a_scale.data_ptr(), ops.b_scale.data_ptr(), out.data_ptr(),
        ops.alpha.data_ptr(), m, n, k, l, split_k, workspace.data_ptr(), workspace.numel(), device.index or 0,
        sm_count, stream.cuda_stream,
    )
    assert error is None, error.decode()
    torch.cuda.synchronize(device)


def check_exact(out, ops):
    k = 2 * ops.a.shape[-1]
    # one output's FP32 roundings: one per 16-element scale block, one per split partial (at most
    # one per 128-element K tile), alpha and the final rescale
    passed, summary = check_against_reference(out.cpu(), ops, roundings=k // 16 + k // 128 + 2)
    print(summary)
    assert passed, summary


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
@pytest.mark.parametrize("dtype", OUT_DTYPES)
@pytest.mark.parametrize("m,n,k,l", SHAPES)
def test_sm120_kernel_exact(row, dtype, m, n, k, l):
    device = sm120_device_or_skip()
    lib = ProofLibrary(build(row))
    i = lib.entries[dtype]
    for split_k in sorted({1, min(3, row.max_split_k(k))}):
        if split_k > 1 and not row.takes_split_k:
            continue
        for seed in (1, 2):  # two draws of data, each on fresh buffers
            host = random_operands(m, n, k, l, seed=seed * 7919 + m + n + k, with_alpha=True, padding_byte=0x38)
            ops = type(host)(*(t.to(device) if t is not None else None for t in
                               (host.a, host.b, host.a_scale, host.b_scale, host.alpha)))
            out = poisoned((l, m, n), getattr(torch, dtype), device)
            run(lib, i, ops, out, split_k, device)
            check_exact(out, host)
