"""Small kernels whose compiled code backs the course's statements about what
Triton emits (tests/test_compiler_claims.py). Not run: only compiled."""

import triton
import triton.language as tl


@triton.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    # one M×K by K×N product of row-major tiles
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    c = tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c)


@triton.jit
def dot_trans_kernel(
    a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr
):
    # B is stored N×K (row-major) and used transposed
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rn[:, None] * K + rk[None, :])
    c = tl.dot(a, tl.trans(b))
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c)


@triton.jit
def acc_add_kernel(
    p_ptr,
    v_ptr,
    o_ptr,
    alpha,
    M: tl.constexpr,
    N: tl.constexpr,
    K: tl.constexpr,
    FOLDED: tl.constexpr,
):
    # acc * alpha + dot(p, v), written two ways (lesson 02's rescaling)
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    acc = tl.load(o_ptr + rm[:, None] * N + rn[None, :])
    p = tl.load(p_ptr + rm[:, None] * K + rk[None, :])
    v = tl.load(v_ptr + rk[:, None] * N + rn[None, :])
    if FOLDED:
        acc = tl.dot(p, v, acc * alpha)
    else:
        acc = acc * alpha + tl.dot(p, v)
    tl.store(o_ptr + rm[:, None] * N + rn[None, :], acc)


@triton.jit
def descriptor_copy_kernel(
    x_ptr, y_ptr, n_rows, n_cols, BM: tl.constexpr, BN: tl.constexpr
):
    # a tile through tensor descriptors: TMA on sm_90, plain loads before
    src = tl.make_tensor_descriptor(
        x_ptr, shape=[n_rows, n_cols], strides=[n_cols, 1], block_shape=[BM, BN]
    )
    dst = tl.make_tensor_descriptor(
        y_ptr, shape=[n_rows, n_cols], strides=[n_cols, 1], block_shape=[BM, BN]
    )
    pid = tl.program_id(0)
    dst.store([pid * BM, 0], src.load([pid * BM, 0]))


@triton.jit
def exp_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.exp(tl.load(x_ptr + offs)))


@triton.jit
def plain_loop_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    # a loop of loads and adds, no tl.dot: does num_stages change anything?
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * n_cols + offs, mask=offs < n_cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc))


@triton.jit
def column_tile_kernel(
    x_ptr, y_ptr, stride_row, stride_col, BM: tl.constexpr, BN: tl.constexpr
):
    # a BM×BN tile whose contiguous axis is axis 0 when stride_row == 1
    rm, rn = tl.arange(0, BM), tl.arange(0, BN)
    offs = rm[:, None] * stride_row + rn[None, :] * stride_col
    tl.store(y_ptr + offs, tl.load(x_ptr + offs))


@triton.jit
def fp8_dot_kernel(
    a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
    PROMOTE_EVERY: tl.constexpr,
):  # fmt: skip
    # PROMOTE_EVERY = 0: tl.dot's default; else the max_num_imprecise_acc asked for
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    if PROMOTE_EVERY == 0:
        c = tl.dot(a, b)
    else:
        c = tl.dot(a, b, max_num_imprecise_acc=PROMOTE_EVERY)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c)


@triton.jit
def ranged_loop_kernel(
    x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr, STAGES: tl.constexpr
):
    # the plain loop again, with tl.range asking for STAGES pipeline stages
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in tl.range(0, n_cols, BLOCK, num_stages=STAGES):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * n_cols + offs, mask=offs < n_cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc))


@triton.jit
def ieee_dot_kernel(
    a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr
):
    # fp32 inputs with input_precision="ieee": no tf32 rounding
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    c = tl.dot(a, b, input_precision="ieee")
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c)
