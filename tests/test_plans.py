"""The prepared-launch machinery of `_C.Kernel.run` on the host: the plan table (one prepared launch
per entry, sizes, split, device and stream) and the kernel-parameter cache (parameters built once
per distinct set of operand addresses), through `_C.HostPlanProbe`, which runs the same table and
cache over a stand-in kernel that touches no device. Its launch fails when it is handed parameters
built for other addresses than the call's. The sm100 family's own prepared launch is tested on a
GPU (tests/test_gpu.py, `prepare_only`)."""

import pytest

from nvfp4_gemm import _C

SHAPE = dict(m=128, n=256, k=512, l=1)
STREAM = 0x5000
WORKSPACE = 0x9000


def addresses(i):
    """Address set i: a, b, a_scale, b_scale, out, alpha, all distinct, 256 bytes apart per set."""
    base = 0x100000 + 0x10000 * i
    return dict(a=base, b=base + 0x1000, a_scale=base + 0x2000, b_scale=base + 0x3000, out=base + 0x4000,
                alpha=base + 0x5000)


def call(probe, i=0, split_k=1, stream=STREAM, workspace=WORKSPACE, capacity=1 << 20, launch=True, **changes):
    args = dict(addresses(i), **SHAPE, split_k=split_k, workspace=workspace, workspace_capacity=capacity,
                stream=stream, launch=launch)
    args.update(changes)
    probe.run(**args)


def counters(probe, split_k=1, stream=STREAM):
    return probe.counters(**SHAPE, split_k=split_k, stream=stream)


def test_same_addresses_build_parameters_once():
    probe = _C.HostPlanProbe()
    assert counters(probe) is None
    for _ in range(5):
        call(probe)
    assert counters(probe) == {"calls": 5, "params_builds": 1, "workspace_inits": 0, "launches": 5}
    assert probe.plan_count == 1


@pytest.mark.parametrize("operand", ["a", "b", "a_scale", "b_scale", "out", "alpha"])
def test_a_new_address_builds_new_parameters(operand):
    probe = _C.HostPlanProbe()
    call(probe)
    call(probe, **{operand: addresses(0)[operand] + 256})
    assert counters(probe)["params_builds"] == 2
    call(probe)  # the first set again: its parameters are still held
    call(probe, **{operand: addresses(0)[operand] + 256})
    assert counters(probe) == {"calls": 4, "params_builds": 2, "workspace_inits": 0, "launches": 4}


def test_address_sets_up_to_capacity_are_kept_and_beyond_it_rebuilt():
    capacity = _C.HostPlanProbe.params_capacity
    assert capacity >= 50  # a GPU MODE run cycles through 50 inputs
    probe = _C.HostPlanProbe()
    for _ in range(3):
        for i in range(capacity):
            call(probe, i)
    assert counters(probe)["params_builds"] == capacity
    probe = _C.HostPlanProbe()
    for _ in range(3):
        for i in range(capacity + 1):  # one set too many: the cache starts over, every call builds
            call(probe, i)
    assert counters(probe)["params_builds"] == 3 * (capacity + 1)


def test_streams_and_splits_get_separate_plans():
    probe = _C.HostPlanProbe()
    call(probe)
    call(probe, stream=STREAM + 1)
    call(probe, stream=STREAM + 1)
    call(probe, split_k=2)
    assert probe.plan_count == 3
    assert counters(probe)["calls"] == 1
    assert counters(probe, stream=STREAM + 1) == {"calls": 2, "params_builds": 1, "workspace_inits": 0, "launches": 2}
    assert counters(probe, split_k=2)["calls"] == 1
    call(probe, n=264)  # other sizes: another plan
    assert probe.plan_count == 4


def test_workspace_is_initialised_before_every_launch():
    """Stream-K's barriers must be zero at every launch: the clear is never cached, neither for
    repeated addresses nor without a launch, and a new workspace address means new parameters."""
    probe = _C.HostPlanProbe()
    for _ in range(3):
        call(probe, split_k=2)
    call(probe, split_k=2, launch=False)
    assert counters(probe, split_k=2) == {"calls": 4, "params_builds": 1, "workspace_inits": 4, "launches": 3}
    call(probe, split_k=2, workspace=WORKSPACE + 4096)  # the stream's workspace grew: re-allocated
    assert counters(probe, split_k=2)["params_builds"] == 2
    call(probe, workspace=WORKSPACE + 4096)  # a plan without a workspace ignores its address
    call(probe, workspace=0, capacity=0)
    assert counters(probe)["params_builds"] == 1


def test_a_small_workspace_is_refused_before_anything_is_built():
    probe = _C.HostPlanProbe()
    with pytest.raises(RuntimeError, match="workspace smaller than the kernel needs"):
        call(probe, split_k=2, capacity=16)
    with pytest.raises(RuntimeError, match="workspace smaller than the kernel needs"):
        call(probe, split_k=2, workspace=0)
    assert counters(probe, split_k=2) == {"calls": 2, "params_builds": 0, "workspace_inits": 0, "launches": 0}


def test_prepare_only_stops_before_the_launch():
    probe = _C.HostPlanProbe()
    call(probe, launch=False)
    call(probe, launch=False)
    call(probe, 1, launch=False)
    assert counters(probe) == {"calls": 3, "params_builds": 2, "workspace_inits": 0, "launches": 0}


def test_sm100_kernels_prepare_and_other_families_say_they_do_not():
    """The real entries: sm100 ones go through a prepared launch, sm90 ones have none to measure."""
    from nvfp4_gemm.configs import load_table

    table = load_table()
    sm90 = [name for name, dtype, major in _C.kernels() if major == 9]
    if not sm90:
        pytest.skip("this build carries no sm90 kernels")
    kernel = _C.lookup(sm90[0], "float16")
    assert table.by_name(sm90[0]).family == "sm90"
    with pytest.raises(TypeError, match="launches without a prepared plan"):
        kernel.prepare_only(0, 0, 0, 0, 0, 0, 128, 256, 512, 1, 1, 0, 0, 0, 0, 0, 0)
