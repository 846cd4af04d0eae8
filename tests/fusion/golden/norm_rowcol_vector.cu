
// v0: float16 = input0
// v1: float32 = input1
// v2: float32 = sub(v0, v1) as (float32,float32)
// v3: float32 = input2
// v4: float32 = div(v2, v3) as (float32,float32)
// v5: float32 = input3
// v6: float32 = mul(v4, v5) as (float32,float32)
// v7: float32 = input4
// v8: float32 = add(v6, v7) as (float32,float32)
// v9: float16 = cast v8
// return v9
// plan: ('vector', 8, 'int', 2, ('c', 'col', 'col', 'row', 'row', 'c'))
extern "C" __global__ void gt_fused_bf16090cbe92ef78(
    const gt_half* __restrict__ in0,
    const float* __restrict__ in1,
    const float* __restrict__ in2,
    const float* __restrict__ in3,
    const float* __restrict__ in4,
    gt_half* __restrict__ out0,
    int n,
    int inner,
    int cs1,
    int cs2) {
  const int tid = (int)blockIdx.x * blockDim.x + threadIdx.x;
  const int stride = (int)blockDim.x * gridDim.x;
  const int nvec = n / 8;
  for (int v = tid; v < nvec; v += stride) {
    const int base = v * 8;
    const int col = base % inner, row = base / inner;
    gt_half a0[8];
    gt_load<gt_half, 8>(in0 + base, a0);
    const float a1 = in1[row * cs1];
    const float a2 = in2[row * cs2];
    float a3[8];
    gt_load<float, 8>(in3 + col, a3);
    float a4[8];
    gt_load<float, 8>(in4 + col, a4);
    gt_half r0[8];
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      const float t0 = gt_to_float(a0[k]);
      const float t1 = a1;
      const float t2 = (t0 - t1);
      const float t3 = a2;
      const float t4 = (t2 / t3);
      const float t5 = a3[k];
      const float t6 = (t4 * t5);
      const float t7 = a4[k];
      const float t8 = (t6 + t7);
      const float t9 = gt_round_half(t8);
      r0[k] = gt_from_float<gt_half>(t9);
    }
    gt_store<gt_half, 8>(out0 + base, r0);
  }
  for (int i = nvec * 8 + tid; i < n; i += stride) {
    const int col = i % inner, row = i / inner;
    const float t0 = gt_to_float(in0[i]);
    const float t1 = in1[row * cs1];
    const float t2 = (t0 - t1);
    const float t3 = in2[row * cs2];
    const float t4 = (t2 / t3);
    const float t5 = in3[col];
    const float t6 = (t4 * t5);
    const float t7 = in4[col];
    const float t8 = (t6 + t7);
    const float t9 = gt_round_half(t8);
    out0[i] = gt_from_float<gt_half>(t9);
  }
}
